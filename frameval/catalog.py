"""The one catalog: what the matrix is made of. Framework records (display
name, aliases, pip packages, kernel name, notes page) and Workload records
(parameters, quality metric and its direction, the spec's parameter counts),
the modes, devices, the numerical check's parts, and the profiles that size a run. Every table that names a
framework or a workload reads from here.

Standard library only: the runner reads it before its own environment exists,
and `frameval.nb` reads it inside the framework environments.

A profile only overrides notebook parameters; the notebooks' own defaults are
the spec's full sizes, so `full` overrides nothing.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Framework:
    key: str                # the name in folders, kernels and --frameworks
    display: str            # how the report and the kernels' display names write it
    aliases: tuple = ()     # other names --frameworks accepts
    packages: tuple = ()    # pip distributions that carry its version; the first is the one its spec pins
    notes: str = ""         # its page under docs/frameworks/
    module: str = ""        # what `import` loads it (default: the key)
    high_api: str = ""      # its high-level training API ("" : it has none)

    @property
    def import_name(self) -> str:
        return self.module or self.key

    @property
    def package(self) -> str:
        return self.packages[0] if self.packages else self.key

    def kernel(self, device: str = "cpu", gpu_spec: bool = True) -> str:
        """The kernel's name: a GPU kernel only where a GPU spec exists."""
        return f"frameval-{self.key}" + ("-gpu" if device == "gpu" and gpu_spec else "")


@dataclass(frozen=True)
class Quality:
    """A workload's quality figure: where a result holds it, how the report
    names it (an i18n key), and which direction is better (None: neither,
    e.g. a GAN's generator loss is no score)."""
    key: str
    label: str
    axis: str
    higher_is_better: bool | None
    per_epoch: bool  # True: read the last epoch that has it (top-level value first)


@dataclass(frozen=True)
class Workload:
    key: str
    params: tuple            # the parameters every notebook of the workload declares
    param_counts: dict       # trainable parameters per network, from docs/workloads.md
    quality: Quality

    def final(self, result: dict):
        """The run's quality figure, or None."""
        return final_value(result, self.quality.key) if self.quality.per_epoch else result.get(self.quality.key)


def final_value(result: dict, key: str):
    """A result's top-level `key`, else the last epoch that recorded it."""
    v = result.get(key) if isinstance(result, dict) else None
    if v is not None:
        return v
    epochs = result.get("epochs") if isinstance(result, dict) else None
    for e in reversed(epochs if isinstance(epochs, list) else []):
        if isinstance(e, dict) and key in e:
            return e.get(key)
    return None


# The seeds' six, then JAX (Flax + optax), the seventh.
FRAMEWORK_RECORDS = (
    Framework("torch", "PyTorch", ("pytorch",), ("torch",), "torch.md"),
    Framework("tensorflow", "TensorFlow", ("tf",), ("tensorflow", "tensorflow-cpu", "keras"), "tensorflow.md",
              high_api="keras.Model.fit"),
    Framework("paddle", "PaddlePaddle", ("paddlepaddle",), ("paddlepaddle", "paddlepaddle-gpu"), "paddle.md",
              high_api="paddle.Model.fit"),
    Framework("mindspore", "MindSpore", ("ms",), ("mindspore",), "mindspore.md", high_api="mindspore.train.Model.train"),
    Framework("megengine", "MegEngine", ("mge",), ("megengine",), "megengine.md"),
    Framework("mxnet", "MXNet", ("mx",), ("mxnet", "mxnet-cu"), "mxnet.md",
              high_api="mxnet.gluon.contrib.estimator.Estimator"),
    Framework("jax", "JAX", ("flax",), ("jax", "jaxlib", "flax", "optax"), "jax.md"),
)
BY_KEY = {f.key: f for f in FRAMEWORK_RECORDS}
FRAMEWORKS = tuple(f.key for f in FRAMEWORK_RECORDS)
# Frameworks that run when named (--frameworks X) but are not in "all", the
# default matrix. Empty: JAX joined the default once the quick report of all
# seven fitted in ten minutes on 2 cores.
OPT_IN_FRAMEWORKS: tuple = ()
# The LeNet notebooks that train through the framework's high-level API when
# `api = "high"` (docs/high-level-api.md): every framework that has one.
HIGH_API_NOTEBOOKS = ("tensorflow", "paddle", "mxnet", "mindspore")
HIGH_API_WORKLOADS = ("lenet",)
APIS = ("basic", "high")
DISPLAY_NAMES = {f.key: f.display for f in FRAMEWORK_RECORDS}
ALIASES = {a: f.key for f in FRAMEWORK_RECORDS for a in f.aliases}

MODES = ("graph", "eager")
DEVICES = ("cpu", "gpu")

