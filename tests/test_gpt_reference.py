"""The small GPT's float64 reference (frameval/workloads/gpt/reference.py),
its data (problems.py) and its counts (spec.py) against independent
computations: central finite differences for every weight's gradient, a
hand count of the parameters and FLOPs and PyTorch's flop counter, math.erf,
the AdamW update written out for one number. numpy only, but the counter's
test, which runs the torch environment's python."""
import json
import math
import subprocess

import numpy as np
import pytest

from conftest import REPO
from frameval.workloads.gpt import problems as P
from frameval.workloads.gpt import reference as R
from frameval.workloads.gpt import spec as S

FAST = pytest.mark.fast
TINY = S.Config(blocks=2, heads=2, width=8, mlp=12, context=6)


def _tiny_case(seed=0):
    """Tiny weights, moved off their initial values so that every path (LayerNorm
    scales, biases, attention) carries gradient, and tokens that repeat."""
    rng = np.random.RandomState(seed)
    w = {k: v + 0.3 * rng.standard_normal(v.shape) for k, v in R.init_weights(seed, TINY).items()}
    return w, rng.randint(0, TINY.vocab, (3, 5)), rng.randint(0, TINY.vocab, (3, 5))


@FAST
def test_backward_equals_central_differences_for_every_weight():
    w, x, y = _tiny_case()
    _, grads = R.loss_and_grads(w, x, y, TINY)
    assert set(grads) == set(w)
    h, pick = 1e-6, np.random.RandomState(1)
    for name, value in w.items():
        numeric = np.zeros_like(value)
        every = list(np.ndindex(value.shape))
        at = [every[j] for j in pick.choice(len(every), min(len(every), 24), replace=False)]
        for i in at:  # 24 elements of each weight (all of a small one): ~1,300 loss evaluations in all
            old = value[i]
            value[i] = old + h
            up = R.loss_and_grads(w, x, y, TINY)[0]
            value[i] = old - h
            down = R.loss_and_grads(w, x, y, TINY)[0]
            value[i] = old
            numeric[i] = (up - down) / (2 * h)
        rows = tuple(np.array(at).T)
        err = np.abs(numeric[rows] - grads[name][rows]).max() / np.abs(numeric[rows]).max()
        assert err < 1e-6, (name, err)


@FAST
def test_the_token_embedding_gathers_the_output_and_the_lookup():
    """Tied: wte's gradient is the output layer's plus the input lookup's; the
    positional rows past the input's length get none."""
    w, x, y = _tiny_case(1)
    logits, cache = R.forward(w, x, TINY)
    _, dlogits = R.cross_entropy(logits, y)
    grads = R.backward(w, cache, dlogits, TINY)
    out_only = dlogits.reshape(-1, TINY.vocab).T @ cache[2].reshape(-1, TINY.width)
    lookup = grads["wte"] - out_only
    assert np.abs(lookup[np.setdiff1d(np.arange(TINY.vocab), x)]).max() == 0  # tokens never looked up
    assert np.abs(lookup[np.unique(x)]).min(axis=1).max() > 0
    assert np.all(grads["wpe"][x.shape[1]:] == 0)


@FAST
def test_attention_is_causal():
    w, x, _ = _tiny_case(2)
    later = x.copy()
    later[:, 3:] = (later[:, 3:] + 1) % TINY.vocab
    a, b = R.forward(w, x, TINY)[0], R.forward(w, later, TINY)[0]
    assert np.array_equal(a[:, :3], b[:, :3]) and not np.allclose(a[:, 3:], b[:, 3:])


@FAST
def test_erf_and_gelu_are_exact():
    x = np.concatenate([np.linspace(-8, 8, 4001), [0.0, 1e-12, -1e-300, 30.0, -30.0]])
    assert np.array_equal(R.erf(x), np.array([math.erf(v) for v in x]))
    assert R.erf(x[:4000].reshape(5, -1)).shape == (5, 800)
    # Phi(1) = 0.841344746068543 (tables); the tanh approximation gives 0.841191990...
    assert abs(R.gelu(np.array([1.0]))[0] - 0.8413447460685429) < 1e-15
    # GELU's derivative against central differences
    h = 1e-6
    num = (R.gelu(x[:4001] + h) - R.gelu(x[:4001] - h)) / (2 * h)
    assert np.abs(R.gelu_backward(np.ones(4001), x[:4001]) - num).max() < 1e-8


