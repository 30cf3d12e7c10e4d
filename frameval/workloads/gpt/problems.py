"""The small GPT's data (docs/workloads.md, "GPT: adding integers"): integer
additions as text, generated, the same bytes on every machine. Numpy and the
standard library only, Python 3.8+, old numpy included (it runs in every
framework's kernel); numpy's legacy `RandomState`, whose streams numpy keeps
fixed across versions, as `frameval/nb/data.py` uses it.

A problem reads `a+b=c;` with `a` and `b` of exactly `digits` digits (leading
zeros written: 0 to 10^digits - 1, uniformly) and `c` of `digits + 1`, so
every problem has the same length, 3 x digits + 4 tokens, and the answer's
digits sit at the same offsets in every problem.

- The problems (the data set) come from a fixed seed, `PROBLEMS_SEED`, not the
  run's: one permutation of all 10^(2 digits) pairs (a, b); its first
  `HELD_OUT` pairs are the held-out problems, the next ones the training
  problems. So no held-out pair is ever trained on.
- The training problems, packed one after another, make the stream. A
  training window is `context` + 1 tokens starting at a problem boundary
  (inputs, and the targets one token on); epoch `e` visits every window once
  in the order `RandomState([seed, 5, e]).permutation(n_windows)`, in batches
  (the last incomplete one dropped), the run's `seed` choosing the order.
- Quality: exact match of the answer digits of the held-out problems, decoded
  greedily after `a+b=` at positions 0.. of the context (where every training
  window puts a problem's first digit), and the validation loss over the
  held-out stream.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from .spec import SPEC, VOCAB

DIGITS = 2                # a and b have this many digits (chosen from measured curves, docs/workloads.md)
HELD_OUT = 1000           # held-out problems, never trained on
TRAIN_PROBLEMS = 100_000  # at most; fewer where the pairs run out (9,000 with two digits)
PROBLEMS_SEED = 2026      # the data set's own seed; the run's seed only orders the windows
STREAM = 5                # this workload's data stream: RandomState([seed, 5, epoch])
PLUS, EQUALS, END = VOCAB.index("+"), VOCAB.index("="), VOCAB.index(";")
SHOWN = 10                # the fixed held-out problems the report shows at each evaluation


def problem_length(digits: int = DIGITS) -> int:
    return 3 * digits + 4


def answer_offsets(digits: int = DIGITS) -> np.ndarray:
    """Where the answer's digits sit in a problem (2 digits + 2 ... 3 digits + 2);
    the logits that predict them are one position earlier."""
    return np.arange(2 * digits + 2, 3 * digits + 3)


def encode(text: str) -> np.ndarray:
    return np.array([VOCAB.index(ch) for ch in text], dtype=np.int64)


def decode(tokens) -> str:
    return "".join(VOCAB[int(t)] for t in tokens)


def _digits(values: np.ndarray, width: int) -> np.ndarray:
    """(n,) integers -> (n, width) digit tokens, most significant first."""
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    return (values[:, None] // powers[None, :]) % 10


def problem_tokens(a: np.ndarray, b: np.ndarray, digits: int = DIGITS) -> np.ndarray:
    """(n,) a and b -> (n, 3 digits + 4) tokens of `a+b=c;`."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    col = lambda token: np.full((len(a), 1), token, dtype=np.int64)  # noqa: E731
    return np.concatenate([_digits(a, digits), col(PLUS), _digits(b, digits), col(EQUALS),
                           _digits(a + b, digits + 1), col(END)], axis=1)


@dataclass
class Problems:
    digits: int
    train_a: np.ndarray
    train_b: np.ndarray
    held_a: np.ndarray
    held_b: np.ndarray
    context: int = SPEC.context

    @property
    def length(self) -> int:
        return problem_length(self.digits)

    def stream(self) -> np.ndarray:
        """The training problems packed into one int64 token stream."""
        return problem_tokens(self.train_a, self.train_b, self.digits).reshape(-1)

    def held_out_stream(self) -> np.ndarray:
        return problem_tokens(self.held_a, self.held_b, self.digits).reshape(-1)

    def sha256(self) -> str:
        """The data set's checksum: the training stream, then the held-out one, as int64 little-endian."""
        h = hashlib.sha256()
        for s in (self.stream(), self.held_out_stream()):
            h.update(s.astype("<i8").tobytes())
        return h.hexdigest()

    def describe(self) -> dict:
        return {"name": f"addition-{self.digits}", "source": f"generated, seed {PROBLEMS_SEED}",
                "sha256": self.sha256(), "n_train": int(len(self.train_a)), "n_val": int(len(self.held_a)),
                "digits": self.digits, "context": self.context}


