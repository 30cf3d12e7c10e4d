"""MindSpore: its record (standard library only; frameval/frameworks/__init__.py)."""
from ..record import Framework

FRAMEWORK = Framework(
    "mindspore", "MindSpore", order=4, aliases=("ms",), packages=("mindspore",), notes="mindspore.md",
    high_api="mindspore.train.Model.train", high_api_note="api_data_mindspore", colour="#2ca02c",
    kernel_env={"GLOG_v": "4"},  # a level to MindSpore: 4 = critical only
    workarounds={
        "adam-eps": r"fw\.Adam\(",
        "deconv-pad-output-padding": r"2:-1, 2:-1\]",
        "onednn-reference-conv": r"setdefault\(\"ONEDNN_MAX_CPU_ISA\"",
        "set-data-detaches-adam": r"fw\.assign\(",
    })