@FAST
def test_parameter_count_and_initial_weights():
    c, m, v, t, n = 128, 512, 13, 64, 2
    block = 2 * c + 3 * c * c + 3 * c + c * c + c + 2 * c + c * m + m + m * c + c
    assert S.param_count() == v * c + t * c + n * block + 2 * c == 406_656
    w = R.init_weights(0)
    assert sum(a.size for a in w.values()) == S.param_count()
    assert np.array_equal(R.init_weights(0)["h1.mlp.fc.weight"], w["h1.mlp.fc.weight"])
    assert not np.array_equal(R.init_weights(1)["wte"], w["wte"])
    assert abs(w["h0.mlp.fc.weight"].std() - 0.02) < 0.0005
    assert abs(w["h0.mlp.proj.weight"].std() - 0.01) < 0.0003  # 0.02 / sqrt(2 x 2 blocks)
    assert abs(w["h1.attn.proj.weight"].std() - 0.01) < 0.001
    assert np.all(w["lnf.weight"] == 1) and np.all(w["h0.attn.qkv.bias"] == 0)


@FAST
def test_adamw_decays_matrices_only_and_clips_by_global_norm():
    w = R.init_weights(0, TINY)
    zero = {k: np.zeros_like(a) for k, a in w.items()}
    after = R.adamw_step(w, zero, {}, lr=1e-3, weight_decay=0.1)
    shrunk = {k for k in w if not np.array_equal(after[k], w[k])}
    assert shrunk == {"wpe"} | {k for k in w if k.endswith(("qkv.weight", "proj.weight", "fc.weight"))}
    assert np.allclose(after["wpe"], w["wpe"] * (1 - 1e-4), rtol=0, atol=1e-18)
    # one number, two steps, written out from the definition
    p, g1, g2, lr, b1, b2, eps = 0.5, 0.3, -0.2, 1e-3, 0.9, 0.95, 1e-8
    state = {}
    one = R.adamw_step({"wpe": np.array(p)}, {"wpe": np.array(g1)}, state, lr)["wpe"]
    two = R.adamw_step({"wpe": one}, {"wpe": np.array(g2)}, state, lr)["wpe"]
    m, v = (1 - b1) * g1, (1 - b2) * g1 ** 2
    q = p * (1 - lr * 0.1) - lr * (m / (1 - b1)) / (math.sqrt(v / (1 - b2)) + eps)
    m, v = b1 * m + (1 - b1) * g2, b2 * v + (1 - b2) * g2 ** 2
    q = q * (1 - lr * 0.1) - lr * (m / (1 - b1 ** 2)) / (math.sqrt(v / (1 - b2 ** 2)) + eps)
    assert abs(float(two) - q) < 1e-15
    clipped, norm = R.clip_by_global_norm({"a": np.array([3.0]), "b": np.array([[4.0]])})
    assert norm == 5.0 and np.allclose(clipped["a"], 0.6) and np.allclose(clipped["b"], 0.8)
    small, _ = R.clip_by_global_norm({"a": np.array([0.3])})
    assert small["a"][0] == 0.3


@FAST
def test_training_lowers_the_loss():
    probs = P.make_problems()
    data = [{"x": x, "y": y} for _, (x, y) in zip(range(3), P.batches(probs.stream(), probs.length, 4, 0, 0,
                                                                          TINY.context))]
    r = R.train(R.init_weights(0, TINY), data + data[:1], lr=1e-2, cfg=TINY)
    assert r["losses"][3]["loss"] < r["losses"][0]["loss"]
    assert len(r["grad_norms"]) == 4 and r["grads"].keys() == r["weights"].keys()


# ------------------------------------------------------------------ FLOPs
@FAST
def test_flops_per_token_equal_the_hand_count():
    c, m, v, t = 128, 512, 13, 64
    linear = 3 * c * c + c * c + c * m + m * c  # forward, input gradient, weight gradient each
    attention = 2 * t * c                       # Q K^T and P V: forward, and both operands' gradients
    per_token = 2 * (2 * (3 * linear + 3 * attention) + 3 * v * c)
    assert S.training_flops_per_token() == per_token == 2_565_888
    assert S.training_flops_per_token() * 64 == 164_216_832  # a 64-token training window


