"""torch.compile: nn.LSTM is not traced by dynamo, and `allow_rnn = True` fails on CPU.

Dynamo refuses to trace nn.LSTM ("Attempted to wrap RNN, GRU, or LSTM") and
breaks the graph; `torch._dynamo.config.allow_rnn = True` then fails on the CPU
with `TypeError: expected Tensor() for op: torch.ops.aten.mkldnn_rnn_layer.default`
(torch 2.13.0). frameval's graph-mode LSTM runs nn.LSTM's parameters through the
recurrence written in torch ops. Exit 1 while the defect is present, 0 once fixed.
"""
import sys

import torch

print("version:", torch.__version__)
torch.manual_seed(0)
torch._dynamo.config.allow_rnn = True
lstm, head = torch.nn.LSTM(1, 32, batch_first=True), torch.nn.Linear(32, 1)
x, y = torch.randn(8, 20, 1), torch.randn(8, 1)


def forward_loss(x, y):
    out, _ = lstm(x)
    return ((head(out[:, -1]) - y) ** 2).mean()


eager = torch.autograd.grad(forward_loss(x, y), list(lstm.parameters()))
try:
    loss = torch.compile(forward_loss, fullgraph=True)(x, y)
    compiled = torch.autograd.grad(loss, list(lstm.parameters()))
except TypeError as e:
    if "mkldnn_rnn_layer" not in str(e):
        raise
    print("compiled forward failed:", f"TypeError: {str(e).splitlines()[0][:200]}")
    print("defect present (nn.LSTM under torch.compile with allow_rnn fails)")
    sys.exit(1)
err = max(float((a - b).abs().max()) for a, b in zip(eager, compiled))
print(f"compiled nn.LSTM forward ran; gradients differ from eager by {err:.2e}")
present = err > 1e-4
print("defect", "present" if present else "fixed")
sys.exit(1 if present else 0)
