"""PyTorch: its record (standard library only; frameval/frameworks/__init__.py)."""
from ..record import Framework

FRAMEWORK = Framework(
    "torch", "PyTorch", order=1, aliases=("pytorch",), packages=("torch",), notes="torch.md", colour="#ee4c2c",
    workarounds={
        "inductor-layout-opt-conv-grad": r"layout_optimization\s*=\s*False",
        "dynamo-backward-in-step": r"trace_autograd_ops\s*=\s*True",
        "dynamo-lstm-allow-rnn": r"recurrence written in torch ops",
    })
