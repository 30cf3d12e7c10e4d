"""MindSpore: its record (standard library only; frameval/frameworks/__init__.py)."""
from ..record import Framework

FRAMEWORK = Framework(
    "mindspore", "MindSpore", order=4, aliases=("ms",), packages=("mindspore",), notes="mindspore.md",
    # float32 as the framework computes by default, or strictly (nb/precision.py); both modes (#68)
    offers={"precision": {"cpu": ("default", "highest"), "gpu": ("default", "highest")},
            "mode": {"cpu": ("graph", "eager"), "gpu": ("graph", "eager")}},
    high_api="mindspore.train.Model.train", high_api_note="api_data_mindspore", colour="#2ca02c",
    kernel_env={"GLOG_v": "4"},  # a level to MindSpore: 4 = critical only
    # loaded lazily at the first GRAPH_MODE compile (the gradient rules, JIT fallback): compiled at build time
    warm_imports=("mindspore.ops._grad_experimental", "mindspore.ops.operations._sparse_grad_ops",
                  "mindspore.ops.tensor_method", "mindspore.graph._parse.compile_config",
                  "mindspore.graph._parse.deprecated.deprecated_tensor_method",
                  "mindspore.graph._utils.jit_fallback_utils"),
    workarounds={
        "adam-eps": r"fw\.Adam\(",
        "deconv-pad-output-padding": r"2:-1, 2:-1\]",
        "onednn-reference-conv": r"setdefault\(\"ONEDNN_MAX_CPU_ISA\"",
        "set-data-detaches-adam": r"fw\.assign\(",
    })
