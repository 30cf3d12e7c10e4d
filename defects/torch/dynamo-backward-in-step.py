"""torch.compile: loss.backward() inside the compiled training step fails in dynamo.

The whole step (forward, loss.backward(), optimizer.step()) under torch.compile
with `trace_autograd_ops = True` raised a NameError inside dynamo's resume
function on torch 2.13.0. frameval computes the gradients with
torch.autograd.grad and assigns them to .grad (fw.grad_step), which dynamo
traces. Exit 1 while the defect is present, 0 once fixed.
"""
import sys

import torch

print("version:", torch.__version__)
torch.manual_seed(0)
torch._dynamo.config.trace_autograd_ops = True
model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 5, padding=2), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Linear(4 * 28 * 28, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))


def step(x, y):
    opt.zero_grad()
    out = model(x)
    loss = torch.nn.functional.cross_entropy(out, y)
    loss.backward()
    opt.step()
    return loss.detach(), (out.argmax(1) == y).sum()  # read after the backward, as a training step does


try:
    compiled = torch.compile(step)
    losses = [float(compiled(x, y)[0]) for _ in range(3)]
except NameError as e:
    print("compiled step failed:", f"NameError: {str(e).splitlines()[0][:200]}")
    print("defect present (loss.backward() inside the compiled step)")
    sys.exit(1)
print("compiled step ran, losses", ", ".join(f"{v:.5f}" for v in losses))
present = not losses[2] < losses[0]
print("defect", "present" if present else "fixed")
sys.exit(1 if present else 0)
