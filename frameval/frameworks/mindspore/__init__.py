"""MindSpore: its record (standard library only; frameval/frameworks/__init__.py)."""
from ..record import Framework

FRAMEWORK = Framework(
    "mindspore", "MindSpore", order=4, aliases=("ms",), packages=("mindspore",), notes="mindspore.md",
    # float32 as the framework computes by default, or strictly (nb/precision.py); both modes (#68)
    offers={"precision": {"cpu": ("default", "highest", "bf16"), "gpu": ("default", "highest")},
            "mode": {"cpu": ("graph", "eager"), "gpu": ("graph", "eager")}},
    high_api="mindspore.train.Model.train", high_api_note="api_data_mindspore", colour="#2ca02c",
    kernel_env={"GLOG_v": "4"},  # a level to MindSpore: 4 = critical only
    # loaded lazily at the first GRAPH_MODE compile (the gradient rules, JIT fallback): compiled at build time
    warm_imports=("mindspore.ops._grad_experimental", "mindspore.ops.operations._sparse_grad_ops",
                  "mindspore.ops.tensor_method", "mindspore.graph._parse.compile_config",
                  "mindspore.graph._parse.deprecated.deprecated_tensor_method",
                  "mindspore.graph._utils.jit_fallback_utils"),
    workarounds={
        "adam-eps": {
            "pattern": r"fw\.Adam\(",
            "summary": "nn.Adam adds epsilon before the bias correction (the Keras form); fw.Adam passes eps*sqrt(1-b2^t) to the same ops.Adam kernel, the spec's update",
            "versions": "2.10.0",
            "found_by": "the check (update errors: LSTM biases 6.8e-3, DCGAN bn0.bias 2.9e-2)",
            "cost": "none: the same kernel",
        },
        "deconv-pad-output-padding": {
            "pattern": r"2:-1, 2:-1\]",
            "summary": "Conv2dTranspose(pad_mode='pad', padding=2, output_padding=1) gives the right shape and wrong numbers (3.0 off PyTorch's); the stride-2 layers run pad_mode='valid' (the full 2H+3 output) and slice [2:-1]",
            "versions": "2.10.0",
            "found_by": "comparing the layer with PyTorch's on random inputs",
            "cost": "the full output is computed, then cropped",
            "substitute": "valid transposed convolution + crop",
        },
        "onednn-reference-conv": {
            "pattern": r"setdefault\(\"ONEDNN_MAX_CPU_ISA\"",
            "summary": "the bundled oneDNN runs every convolution with a reference kernel on AVX-512 CPUs (about 50x slower); ONEDNN_MAX_CPU_ISA=AVX2 is set before the import (a value of your own wins)",
            "versions": "2.10.0",
            "found_by": "a measurement (oneDNN picked jit_uni_ncsp:conv+ref:any: 1.0 s against 0.02 s for one conv)",
            "cost": "none: faster (the LSTM and the GPT have no convolution; it is set there too, so that every MindSpore run is alike)",
        },
        "set-data-detaches-adam": {
            "pattern": r"fw\.assign\(",
            "summary": "Parameter.set_data swaps the storage and the compiled (@jit) optimizer update keeps writing the old one; the weights are put back after the check with ops.assign (fw.assign)",
            "versions": "2.10.0",
            "found_by": "training after the check stopped moving the weights",
            "cost": "none",
        },
    })
