"""PyTorch's own float32 matrix product, set up as its notebooks set it up (frameval/envscripts/gemm.py
times it). Standard library + the framework, loaded only in its own environment."""
from __future__ import annotations

from frameval.envscripts.gemm import inputs
from frameval.idle import best_time


def gemm(n, threads):
    """-> (version, the op's name, idle.best_time's timing) of an n x n float32 product on `threads`."""
    import torch
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(threads)
    a, b = (torch.from_numpy(x) for x in inputs(n))
    return torch.__version__, "torch.mm", best_time(lambda: torch.mm(a, b), lambda: None)


def gemm_bf16(n, threads):
    """The same product in bfloat16 (float32 accumulation, AMX or AVX512-BF16 through oneDNN where
    the CPU has them): the machine's bfloat16 peak that mixed-precision runs are set against (#69)."""
    import torch
    torch.set_num_threads(threads)
    a, b = (torch.from_numpy(x).to(torch.bfloat16) for x in inputs(n))
    return "torch.mm bfloat16", best_time(lambda: torch.mm(a, b), lambda: None)
