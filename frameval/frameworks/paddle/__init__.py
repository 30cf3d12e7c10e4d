"""PaddlePaddle: its record (standard library only; frameval/frameworks/__init__.py)."""
from ..record import Framework

FRAMEWORK = Framework(
    "paddle", "PaddlePaddle", order=3, aliases=("paddlepaddle",), packages=("paddlepaddle", "paddlepaddle-gpu"),
    # float32 as the framework computes by default, or strictly (nb/precision.py); both modes (#68);
    # bf16 (#69): paddle.amp.auto_cast in graph mode only (eager on the CPU: not_offered, support.autocast)
    offers={"precision": {"cpu": ("default", "highest", "bf16"), "gpu": ("default", "highest")},
            "mode": {"cpu": ("graph", "eager"), "gpu": ("graph", "eager")}},
    notes="paddle.md", high_api="paddle.Model.fit", colour="#2932e1",
    # GLOG_v is verbosity to Paddle (4 = very loud), the opposite of MindSpore's
    kernel_env={"GLOG_v": "0", "GLOG_minloglevel": "2"},
    # A run's caches live in its folder, and Paddle's dy2static reads its call stacks
    # back by splitting on ",": under a path with a comma every graph run fails with
    # "invalid literal for int()" (seen; files.TAG_SEP).
    graph_path_forbids=",", graph_path_why="a comma (its dy2static splits its call stacks on ',')",
    # loaded lazily in the first run (to_static's recorder, the optimizer's fusion helpers, numpy's
    # submodules that paddle reaches): compiled at build time, not inside that run's figures
    warm_imports=("paddle.distributed.auto_parallel.fully_shard_fusion", "paddle.jit.dy2static.parameter_recorder",
                  "paddle.optimizer.fusion_utils", "numpy.f2py", "numpy.testing", "numpy.polynomial", "numpy.ma",
                  "numpy.fft", "numpy.random", "numpy.ctypeslib", "numpy.rec", "numpy.char", "numpy.strings"),
    workarounds={
        "to-static-whole-step": {
            "pattern": r"why=\"the Adam update runs in the dynamic graph",
            "summary": "to_static(full_graph=True) of the whole step fails (pir.Value has no attribute 'backward'); the forward is converted (its backward runs as the static program's), the Adam update runs in the dynamic graph",
            "versions": "3.3.1",
            "found_by": "building the graph-mode notebooks (the converted step raised)",
            "cost": "the update runs outside the graph (graph scope: forward + backward)",
        },
    })
