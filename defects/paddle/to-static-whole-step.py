"""Paddle: paddle.jit.to_static(full_graph=True) of the whole training step fails.

The step (forward, loss.backward(), opt.step()) under to_static fails with
"'paddle.base.libpaddle.pir.Value' object has no attribute 'backward'"
(Paddle 3.3.1); frameval converts the forward (its backward runs as the static
program's backward) and runs the Adam update in the dynamic graph. Exit 1 while
the defect is present, 0 once fixed.
"""
import os
import sys

os.environ["GLOG_v"] = "0"
os.environ["GLOG_minloglevel"] = "2"
import numpy as np
import paddle

print("version:", paddle.__version__)
paddle.seed(0)
model = paddle.nn.Sequential(paddle.nn.Linear(8, 16), paddle.nn.ReLU(), paddle.nn.Linear(16, 1))
opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
x = paddle.to_tensor(np.random.default_rng(0).standard_normal((32, 8)).astype(np.float32))
y = paddle.to_tensor(np.random.default_rng(1).standard_normal((32, 1)).astype(np.float32))


def step(x, y):
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    opt.clear_grad()
    return loss


try:
    compiled = paddle.jit.to_static(step, full_graph=True)
    losses = [float(compiled(x, y)) for _ in range(3)]
except (AttributeError, TypeError) as e:
    print("converted step failed:", f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:200]}")
    print("defect present (to_static of forward + backward + update)")
    sys.exit(1)
print("converted whole step ran, losses", ", ".join(f"{v:.5f}" for v in losses))
present = not losses[2] < losses[0]
print("defect", "present" if present else "fixed")
sys.exit(1 if present else 0)