def make_problems(digits: int = DIGITS, held_out: int = HELD_OUT, train: int = TRAIN_PROBLEMS,
                  context: int = SPEC.context) -> Problems:
    """The data set: held-out and training pairs (a, b), disjoint, from `PROBLEMS_SEED`."""
    if digits < 1:
        raise ValueError(f"digits must be at least 1, not {digits}")
    pairs = 10 ** (2 * digits)
    if held_out >= pairs:
        raise ValueError(f"{held_out} held-out problems leave none to train on among {pairs} pairs")
    order = np.random.RandomState([PROBLEMS_SEED, STREAM, digits]).permutation(pairs)
    held, rest = order[:held_out], order[held_out:held_out + train]
    if len(rest) * problem_length(digits) < context + 1:
        raise ValueError(f"{len(rest)} training problems make no window of {context + 1} tokens")
    base = 10 ** digits
    return Problems(digits, rest // base, rest % base, held // base, held % base, context)


# ------------------------------------------------------------------ training
def window_starts(n_tokens: int, length: int, context: int = SPEC.context) -> np.ndarray:
    """Every problem boundary from which `context` + 1 tokens fit in the stream."""
    return np.arange(0, n_tokens - context, length, dtype=np.int64)


def windows(stream: np.ndarray, starts: np.ndarray, context: int = SPEC.context):
    """Inputs (n, context) and next-token targets (n, context), int64."""
    idx = np.asarray(starts, dtype=np.int64)[:, None] + np.arange(context + 1, dtype=np.int64)[None, :]
    w = stream[idx]
    return w[:, :-1], w[:, 1:]


def steps_per_epoch(n_windows: int, batch_size: int) -> int:
    return n_windows // batch_size


def window_batches(n_windows: int, batch_size: int, seed: int, epoch: int):
    """One epoch's batches as window indices (what a notebook gathers from its
    windows on the device): `RandomState([seed, 5, epoch]).permutation`, the
    last incomplete batch dropped."""
    order = np.random.RandomState([seed, STREAM, epoch]).permutation(n_windows)
    for i in range(0, steps_per_epoch(n_windows, batch_size) * batch_size, batch_size):
        yield order[i:i + batch_size]


def batches(stream: np.ndarray, length: int, batch_size: int, seed: int, epoch: int,
            context: int = SPEC.context):
    """One epoch's training batches (x, y), the same in every framework: every
    window once, in the order `RandomState([seed, 5, epoch]).permutation`."""
    starts = window_starts(len(stream), length, context)
    for idx in window_batches(len(starts), batch_size, seed, epoch):
        yield windows(stream, starts[idx], context)


def validation_windows(problems: Problems):
    """The held-out stream in windows that start at problem boundaries, one
    after another every context // length problems (the problems of the
    window's tail that continue into the next window are predicted twice):
    what the validation loss averages over, every position alike."""
    stream, length = problems.held_out_stream(), problems.length
    every = max(1, problems.context // length) * length
    starts = np.arange(0, len(stream) - problems.context, every, dtype=np.int64)
    return windows(stream, starts, problems.context)


# ------------------------------------------------------------------ quality
@dataclass
class Questions:
    """The held-out problems as questions: prompts `a+b=` (n, 2 digits + 2)
    and the answers' digit tokens (n, digits + 1)."""
    prompts: np.ndarray
    answers: np.ndarray

    def teacher_forced(self) -> np.ndarray:
        """Prompt and answer but the last digit (n, 3 digits + 2): one forward
        pass of these gives every answer position's prediction (`exact_match_forced`)."""
        return np.concatenate([self.prompts, self.answers[:, :-1]], axis=1)


def questions(problems: Problems) -> Questions:
    t = problem_tokens(problems.held_a, problems.held_b, problems.digits)
    at = answer_offsets(problems.digits)
    return Questions(t[:, :at[0]], t[:, at])


def _last_logits(out: np.ndarray) -> np.ndarray:
    out = np.asarray(out)
    return out[:, -1] if out.ndim == 3 else out


def greedy(next_logits, prompts: np.ndarray, steps: int, batch_size: int = 0) -> np.ndarray:
    """Greedy decoding, whatever computes the model: `next_logits(tokens)`
    takes int64 tokens (b, t) and returns logits (b, vocab) for the next token,
    or (b, t, vocab) for every position (the last is taken). Returns the
    `steps` tokens chosen (n, steps); ties go to the lower token id."""
    prompts = np.asarray(prompts, dtype=np.int64)
    size = batch_size or len(prompts)
    out = []
    for i in range(0, len(prompts), size):
        seq = prompts[i:i + size]
        for _ in range(steps):
            nxt = np.argmax(_last_logits(next_logits(seq)), axis=-1).astype(np.int64)
            seq = np.concatenate([seq, nxt[:, None]], axis=1)
        out.append(seq[:, prompts.shape[1]:])
    return np.concatenate(out, axis=0)


def correct(generated: np.ndarray, answers: np.ndarray) -> np.ndarray:
    """Per question: every answer digit right (bool, n)."""
    return np.all(np.asarray(generated) == np.asarray(answers), axis=1)


def exact_match(generated: np.ndarray, answers: np.ndarray) -> float:
    return float(np.mean(correct(generated, answers)))


def exact_match_forced(logits: np.ndarray, q: Questions) -> float:
    """The same figure from one teacher-forced pass: logits (n, 3 digits + 2,
    vocab) of `q.teacher_forced()`. Greedy decoding gets a question right
    exactly when, given the right digits before it, every answer digit is the
    argmax (both choose the lower id on a tie)."""
    p = q.prompts.shape[1]
    chosen = np.argmax(np.asarray(logits)[:, p - 1:], axis=-1)
    return exact_match(chosen, q.answers)


def shown(q: Questions, generated: np.ndarray, count: int = SHOWN) -> list:
    """The report's lines for the first `count` held-out problems:
    (text as answered, right?, the right answer)."""
    ok = correct(generated[:count], q.answers[:count])
    return [(decode(q.prompts[i]) + decode(generated[i]), bool(ok[i]), decode(q.answers[i]))
            for i in range(min(count, len(q.prompts)))]
