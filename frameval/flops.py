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

WORKLOADS = ("lenet", "dcgan", "lstm")


@dataclass(frozen=True)
class Layer:
    name: str
    macs: int  # multiply-adds of one forward pass on one sample
    on_input: bool = False  # reads the network's input (data, noise, h0, a fake), not another layer's output


@dataclass(frozen=True)
class Pass:
    """One forward and backward pass of a network in a training step, `times`
    per training sample; `weights`: the step wants its weights' gradients;
    `input_grad`: it wants the gradient of the network's input."""
    name: str
    layers: tuple
    times: int = 1
    weights: bool = True
    input_grad: bool = False


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


def conv(h_out: int, w_out: int, c_in: int, c_out: int, k: int) -> int:
    """Multiply-adds of a k x k convolution producing an h_out x w_out x c_out map."""
    return h_out * w_out * c_out * c_in * k * k


def tconv(h_in: int, w_in: int, c_in: int, c_out: int, k: int) -> int:
    """Multiply-adds of a k x k transposed convolution: each input pixel of each
    input channel scatters a k x k x c_out patch (whatever the stride and crop)."""
    return h_in * w_in * c_in * c_out * k * k


def dense(n_in: int, n_out: int) -> int:
    return n_in * n_out


def lenet_layers() -> tuple:
    return (Layer("conv 5x5 1→6, pad 2 (28x28)", conv(28, 28, 1, 6, 5), on_input=True),
            Layer("conv 5x5 6→16 (10x10)", conv(10, 10, 6, 16, 5)),
            Layer("dense 400→120", dense(400, 120)),
            Layer("dense 120→84", dense(120, 84)),
            Layer("dense 84→10", dense(84, 10)))


def generator_layers() -> tuple:
    return (Layer("G dense 100→12,544", dense(100, 12544), on_input=True),
            Layer("G tconv 5x5 256→128, stride 1 (7x7 in)", tconv(7, 7, 256, 128, 5)),
            Layer("G tconv 5x5 128→64, stride 2 (7x7 in)", tconv(7, 7, 128, 64, 5)),
            Layer("G tconv 5x5 64→1, stride 2 (14x14 in)", tconv(14, 14, 64, 1, 5)))


def discriminator_layers() -> tuple:
    return (Layer("D conv 5x5 1→64, stride 2 (14x14 out)", conv(14, 14, 1, 64, 5), on_input=True),
            Layer("D conv 5x5 64→128, stride 2 (7x7 out)", conv(7, 7, 64, 128, 5)),
            Layer("D dense 6,272→1", dense(6272, 1)))


def lstm_layers(window: int = 20, hidden: int = 32) -> tuple:
    """The gate products split by what their input is: x (data) at every step,
    h0 (the zero initial state, a constant) at the first, h_{t-1} after it."""
    gates = 4 * hidden
    return (Layer(f"LSTM W_ih x, 1→{gates}, x{window} steps", window * dense(1, gates), on_input=True),
            Layer(f"LSTM W_hh h0, {hidden}→{gates}, step 1", dense(hidden, gates), on_input=True),
            Layer(f"LSTM W_hh h, {hidden}→{gates}, steps 2–{window}", (window - 1) * dense(hidden, gates)),
            Layer(f"dense {hidden}→1", dense(hidden, 1)))


def passes(workload: str, params: dict | None = None) -> tuple:
    """The passes of one training step, per training sample (an image, a window).

    The DCGAN's step (docs/workloads.md), per real image: fake = G(z), whose
    backward comes in the G step; the D step on D(x) and D(fake.detach()):
    D's weights, no gradient for either input; the G step on D(fake) through
    the updated D: the gradient runs through all of D down to the fake image,
    but D's weights are not trained there."""
    p = params or {}
    if workload == "lenet":
        return (Pass("step", lenet_layers()),)
    if workload == "dcgan":
        d = discriminator_layers()
        return (Pass("G(z); backward in the G step", generator_layers()),
                Pass("D step: D(x), D(fake.detach())", d, times=2),
                Pass("G step: D(fake), updated D", d, weights=False, input_grad=True))
    if workload == "lstm":
        return (Pass("step", lstm_layers(int(p.get("window") or 20), int(p.get("hidden") or 32))),)
    raise ValueError(f"no FLOP count for workload {workload!r} (counted: {', '.join(WORKLOADS)})")


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
                            layer.macs, flops, flops if wants_input else 0, flops if ps.weights else 0))
    return rows


def training_flops(workload: str, params: dict | None = None) -> int | None:
    """FLOPs one training sample requires (forward, input and weight gradients
    where needed), or None for a workload not counted here."""
    if workload not in WORKLOADS:
        return None
    return sum(r.forward + r.input_grad + r.weight_grad for r in breakdown(workload, params))


NAMES = {"lenet": "LeNet-5", "dcgan": "DCGAN", "lstm": "LSTM"}


def markdown_table() -> str:
    """The table of docs/workloads.md ("FLOPs per training sample"): every
    layer of every pass, then each workload's totals."""
    lines = ["| workload | pass | layer | multiply-adds (one forward) | forward | input gradient | weight gradient |",
             "|---|---|---|---|---|---|---|"]
    for wl in WORKLOADS:
        rows = breakdown(wl)
        for r in rows:
            lines.append(f"| {NAMES[wl]} | {r.pass_name} | {r.layer} | {r.macs:,} "
                         f"| {r.forward:,} | {r.input_grad:,} | {r.weight_grad:,} |")
        f, i, w = (sum(getattr(r, c) for r in rows) for c in ("forward", "input_grad", "weight_grad"))
        lines.append(f"| {NAMES[wl]} | **total** | F + I + W = **{f + i + w:,}** | | {f:,} | {i:,} | {w:,} |")
    return "\n".join(lines)


if __name__ == "__main__":  # python3 -m frameval.flops: the docs' table
    print(markdown_table())
