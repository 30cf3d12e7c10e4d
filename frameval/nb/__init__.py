"""The light module every framework notebook imports: numpy + standard library only.

It holds what is the same in every framework: reading the prepared data,
the shared data order and noise, the shared initial weights, timers, memory
probes, the result recorder and image grids. A notebook adds only what is
specific to its framework: model, step, mode and device.
"""
from .data import (NOISE_DIM, NoiseStream, batches, eval_batches, fixed_noise,
                   load_mnist, steps_per_epoch)
from .plots import plot_curves, svg_lines
from .params import collect as parameters
from .images import grid, save_grid, show_last_grid, show_png, write_png
from .measure import Stopwatch, peak_rss_mb, rss_mb
from .record import Recorder, count_params
from .resume import Resume
from .serving import serve
from .weights import count_trainable, init_weights, trainable_names

__all__ = ["fid", "NOISE_DIM", "NoiseStream", "batches", "eval_batches", "fixed_noise", "load_co2", "load_mnist",
           "steps_per_epoch", "grid", "save_grid", "show_last_grid", "write_png", "forecast", "val_r2", "Stopwatch", "peak_rss_mb", "rss_mb", "Recorder",
           "count_params", "Resume", "serve", "count_trainable", "init_weights", "trainable_names", "show_png", "parameters", "plot_curves", "svg_lines"]


def __getattr__(name: str):
    """A name a workload's own folder gives the notebooks (its record's
    `nb_names`, e.g. the LSTM's `load_co2` and `forecast`, the DCGAN's `fid`
    module), imported when
    first asked: a kernel loads only its own workload's modules."""
    import importlib

    from .. import workloads
    for wl in workloads.REGISTRY.values():
        if name in wl.nb_names:
            module = importlib.import_module(f"{workloads.__name__}.{wl.key}.{wl.nb_names[name]}")
            return module if wl.nb_names[name] == name else getattr(module, name)  # a module by its own name: nb.fid
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
