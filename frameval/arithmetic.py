"""The environment variables that change what a framework computes, not only
how fast (issue #47): TF32 overrides, default matmul precisions, XLA and oneDNN
flags, deterministic-kernel switches. One home, read by the runner's cache key
(execute.key_parts: a result made under other arithmetic is never reused) and,
inside the kernels, by the recorded math mode (frameval/nb/precision.py).
Standard library only: the runner reads it before any environment exists.
"""
from __future__ import annotations

import os

# Environment variables that change what a framework computes, not only how
# fast: each is part of the run's cache key and of its recorded math mode.
ENV = {
    "NVIDIA_TF32_OVERRIDE": "0 forbids TF32 in cuBLAS and cuDNN for every library in the process, over any framework switch",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1 lets torch's cuBLAS matmuls use TF32 whatever torch's flag says",
    "JAX_DEFAULT_MATMUL_PRECISION": "JAX's default precision for float32 matmuls and convolutions",
    "JAX_ENABLE_X64": "JAX's 64-bit types",
    "XLA_FLAGS": "XLA compiler flags (fusion, autotuning, GPU GEMM choices)",
    "TF_XLA_FLAGS": "TensorFlow's XLA auto-clustering",
    "TF_ENABLE_ONEDNN_OPTS": "TensorFlow's oneDNN CPU kernels (another summation order)",
    "ONEDNN_DEFAULT_FPMATH_MODE": "oneDNN may compute float32 as bfloat16 or TF32 (BF16, TF32, ANY)",
    "DNNL_DEFAULT_FPMATH_MODE": "the same, under oneDNN's older name",
    "MKL_CBWR": "MKL's code path (conditional numerical reproducibility)",
    "MXNET_CUDA_ALLOW_TENSOR_CORE": "MXNet's Tensor Core use",
    "MXNET_CUDA_TENSOR_OP_MATH_ALLOW_CONVERSION": "MXNet: float32 converted for Tensor Cores",
    "CUBLAS_WORKSPACE_CONFIG": "cuBLAS's deterministic workspace (another algorithm)",
    "TF_DETERMINISTIC_OPS": "TensorFlow's deterministic kernels",
    "MXNET_ENFORCE_DETERMINISM": "MXNet's deterministic kernels",
    "MXNET_CUDNN_AUTOTUNE_DEFAULT": "MXNet's cuDNN algorithm search",
}


def env_part(environ=None) -> dict:
    """{variable: value} of every variable in ENV that `environ` sets (default os.environ)."""
    env = os.environ if environ is None else environ
    return {k: env[k] for k in sorted(ENV) if k in env}
