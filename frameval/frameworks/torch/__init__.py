"""PyTorch: its record (standard library only; frameval/frameworks/__init__.py)."""
from ..record import Framework

FRAMEWORK = Framework(
    "torch", "PyTorch", order=1, aliases=("pytorch",), packages=("torch",), notes="torch.md", colour="#ee4c2c",
    workarounds={
        "inductor-layout-opt-conv-grad": r"layout_optimization\s*=\s*False",
        "dynamo-backward-in-step": r"trace_autograd_ops\s*=\s*True",
        "dynamo-lstm-allow-rnn": r"recurrence written in torch ops",
    },
    # dynamo, AOTAutograd and inductor (with sympy and setuptools' compiler helpers) load at the first compile
    warm_imports=("torch._dynamo", "torch._functorch.aot_autograd", "torch._inductor.compile_fx",
                  "torch._inductor.codegen.cpp", "torch._inductor.scheduler", "torch._inductor.graph",
                  "torch._inductor.codecache", "torch._inductor.async_compile",
                  "torch._inductor.compile_worker.subproc_pool", "torch._inductor.fx_passes.post_grad",
                  "torch.utils.cpp_extension", "sympy"))
