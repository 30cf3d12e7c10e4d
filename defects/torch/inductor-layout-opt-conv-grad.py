"""torch.compile (inductor, CPU): the layout optimisation gives wrong convolution gradients.

LeNet at batch 16, the training step compiled whole (forward and
torch.autograd.grad): with inductor's default `layout_optimization = True` the
convolutions' weight gradients differ from eager PyTorch's (zero, on torch
2.13.0). frameval turns the optimisation off in graph mode (frameval/fw/torch_support.py).
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

shapes = {"c1": (6, 1, 5, 5), "c2": (16, 6, 5, 5), "f1": (120, 400), "f2": (84, 120), "f3": (10, 84)}
params = [torch.randn(s) * 0.1 for s in shapes.values()]
biases = [torch.zeros(s[0]) for s in shapes.values()]
for t in params + biases:
    t.requires_grad_(True)
x, y = torch.rand(16, 1, 28, 28), torch.randint(0, 10, (16,))


def step(x, y):
    (c1, c2, f1, f2, f3), (b1, b2, b3, b4, b5) = params, biases
    h = F.max_pool2d(F.relu(F.conv2d(x, c1, b1, padding=2)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, c2, b2)), 2).flatten(1)
    h = F.relu(F.linear(F.relu(F.linear(h, f1, b3)), f2, b4))
    loss = F.cross_entropy(F.linear(h, f3, b5), y)
    return torch.autograd.grad(loss, params)


eager = step(x, y)
compiled = torch.compile(step)(x, y)
worst = 0.0
for name, e, c in zip(shapes, eager, compiled):
    err = float((e - c).abs().max() / e.abs().max().clamp_min(1e-12))
    worst = max(worst, err) if name.startswith("c") else worst
    print(f"{name} weight gradient: eager max |g| {float(e.abs().max()):.3g}, compiled {float(c.abs().max()):.3g}, "
          f"relative difference {err:.2e}")
present = worst > 1e-3
print("defect", "present" if present else "fixed", f"(conv gradients off by {worst:.2e}, tolerance 1e-3)")
sys.exit(1 if present else 0)
