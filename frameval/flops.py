"""Floating-point operations a training sample requires, counted from the layer
shapes of docs/workloads.md (standard library only; the table there is this
module's output, tested against a hand count and against PyTorch's own counter
in tests/test_flops.py).

What is counted: the products of convolutions, transposed convolutions, dense
layers and the LSTM's gate products (W_ih x, W_hh h), 2 FLOPs a multiply-add,
in three parts per layer, each only where the training step needs it:
  forward (F);
  input gradient (I), the same products as F: none for a layer whose input
    is data, noise, a constant (the LSTM's zero initial state) or a detached
    tensor, since nothing upstream wants it;
  weight gradient (W), the same products as F: none for a network the step
    does not train (the discriminator in the DCGAN's generator step).
A layer's products are its nominal ones: a convolution's taps on its zero
padding, a transposed convolution's products that land on the rows it crops,
and the first LSTM step's products with its zero state are all in, as every
framework computes them and as torch.utils.flop_counter counts them.

Left out: biases, activations, pooling, BatchNorm, dropout, the LSTM's
elementwise gate and cell arithmetic, the sums of gradients (over the DCGAN's
two discriminator passes, over the LSTM's steps), the loss, the optimizer
update, and any work the step does not need (a gradient no one asked for, a
recomputation). None of these is measured here.

So what a report derives from this count is like MFU, not HFU: samples/s times
these FLOPs is a lower bound of the arithmetic the hardware really did per
second, and its share of the machine's peak is a lower bound of the hardware's
real utilisation. A framework that does extra, unneeded work gets no credit
for it. (One exception: a fast algorithm such as Winograd or FFT convolution
does fewer multiplications than the nominal products, and then the share can
exceed the real one.)
"""
from __future__ import annotations

from dataclasses import dataclass

from . import workloads

# The built-in workloads, whose table docs/workloads.md shows. Each workload's
# layer table is its record's `passes` (frameval/workloads/).
WORKLOADS = workloads.BUILT_IN


@dataclass(frozen=True)
class Row:
    """One layer in one pass: FLOPs per training sample."""
    workload: str
    pass_name: str
    layer: str
    macs: int
    forward: int
    input_grad: int
    weight_grad: int


def passes(workload: str, params: dict | None = None) -> tuple:
    """The passes of one training step, per training sample (an image, a
    window): the workload record's layer table (docs/workloads.md)."""
    wl = workloads.find(workload)
    if wl is None or wl.passes is None:
        raise ValueError(f"no FLOP count for workload {workload!r} (counted: {', '.join(workloads.REGISTRY)})")
    return wl.passes(params or {})


def breakdown(workload: str, params: dict | None = None) -> list:
    """[Row]: each layer of each pass, its forward, input-gradient and
    weight-gradient FLOPs per training sample, each 0 where the step does not
    need it."""
    rows = []
    for ps in passes(workload, params):
        for layer in ps.layers:
            flops = 2 * layer.macs * ps.times
            wants_input = ps.input_grad or not layer.on_input
            rows.append(Row(workload, ps.name + (f" (x{ps.times})" if ps.times > 1 else ""), layer.name,
                            layer.macs, flops, flops * layer.operands if wants_input else 0,
                            flops if ps.weights and layer.weighted else 0))
    return rows


def training_flops(workload: str, params: dict | None = None) -> int | None:
    """FLOPs one training sample requires (forward, input and weight gradients
    where needed), or None for a workload not counted here."""
    wl = workloads.find(workload)
    if wl is None or wl.passes is None:
        return None
    return sum(r.forward + r.input_grad + r.weight_grad for r in breakdown(workload, params))


def markdown_table() -> str:
    """The table of docs/workloads.md ("FLOPs per training sample"): every
    layer of every pass, then each workload's totals."""
    lines = ["| workload | pass | layer | multiply-adds (one forward) | forward | input gradient | weight gradient |",
             "|---|---|---|---|---|---|---|"]
    for wl in WORKLOADS:
        rows = breakdown(wl)
        for r in rows:
            lines.append(f"| {workloads.get(wl).display} | {r.pass_name} | {r.layer} | {r.macs:,} "
                         f"| {r.forward:,} | {r.input_grad:,} | {r.weight_grad:,} |")
        f, i, w = (sum(getattr(r, c) for r in rows) for c in ("forward", "input_grad", "weight_grad"))
        lines.append(f"| {workloads.get(wl).display} | **total** | F + I + W = **{f + i + w:,}** | | {f:,} | {i:,} | {w:,} |")
    return "\n".join(lines)


if __name__ == "__main__":  # python3 -m frameval.flops: the docs' table
    print(markdown_table())
