"""The light module every framework notebook imports: numpy + standard library only.

It holds what is the same in every framework: reading the prepared data,
the shared data order and noise, the shared initial weights, timers, memory
probes, the result recorder and image grids. A notebook adds only what is
specific to its framework: model, step, mode and device.
"""
from .data import (NOISE_DIM, NoiseStream, batches, eval_batches, fixed_noise, load_co2,
                   load_mnist, steps_per_epoch)
from .plots import plot_curves, svg_lines
from .params import collect as parameters
from .images import grid, write_png
from .measure import Stopwatch, peak_rss_mb, rss_mb
from .record import Recorder, count_params
from .weights import count_trainable, init_weights, trainable_names

__all__ = ["NOISE_DIM", "NoiseStream", "batches", "eval_batches", "fixed_noise", "load_co2", "load_mnist",
           "steps_per_epoch", "grid", "write_png", "Stopwatch", "peak_rss_mb", "rss_mb", "Recorder",
           "count_params", "count_trainable", "init_weights", "trainable_names", "show_png", "parameters", "plot_curves", "svg_lines"]


def show_png(path, width=None):
    """Show a PNG inline when running in Jupyter; silently nothing elsewhere."""
    try:
        from IPython.display import Image, display
        display(Image(filename=str(path), width=width))
    except Exception:
        pass