def test_torch_flop_counter_agrees():
    """PyTorch's FlopCounterMode over one real training step of the spec's
    model, in the torch environment: the same FLOPs per token, at two contexts."""
    from frameval import envs
    python = envs.ensure_framework("torch", echo=lambda m: None).python
    for context in (64, 16):
        out = subprocess.run([str(python), str(REPO / "tests" / "torch_gpt_flops.py"), "--context", str(context)],
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        got = json.loads(out.stdout.strip().splitlines()[-1])
        assert got["params"] == S.param_count(S.Config(context=context))
        assert got["per_token"] == S.training_flops_per_token(S.Config(context=context)), context


# ------------------------------------------------------------------ data
@FAST
def test_the_problems_are_the_same_bytes_and_the_held_out_never_trains():
    a, b = P.make_problems(), P.make_problems()
    assert a.sha256() == b.sha256() and np.array_equal(a.stream(), b.stream())
    # pinned: numpy's legacy RandomState streams are frozen, so any machine gives these
    assert P.decode(a.stream()[:30]) == "97+32=129;64+02=066;68+38=106;"
    assert P.decode(P.questions(a).prompts[0]) == "74+81="
    assert P.decode(P.problem_tokens([74], [81])[0][P.answer_offsets()]) == "155"
    train = set(zip(a.train_a.tolist(), a.train_b.tolist()))
    held = set(zip(a.held_a.tolist(), a.held_b.tolist()))
    assert len(held) == P.HELD_OUT and not train & held
    assert len(train) + len(held) == 10 ** 4  # two digits: every other pair trains, each once
    three = P.make_problems(3)
    assert not set(zip(three.train_a.tolist(), three.train_b.tolist())) & set(zip(three.held_a.tolist(),
                                                                                   three.held_b.tolist()))
    text = P.decode(three.stream()[:13])
    x, y, s = int(text[:3]), int(text[4:7]), int(text[8:12])
    assert text[3] + text[7] + text[12] == "+=;" and x + y == s


@FAST
def test_windows_start_at_problem_boundaries_in_the_seeds_order():
    probs = P.make_problems()
    stream = probs.stream()
    epoch = list(P.batches(stream, probs.length, 32, 0, 0))
    n = len(P.window_starts(len(stream), probs.length))
    assert len(epoch) == n // 32 and epoch[0][0].shape == (32, 64)
    x = np.concatenate([e[0] for e in epoch])
    assert np.all(x[:, 2] == P.PLUS) and np.all(x[:, 5] == P.EQUALS) and np.all(x[:, 9] == P.END)
    assert np.array_equal(np.concatenate([e[1] for e in epoch])[:, :-1], x[:, 1:])
    assert len({row.tobytes() for row in x}) == len(x)  # each window once (9,000 distinct problems start them)
    again = next(P.batches(stream, probs.length, 32, 0, 0))[0]
    assert np.array_equal(again, epoch[0][0])
    assert not np.array_equal(next(P.batches(stream, probs.length, 32, 1, 0))[0], again)
    assert not np.array_equal(next(P.batches(stream, probs.length, 32, 0, 1))[0], again)


def _oracle(q, wrong_every=3):
    """A next-token function that knows the answers but gets every third
    question's second answer digit wrong: greedy decoding and the one-pass
    teacher-forced figure must both score it 2/3."""
    table = {q.prompts[i].tobytes(): (i, q.answers[i]) for i in range(len(q.prompts))}
    p = q.prompts.shape[1]

    def next_logits(tokens):
        out = np.zeros((len(tokens), tokens.shape[1], 13))
        for r, row in enumerate(tokens):
            i, ans = table[row[:p].tobytes()]
            for pos in range(p - 1, tokens.shape[1]):
                k = pos - (p - 1)
                if k < len(ans):
                    out[r, pos, (ans[k] + (k == 1 and i % wrong_every == 0)) % 10] = 1.0
        return out
    return next_logits


@FAST
def test_greedy_decoding_and_the_teacher_forced_pass_agree():
    q = P.questions(P.make_problems())
    q = P.Questions(q.prompts[:30], q.answers[:30])
    fn = _oracle(q)
    gen = P.greedy(fn, q.prompts, q.answers.shape[1], batch_size=7)
    assert P.exact_match(gen, q.answers) == pytest.approx(2 / 3)
    assert P.exact_match_forced(fn(q.teacher_forced()), q) == pytest.approx(2 / 3)
    lines = P.shown(q, gen)
    assert len(lines) == P.SHOWN and lines[0][1] is False and lines[1] == ("50+23=073", True, "073")
    # the reference model itself: both ways give the same verdict per question
    q = P.Questions(q.prompts[:10], q.answers[:10])
    w = R.init_weights(3)
    model = lambda t: R.forward(w, t)[0]  # noqa: E731
    forced = np.argmax(model(q.teacher_forced())[:, q.prompts.shape[1] - 1:], axis=-1)
    greedy = P.greedy(model, q.prompts, q.answers.shape[1])
    assert np.array_equal(greedy[:, 0], forced[:, 0])
    assert np.array_equal(P.correct(greedy, q.answers), P.correct(forced, q.answers))
