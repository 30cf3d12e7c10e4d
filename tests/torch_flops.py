"""An independent count: the FLOPs of one training step of each workload, as
PyTorch's own counter (torch.utils.flop_counter.FlopCounterMode) sees them,
per training sample. Run by tests/test_flops.py with the torch environment's
python; it prints one JSON object.

The networks are the spec's (docs/workloads.md), written here in plain torch
with no frameval code, and each step is the spec's step: the counter counts
whatever autograd really computes, so a gradient the step does not ask for
(data's, noise's, a detached fake's, D's weights' in the G step) is not in its
figure. It counts matrix products and convolutions only (mm, addmm, bmm,
convolution and their backward), 2 FLOPs a multiply-add; bias adds, BatchNorm,
activations, pooling, dropout, the loss and Adam add nothing to it.

    python tests/torch_flops.py [--batch 8] [--windows 20,10]
"""
import argparse
import json
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode


def counted(step) -> int:
    with FlopCounterMode(display=False) as counter:
        step()
    return counter.get_total_flops()


def lenet() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def lenet_step(batch: int) -> int:
    net = lenet()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x, y = torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
    return counted(step)


class Reshape(nn.Module):
    def forward(self, x):
        return x.view(-1, 256, 7, 7)


def generator() -> nn.Module:
    act = lambda: nn.LeakyReLU(0.2)  # noqa: E731
    return nn.Sequential(nn.Linear(100, 256 * 7 * 7, bias=False), Reshape(), nn.BatchNorm2d(256), act(),
                         nn.ConvTranspose2d(256, 128, 5, stride=1, padding=2, bias=False), nn.BatchNorm2d(128), act(),
                         nn.ConvTranspose2d(128, 64, 5, stride=2, padding=2, output_padding=1, bias=False),
                         nn.BatchNorm2d(64), act(),
                         nn.ConvTranspose2d(64, 1, 5, stride=2, padding=2, output_padding=1, bias=False), nn.Tanh())


def discriminator() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 64, 5, stride=2, padding=2), nn.LeakyReLU(0.2), nn.Dropout(0.3),
                         nn.Conv2d(64, 128, 5, stride=2, padding=2), nn.LeakyReLU(0.2), nn.Dropout(0.3),
                         nn.Flatten(), nn.Linear(128 * 7 * 7, 1))


def dcgan_step(batch: int) -> int:
    G, D = generator(), discriminator()
    opt_g, opt_d = torch.optim.Adam(G.parameters(), lr=1e-4), torch.optim.Adam(D.parameters(), lr=1e-4)
    x, z = torch.randn(batch, 1, 28, 28), torch.randn(batch, 100)
    bce = lambda logits, t: F.binary_cross_entropy_with_logits(logits, torch.full_like(logits, t))  # noqa: E731

    def step():
        fake = G(z)
        assert fake.shape == x.shape, fake.shape  # the spec's 7 -> 7 -> 14 -> 28
        d_loss = bce(D(x), 1.0) + bce(D(fake.detach()), 0.0)
        for p, g in zip(D.parameters(), torch.autograd.grad(d_loss, list(D.parameters()))):
            p.grad = g
        opt_d.step()
        # through the updated D and the same fake; gradients for G's weights only,
        # as the spec's step asks (a plain backward() would add D's weight gradients)
        g_loss = bce(D(fake), 1.0)
        for p, g in zip(G.parameters(), torch.autograd.grad(g_loss, list(G.parameters()))):
            p.grad = g
        opt_g.step()
    return counted(step)


def lstm_step(batch: int, window: int, hidden: int = 32) -> int:
    lstm, fc = nn.LSTM(1, hidden, batch_first=True), nn.Linear(hidden, 1)
    params = list(lstm.parameters()) + list(fc.parameters())
    opt = torch.optim.Adam(params, lr=1e-3)
    x, y = torch.randn(batch, window, 1), torch.randn(batch, 1)

    def step():
        opt.zero_grad()
        out, _ = lstm(x)  # no initial state given: zeros, as the spec's
        F.mse_loss(fc(out[:, -1]), y).backward()
        opt.step()
    # oneDNN's fused LSTM kernel (aten.mkldnn_rnn_layer, torch's CPU default for
    # float32) has no FLOP formula, so the counter would see only the dense layer;
    # without it nn.LSTM runs as per-step matrix products, which it counts
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*TF32")  # the flags' own notice about Intel GPUs
        with torch.backends.mkldnn.flags(enabled=False):
            return counted(step)


def per_sample(flops: int, batch: int) -> int:
    assert flops % batch == 0, (flops, batch)
    return flops // batch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--windows", default="20,10")
    a = ap.parse_args()
    torch.manual_seed(0)
    print(json.dumps({"torch": torch.__version__, "batch": a.batch,
                      "lenet": per_sample(lenet_step(a.batch), a.batch),
                      "dcgan": per_sample(dcgan_step(a.batch), a.batch),
                      "lstm": {w: per_sample(lstm_step(a.batch, int(w)), a.batch) for w in a.windows.split(",")}}))


if __name__ == "__main__":
    main()
