"""torch.compile (inductor, CPU): the layout optimisation gives wrong convolution gradients.

LeNet at batch 16, the training step compiled whole (forward and
torch.autograd.grad): with inductor's default `layout_optimization = True` the
convolutions' weight gradients differ from eager PyTorch's (zero, on torch
2.13.0). frameval turns the optimisation off in graph mode (frameval/frameworks/torch/support.py).
Exit 1 while the defect is present, 0 once fixed.
"""
import sys

import torch
import torch.nn.functional as F

print("version:", torch.__version__)
torch.manual_seed(0)
torch.set_num_threads(2)
torch._dynamo.config.trace_autograd_ops = True
torch._inductor.config.layout_optimization = True  # the default, set so the script says what it tests

model = torch.nn.Sequential(
    torch.nn.Conv2d(1, 6, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(6, 16, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
    torch.nn.Linear(400, 120), torch.nn.ReLU(), torch.nn.Linear(120, 84), torch.nn.ReLU(), torch.nn.Linear(84, 10))
params = list(model.parameters())
shapes = {f"{i}.{'weight' if p.dim() > 1 else 'bias'}": None for i, p in enumerate(params)}
# digits-like input: mostly flat zero background, as MNIST
x = torch.rand(16, 1, 28, 28) * (torch.rand(16, 1, 28, 28) > 0.8)
y = torch.randint(0, 10, (16,))


def step(x, y):
    loss = F.cross_entropy(model(x), y)
    return torch.autograd.grad(loss, params)


eager = step(x, y)
compiled = torch.compile(step)(x, y)
worst = 0.0
for name, e, c in zip(shapes, eager, compiled):
    err = float((e - c).abs().max() / e.abs().max().clamp_min(1e-12))
    worst = max(worst, err) if e.dim() == 4 else worst
    print(f"{name} gradient: eager max |g| {float(e.abs().max()):.3g}, compiled {float(c.abs().max()):.3g}, "
          f"relative difference {err:.2e}")
present = worst > 1e-3
print("defect", "present" if present else "fixed", f"(conv gradients off by {worst:.2e}, tolerance 1e-3)")
sys.exit(1 if present else 0)
