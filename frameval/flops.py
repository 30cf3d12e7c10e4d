"""Floating-point operations per training sample, counted from the layer shapes
of docs/workloads.md (standard library only; the table there is this module's
output, tested against a hand count in tests/test_flops.py).

What is counted: the multiply-adds of convolutions, transposed convolutions,
dense layers and the LSTM's gate products, 2 FLOPs each. Biases, activations,
pooling, BatchNorm, the loss and the optimizer update are left out: they are a
few per cent of the products in LeNet and the DCGAN (more in the LSTM, whose
products are tiny), so a share of peak from these counts is a lower bound.
A training step costs its forward pass plus a backward pass counted as twice
the forward (the gradients with respect to inputs and to weights).
"""
from __future__ import annotations

BACKWARD_FACTOR = 2  # backward = 2 x forward; a training step = 3 x forward


def conv(h_out: int, w_out: int, c_in: int, c_out: int, k: int) -> int:
    """Multiply-adds of a k x k convolution producing an h_out x w_out x c_out map."""
    return h_out * w_out * c_out * c_in * k * k


def tconv(h_in: int, w_in: int, c_in: int, c_out: int, k: int) -> int:
    """Multiply-adds of a k x k transposed convolution: each input pixel of each
    input channel scatters a k x k x c_out patch (whatever the stride and crop)."""
    return h_in * w_in * c_in * c_out * k * k


def dense(n_in: int, n_out: int) -> int:
    return n_in * n_out


def lstm_step(n_in: int, hidden: int) -> int:
    """Multiply-adds of one time step's four gates: W_ih x + W_hh h."""
    return 4 * hidden * (n_in + hidden)


def lenet_layers() -> list:
    """[(layer, multiply-adds)] of one LeNet-5 forward pass on one 28x28 image."""
    return [("conv 5x5 1→6, pad 2 (28x28)", conv(28, 28, 1, 6, 5)),
            ("conv 5x5 6→16 (10x10)", conv(10, 10, 6, 16, 5)),
            ("dense 400→120", dense(400, 120)),
            ("dense 120→84", dense(120, 84)),
            ("dense 84→10", dense(84, 10))]


def generator_layers() -> list:
    return [("G dense 100→12,544", dense(100, 12544)),
            ("G tconv 5x5 256→128, stride 1 (7x7 in)", tconv(7, 7, 256, 128, 5)),
            ("G tconv 5x5 128→64, stride 2 (7x7 in)", tconv(7, 7, 128, 64, 5)),
            ("G tconv 5x5 64→1, stride 2 (14x14 in)", tconv(14, 14, 64, 1, 5))]


def discriminator_layers() -> list:
    return [("D conv 5x5 1→64, stride 2 (14x14 out)", conv(14, 14, 1, 64, 5)),
            ("D conv 5x5 64→128, stride 2 (7x7 out)", conv(7, 7, 64, 128, 5)),
            ("D dense 6,272→1", dense(6272, 1))]


def lstm_layers(window: int = 20, hidden: int = 32) -> list:
    return [(f"LSTM gates, 1→{hidden}, x{window} steps", window * lstm_step(1, hidden)),
            (f"dense {hidden}→1", dense(hidden, 1))]


def _forward(layers) -> int:
    return 2 * sum(m for _, m in layers)


def training_flops(workload: str, params: dict | None = None) -> int | None:
    """FLOPs of one training sample (an image, a window), forward and backward,
    or None for a workload not counted here.

    The DCGAN's step per real image: G(z) once (1 G forward); the discriminator
    step on D(x) and D(fake), forward and backward (2 x 3 D); the generator step
    through the updated D on the same fake: D forward and backward and G's
    backward (3 D + 2 G). In all 3 G + 9 D."""
    p = params or {}
    if workload == "lenet":
        return 3 * _forward(lenet_layers())
    if workload == "dcgan":
        g, d = _forward(generator_layers()), _forward(discriminator_layers())
        return 3 * g + 9 * d
    if workload == "lstm":
        window, hidden = int(p.get("window") or 20), int(p.get("hidden") or 32)
        return 3 * _forward(lstm_layers(window, hidden))
    return None


def markdown_table() -> str:
    """The layer-by-layer table of docs/workloads.md ("FLOPs per training sample")."""
    lines = ["| workload | layer | multiply-adds | forward FLOPs |", "|---|---|---|---|"]
    for wl, layers in (("LeNet-5", lenet_layers()), ("DCGAN", generator_layers() + discriminator_layers()),
                       ("LSTM", lstm_layers())):
        for name, m in layers:
            lines.append(f"| {wl} | {name} | {m:,} | {2 * m:,} |")
    return "\n".join(lines)


if __name__ == "__main__":  # python3 -m frameval.flops: the docs' table and totals
    print(markdown_table())
    for wl in ("lenet", "dcgan", "lstm"):
        print(f"{wl}: {training_flops(wl):,} FLOPs per training sample")
