"""PyTorch's spelling of the common mistakes (frameval/envscripts/mistakes.py: what each is), one line
each where it can be: the line that raises here is "the user's line". numpy + standard library + the framework."""
from __future__ import annotations


def spellings():
    """{mistake id: the line that makes it, or the reason it cannot be made here}."""
    import torch
    o, nn = torch.ones, torch.nn

    def backward_twice():
        x = o(3, requires_grad=True)
        loss = (x * x).sum()
        loss.backward()
        loss.backward()

    def non_scalar():
        x = o(3, requires_grad=True)
        (x * x).backward()
    return {"matmul_shapes": lambda: o(3, 4) @ o(5, 6),
            "conv_channels": lambda: nn.Conv2d(6, 2, 3)(o(1, 4, 8, 8)),
            "reshape_size": lambda: o(2, 3).reshape(4, 2),
            "concat_shapes": lambda: torch.cat([o(2, 3), o(2, 4)], 0),
            "index_out_of_range": lambda: o(5)[7],
            "int_into_float_layer": lambda: nn.Linear(4, 2)(torch.ones(1, 4, dtype=torch.int64)),
            "backward_twice": backward_twice, "non_scalar_loss": non_scalar,
            "negative_learning_rate": lambda: torch.optim.SGD(nn.Linear(4, 2).parameters(), lr=-0.1)}
