"""PaddlePaddle helpers shared by notebooks/paddle/{lenet,dcgan,lstm}.ipynb.

The setup cell calls, in this order (see docs/frameworks/paddle.md, "Traps"):

    rec = nb.Recorder(...)                 # thread env vars first
    fw.prepare_env(rec)                    # log levels, warnings, HOME
    with fw.drop_omp_warning():
        import paddle
    ...
    rec.after_import(paddle.__version__, **fw.gpu_hooks(gpu))

Paddle reads its log levels and the home directory at import, so this module
does not import paddle at module level: `prepare_env` must run before it.
"""
import contextlib
import io
import os
import sys
import warnings

from frameval.nb.paths import user_cache_dir


def prepare_env(rec):
    """Before `import paddle`: quiet logs and move Paddle's home-dir writes into the run's work/ folder."""
    # GLOG_v > 0 (MindSpore's "quiet" value 4 is Paddle's "verbose") prints whole IR programs on stdout.
    os.environ["GLOG_v"] = "0"
    os.environ.setdefault("GLOG_minloglevel", "2")                   # C++ INFO lines ("New Executor is Running")
    warnings.filterwarnings("ignore", module=r"paddle(\.|$)")        # e.g. "No ccache found" at import
    # Paddle writes under ~/.cache/paddle: a dataset folder at import, to_static's converted sources on first call.
    # There is no Paddle variable for it, so HOME points at the run's work/ folder for this kernel from here on;
    # frameval's data cache keeps its path.
    os.environ.setdefault("FRAMEVAL_CACHE_DIR", str(user_cache_dir()))
    os.environ["HOME"] = str(rec.out / "work")


@contextlib.contextmanager
def drop_omp_warning():
    """Around `import paddle`: drop its stderr lines "WARNING: OMP_NUM_THREADS set to N, not 1 ..." (printed
    whenever the recorder set it above 1); every other stderr line is printed after the import."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            yield
    finally:
        print("".join(l for l in err.getvalue().splitlines(True) if "OMP_NUM_THREADS" not in l), end="", file=sys.stderr)


def gpu_hooks(gpu):
    """`rec.after_import` keywords: clock sync, allocator peak and GPU name on the GPU build; None on the CPU."""
    import paddle

    cuda = paddle.device.cuda
    return dict(sync=cuda.synchronize if gpu else None,
                reset_device_peak=cuda.reset_max_memory_allocated if gpu else None,
                device_peak_mb=(lambda: cuda.max_memory_allocated() / 1e6) if gpu else None,
                gpu_name=cuda.get_device_name(0) if gpu else None)


def count_params(model):
    """Trainable parameters. BatchNorm's `_mean`/`_variance` are in `parameters()` too, with stop_gradient=True."""
    return sum(p.numel().item() for p in model.parameters() if not p.stop_gradient)