# The parameters every notebook of a workload declares, in every framework
# (ilkarman-style shared params). A test checks each notebook's parameters cell.
COMMON_PARAMS = ("mode", "device", "epochs", "batch_size", "lr", "seed", "threads", "max_train_samples", "out_dir")
WORKLOAD_RECORDS = (
    Workload("lenet", COMMON_PARAMS + ("dataset", "api"), {"lenet": 61706},
             Quality("test_acc", "col_test_acc", "axis_accuracy", True, True)),
    Workload("dcgan", COMMON_PARAMS + ("dataset",), {"generator": 2280896, "discriminator": 212865},
             Quality("gen_loss", "col_gen_loss", "axis_final_gen_loss", None, True)),
    Workload("lstm", COMMON_PARAMS + ("window", "hidden", "series"), {"lstm": 4385},
             Quality("val_r2", "col_val_r2", "axis_r2", True, False)),
)
WORKLOAD_BY_KEY = {w.key: w for w in WORKLOAD_RECORDS}

# The sizes of the data sets the workloads train on, known before any cache is
# prepared (the runner checks parameter combinations against them before it
# builds anything; a test compares them with the prepared caches).
MNIST_SIZES = {"embedded": {"train": 4000, "test": 1000}, "full": {"train": 60000, "test": 10000}}
SERIES_POINTS = {"co2": 2284}   # statsmodels' weekly Mauna Loa CO2, gaps filled
SERIES_TRAIN_FRACTION = 0.75    # the LSTM's chronological split of its windows

# The parts of the numerical check (result["check"], written by
# frameval/nb/check.py), in the order the check prints them and the report shows them.
CHECK_SECTIONS = ("forward", "losses", "grads", "update", "running")
# The check before its second version (one optimizer step where "update" now
# takes k) wrote "step"; the report still reads it in results of that time.
LEGACY_CHECK_SECTIONS = ("step",)
# What a reader of any result looks for, in the report's column order.
CHECK_SECTIONS_READ = CHECK_SECTIONS[:3] + LEGACY_CHECK_SECTIONS + CHECK_SECTIONS[3:]
WORKLOADS = tuple(w.key for w in WORKLOAD_RECORDS)
WORKLOAD_PARAMS = {w.key: w.params for w in WORKLOAD_RECORDS}
SPEC_PARAM_COUNTS = {w.key: w.param_counts for w in WORKLOAD_RECORDS}
# A framework that keeps two LSTM bias vectors has 128 more: structural, not a mismatch.
LSTM_TWO_BIAS_COUNT = 4513

# Quick: the whole default matrix (7 frameworks x 3 workloads, graph mode) in
# under ten minutes on a 2-core CPU, with equal work in every framework (the
# same samples, batch and epochs) and quality figures that mean something:
# LeNet on all 4,000 embedded training digits for 5 epochs (>= 95% test
# accuracy), the LSTM for 15 epochs (validation R^2 0.93; 0.96 at 20). The
# DCGAN trains 2 epochs of 160 samples in 5 steps of 32: the first epoch carries
# the compile, the second's five steps are its five steady timing windows (every
# speed figure rests on at least five; at 2 steps of 64 it rested on one epoch
# of 2). MegEngine, the slowest here, took ~13 s a step of 64 on 2 cores.
# Enough to time it, far from enough to
# draw digits (that takes about an epoch of full MNIST: the full profile, on a
# GPU). Measured idle with all seven: 9 min 47 s with the DCGAN at 3 epochs and
# the LSTM at 20, too close to the target; these sizes leave a margin.
PROFILES = {
    "quick": {
        "lenet": {"epochs": 5, "max_train_samples": 0},
        "dcgan": {"epochs": 2, "batch_size": 32, "max_train_samples": 160},
        "lstm": {"epochs": 15},
    },
    # The spec's sizes on the real data: the notebooks' own defaults, on full MNIST
    # (training on the subset at these sizes takes an explicit -p dataset=embedded).
    "full": {"lenet": {"dataset": "full"}, "dcgan": {"dataset": "full"}, "lstm": {}},
}
# The default --timeout per profile. A quick run takes seconds to minutes, so
# 30 minutes only ever catches a hang. A full run's length spans a factor of
# 40 between frameworks: TensorFlow's full DCGAN (50 epochs of 160 s) is about
# 2 h 15 min on this 2-core CPU and MegEngine's would be days, so the full
# profile has no default limit (None); --timeout sets one. A 6-epoch DCGAN
# killed at 30 minutes, after 4 epochs, is how this was found.
PROFILE_TIMEOUT_S = {"quick": 1800.0, "full": None}
# Per-framework overrides of a profile. Empty on purpose: a smaller size for a
# slower framework makes its epochs incomparable (the report ranks per sample,
# but equal work is the honest default).
PROFILE_FRAMEWORK_OVERRIDES: dict = {}


def canonical_framework(name: str) -> str:
    return ALIASES.get(name.lower(), name.lower())


def framework_name(fw: str) -> str:
    """The display name, or the key itself for a framework the catalog lacks."""
    return DISPLAY_NAMES.get(fw, fw)


def order_key(fw: str) -> tuple:
    """Report order: the default matrix's frameworks, then the opt-in ones, then any other."""
    known = FRAMEWORKS + OPT_IN_FRAMEWORKS
    return (known.index(fw) if fw in known else len(known), fw)
