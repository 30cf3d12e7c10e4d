"""PyTorch's determinism and precision switches (read by frameval/nb/determinism.py and
frameval/nb/precision.py, whose docstrings say why). Standard library only: read
from the framework the notebook already imported."""
from frameval.nb.determinism import attr, call, env_var
from frameval.nb.precision import Switch, attr_switch

# The switches' meanings: docs/reproduce.md, one row each.
DETERMINISM = (
    ("torch.use_deterministic_algorithms", call("are_deterministic_algorithms_enabled")),
    ("torch.backends.cudnn.deterministic", attr("backends.cudnn.deterministic")),
    ("torch.backends.cudnn.benchmark", attr("backends.cudnn.benchmark")),
    ("CUBLAS_WORKSPACE_CONFIG", env_var("CUBLAS_WORKSPACE_CONFIG")),
)

PRECISION = (
    attr_switch("torch", "backends.cuda.matmul.allow_tf32", False),
    attr_switch("torch", "backends.cudnn.allow_tf32", False),
    Switch("torch.get_float32_matmul_precision()", lambda m: m.get_float32_matmul_precision(), "highest",
           lambda m, v: m.set_float32_matmul_precision(v), cuda_only=False),  # "medium" is bfloat16 on the CPU too
)
