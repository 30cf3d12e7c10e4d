"""torch.compile: loss.backward() inside the compiled training step loses the gradients.

The whole step (forward, the loss read for the log, zero_grad, loss.backward(),
optimizer.step()) under torch.compile with `trace_autograd_ops = True`, on
torch 2.13.0 (CPU): dynamo breaks the graph around the backward, and after
the step every parameter's .grad is None, so Adam skips them all: the step
trains nothing, silently. In frameval's LeNet notebook the check caught it
(every gradient missing, losses 2e-2 off over three steps). The same step
with zero_grad first, before the forward, trains correctly: the defect needs
the order the notebooks use. An earlier build of the notebooks saw a NameError
in dynamo's resume function instead. frameval computes the gradients with
torch.autograd.grad and assigns them to .grad (fw.grad_step), which dynamo
traces into the step's graph.

The script runs the step compiled and eagerly from the same weights for three
steps. Exit 1 while the defect is present, 0 once fixed.
"""
import copy
import sys

import torch

print("version:", torch.__version__)
torch.manual_seed(0)
torch._dynamo.config.trace_autograd_ops = True
torch._inductor.config.layout_optimization = False  # another defect's workaround (inductor-layout-opt-conv-grad)


def make(model):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(x, y):
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        result = loss.detach(), (out.argmax(1) == y).sum()  # read before the backward, as the notebooks do
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return result
    return step


net = torch.nn.Sequential(torch.nn.Conv2d(1, 6, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                          torch.nn.Flatten(), torch.nn.Linear(6 * 14 * 14, 10))
eager_net, compiled_net = net, copy.deepcopy(net)
eager, compiled = make(eager_net), torch.compile(make(compiled_net))
batches = [(torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))) for _ in range(3)]
try:
    got = []
    for x, y in batches:
        got.append(float(compiled(x, y)[0]))
        no_grad = [n for n, p in compiled_net.named_parameters() if p.grad is None]
        if no_grad:
            break
except NameError as e:
    print("compiled step failed:", f"NameError: {str(e).splitlines()[0][:200]}")
    print("defect present (loss.backward() inside the compiled step)")
    sys.exit(1)
want = [float(eager(x, y)[0]) for x, y in batches]
print("losses compiled:", ", ".join(f"{v:.6f}" for v in got))
print("losses eager:   ", ", ".join(f"{v:.6f}" for v in want))
worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(got, want))
print(f"largest relative loss difference {worst:.1e}; parameters without .grad after the compiled step: "
      f"{', '.join(no_grad) or 'none'}")
present = bool(no_grad) or len(got) < len(want) or worst > 1e-4
print("defect", "present" if present else "fixed")
sys.exit(1 if present else 0)
