"""The small GPT's learning curve in PyTorch, to choose the digit count, the
quality target and the profiles' sizes (issue #52; docs/workloads.md, "GPT:
adding integers"). A prototype, not a notebook: the spec's model, initial
weights (frameval's float64 reference, cast), data, batch 32 and AdamW; it
prints the held-out exact-match accuracy and validation loss against steps
and training seconds (evaluation off the clock) with the load average.

    PYTHONPATH=. <torch env>/bin/python tools/gpt_curve.py --digits 2 --steps 3000 --eval-every 100
    ... --check   one step against the float64 reference, then stop
"""
import argparse
import itertools
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from frameval.workloads.gpt import problems as P
from frameval.workloads.gpt import reference as R
from frameval.workloads.gpt.spec import ADAMW, SPEC, decayed


class Block(nn.Module):
    def __init__(self, c, m, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(c, eps=SPEC.ln_eps), nn.LayerNorm(c, eps=SPEC.ln_eps)
        self.qkv, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.fc, self.out = nn.Linear(c, m), nn.Linear(m, c)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))  # exact (erf) GELU: torch's default


class GPT(nn.Module):
    def __init__(self, cfg=SPEC):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(cfg.vocab, cfg.width), nn.Embedding(cfg.context, cfg.width)
        self.h = nn.ModuleList(Block(cfg.width, cfg.mlp, cfg.heads) for _ in range(cfg.blocks))
        self.lnf = nn.LayerNorm(cfg.width, eps=cfg.ln_eps)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe.weight[: idx.shape[1]]
        for block in self.h:
            x = block(x)
        return F.linear(self.lnf(x), self.wte.weight)  # tied output layer

    def load_canonical(self, w):
        own = dict(self.named_parameters())
        with torch.no_grad():
            for name, value in w.items():
                own[torch_name(name)].copy_(torch.as_tensor(value, dtype=own[torch_name(name)].dtype))


def torch_name(canonical):
    """Reference names -> this module's (`mlp.proj` is `out` here)."""
    key = canonical.replace("mlp.proj", "out").replace("attn.", "").replace("mlp.", "")
    key = {"wte": "wte.weight", "wpe": "wpe.weight"}.get(key, key)
    return key.replace("h0.", "h.0.").replace("h1.", "h.1.")


def optimizer(model, names):
    groups = {True: [], False: []}
    for (name, p), canon in zip(model.named_parameters(), names):
        groups[decayed(canon)].append(p)
    return torch.optim.AdamW([{"params": groups[True], "weight_decay": ADAMW["weight_decay"]},
                              {"params": groups[False], "weight_decay": 0.0}],
                             lr=ADAMW["lr"], betas=ADAMW["betas"], eps=ADAMW["eps"])


def canonical_order(model, w):
    """The canonical name of each of the module's parameters, in its order."""
    back = {torch_name(name): name for name in w}
    return [back[n] for n, _ in model.named_parameters()]


@torch.no_grad()
def evaluate(model, q, vx, vy):
    model.eval()
    logits = model(torch.as_tensor(q.teacher_forced())).numpy()
    acc = P.exact_match_forced(logits, q)
    vloss = F.cross_entropy(model(torch.as_tensor(vx)).flatten(0, 1), torch.as_tensor(vy).flatten()).item()
    model.train()
    return acc, vloss


def check(seed=0, steps=3):
    """The prototype against the float64 reference: the same initial weights and
    batches, `steps` steps in torch float64; prints the largest relative
    difference of the loss and of each weight afterwards."""
    probs = P.make_problems(2)
    w0 = R.init_weights(seed)
    data = [{"x": x, "y": y} for x, y in itertools.islice(P.batches(probs.stream(), probs.length, 4, seed, 0), steps)]
    ref = R.train(w0, data)
    torch.set_default_dtype(torch.float64)
    model = GPT()
    model.load_canonical(w0)
    opt = optimizer(model, canonical_order(model, w0))
    for i, b in enumerate(data):
        loss = F.cross_entropy(model(torch.as_tensor(b["x"])).flatten(0, 1), torch.as_tensor(b["y"]).flatten())
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), ADAMW["clip_norm"])
        opt.step()
        print(f"loss torch {loss.item():.12f} reference {ref['losses'][i]['loss']:.12f}")
    own = dict(model.named_parameters())
    worst = max(np.abs(own[torch_name(k)].detach().numpy() - v).max() / (np.abs(v - w0[k]).max() + 1e-30)
                for k, v in ref["weights"].items())
    print(f"largest weight difference after {len(data)} steps, relative to the weights' change: {worst:.2e}; "
          f"grad norms {ref['grad_norms']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--digits", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=0, help="stop after this many training seconds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--greedy-check", action="store_true", help="also decode greedily at each evaluation")
    ap.add_argument("--check", action="store_true", help="3 steps against the float64 reference, then stop")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.check:
        return check(a.seed)
    probs = P.make_problems(a.digits)
    stream, q = probs.stream(), P.questions(probs)
    vx, vy = P.validation_windows(probs)
    model = GPT()
    w0 = R.init_weights(a.seed)
    model.load_canonical(w0)
    opt = optimizer(model, canonical_order(model, w0))
    print(f"digits {a.digits}: {len(probs.train_a)} training problems, {len(probs.held_a)} held out, "
          f"{sum(p.numel() for p in model.parameters())} parameters, torch {torch.__version__}", flush=True)
    print("step\tseconds\tcpu_s\taccuracy\tval_loss\ttrain_loss\tload1", flush=True)
    step, clock, cpu, epoch, last = 0, 0.0, 0.0, 0, float("nan")
    while step < a.steps and not (a.seconds and clock >= a.seconds):
        for x, y in P.batches(stream, probs.length, 32, a.seed, epoch):
            t0, c0 = time.perf_counter(), time.process_time()
            loss = F.cross_entropy(model(torch.as_tensor(x)).flatten(0, 1), torch.as_tensor(y).flatten())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), ADAMW["clip_norm"])
            opt.step()
            clock += time.perf_counter() - t0
            cpu += time.process_time() - c0
            step, last = step + 1, loss.item()
            if step % a.eval_every == 0:
                acc, vloss = evaluate(model, q, vx, vy)
                extra = ""
                if a.greedy_check:
                    with torch.no_grad():
                        gen = P.greedy(lambda t: model(torch.as_tensor(t)).numpy(), q.prompts, a.digits + 1)
                    extra = f"\tgreedy {P.exact_match(gen, q.answers):.4f}"
                print(f"{step}\t{clock:.1f}\t{cpu:.1f}\t{acc:.4f}\t{vloss:.4f}\t{last:.4f}\t{os.getloadavg()[0]:.2f}{extra}",
                      flush=True)
            if step >= a.steps or (a.seconds and clock >= a.seconds):
                break
        epoch += 1


if __name__ == "__main__":
    main()
