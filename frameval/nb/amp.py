"""Mixed precision (#69): what a notebook holds of its framework's AMP, and the
bound the second pass of the numerical check judges it by (docs/precision.md).

    amp = fw.autocast(rec, precision)     # frameworks/<fw>/support.py: an Amp, off for float32
    ... the step runs its forward and loss under the framework's own AMP while amp.on ...
    check.run(rec, "lenet", seed, amp, check_pass, lr=lr, batch_size=batch_size)

`-p precision=bf16` (fp16 on a GPU) keeps weights and optimizer state in
float32 and computes in the low format by the framework's own mechanism, never
a cast written here. The float64 check runs twice for such a run: first at full
float32 with the AMP off (the check every run has, unchanged), then the same
step under the AMP, judged against the bound below. `amp.on` is the switch the
check turns; training runs with it on. A framework that cannot switch its AMP
off inside one step object says how in `amp.how` (a second step object, a
rebuilt graph); the check still runs both passes.

The bound. AMP rounds each product layer's operands to the format (unit roundoff
u: 2^-8 for bfloat16, 2^-11 for float16) and accumulates in float32, as oneDNN,
XLA and cuBLAS do. One layer then moves its output by at most about 2u relative
(both operands rounded once), plus the float32 sum's own error, which by
Higham and Mary's probabilistic bound grows as lambda * sqrt(K) * 2^-24 for a
reduction of length K. Along a path of D such layers the relative errors add:

    per layer   e = 2u + LAMBDA * sqrt(K) * 2^-24
    forward     KAPPA * D * e
    losses      KAPPA * (D + 1) * e
    gradients   KAPPA * (2 D + 1) * e        (the backward passes the D layers again, then the weight product)

KAPPA allows for cancellation (the normwise relative error of a sum of terms of
both signs is larger than that of its terms). A framework that accumulated in
the low format would exceed it (sqrt(K) * u is 0.9 for K = 50,000 at
bfloat16), and so would a step that computes another function: the check's
float32 mutations move the gradients by 1e-1 to 1e1. A normalisation or a
softmax kept at bfloat16 where the AMP says float32 adds about u per tensor:
the bound cannot see that one alone, and the record says what stayed in
float32 as the framework reports it. Standard library only.
"""
from __future__ import annotations

import math

from ..catalog import MIXED

UNIT_ROUNDOFF = {"bfloat16": 2.0 ** -8, "float16": 2.0 ** -11}
FLOAT32_U = 2.0 ** -24
LAMBDA = 6.0   # Higham & Mary: the bound holds with probability >= 1 - 2 exp(-LAMBDA^2 / 2) per sum
KAPPA = 4.0    # cancellation allowance, normwise (docs/precision.md: measured against it)
JUDGED = ("forward", "losses", "grads")  # the second pass's sections; update and running stay float32's


class Amp:
    """A run's mixed precision: its format, whether it is on, and how its framework does it.

    precision: the run's -p precision; mechanism: the framework's API ("torch.autocast");
    level: its level where it has levels (Paddle's O1/O2, MindSpore's O1..O3) or "";
    float32: what the framework keeps in float32 by its own lists (loss, softmax, ...);
    how: how the check switches it off, where that is not `on` alone."""

    def __init__(self, precision: str, mechanism: str = "", level: str = "", float32=(), how: str = ""):
        self.precision = precision if precision in MIXED else None
        self.format = MIXED.get(precision)
        self.on = self.precision is not None
        self.mechanism, self.level, self.float32, self.how = mechanism, level, tuple(float32), how

    def __bool__(self):
        return self.on

    def record(self) -> dict:
        """result.json's "amp": None keys for a float32 run."""
        if self.precision is None:
            return {"precision": None}
        return {"precision": self.precision, "format": self.format, "mechanism": self.mechanism,
                "level": self.level or None, "float32": list(self.float32), "check_off": self.how or "amp.on"}


def bound(fmt: str, depth: int, reduction: int, batch: int) -> dict:
    """The second pass's tolerance per judged section for a path of `depth` product
    layers whose longest forward reduction is `reduction` (the gradients' weight
    products reduce over the batch too)."""
    u = UNIT_ROUNDOFF[fmt]

    def per_layer(k):
        return 2 * u + LAMBDA * math.sqrt(max(1, k)) * FLOAT32_U
    d = max(1, int(depth))
    return {"forward": KAPPA * d * per_layer(reduction), "losses": KAPPA * (d + 1) * per_layer(reduction),
            "grads": KAPPA * (2 * d + 1) * per_layer(reduction * max(1, batch))}
