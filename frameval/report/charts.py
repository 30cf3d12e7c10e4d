"""Charts (matplotlib, Agg) and DCGAN animations (imageio), written into the
report's assets folder. Labels come in the report's language; for Chinese a
CJK font is loaded (the `mplfonts` package ships Noto Sans CJK SC; system
fonts are the fallback) and every glyph that would render as a box is recorded
in `Charts.missing_glyphs`, so the report and the tests can see it."""
from __future__ import annotations

import importlib.util
import logging
import math
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import font_manager  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from .. import frameworks  # noqa: E402
from . import fmt  # noqa: E402
from ..catalog import FRAMEWORKS  # noqa: E402  (the registry, in its order)

# Each framework's colour is in its record (frameworks/<fw>/__init__.py); one
# without a colour, or a name that is no framework, takes one of these.
EXTRA = ("#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")
PLOT_MAX = 1e100  # larger magnitudes overflow an axis with its margins: not drawn (the tables show them)
CJK_FILES = ("NotoSansCJKsc-Regular.otf", "NotoSansCJK-Regular.ttc", "NotoSansSC-Regular.otf",
             "SourceHanSansSC-Regular.otf", "wqy-microhei.ttc", "wqy-zenhei.ttc", "SimHei.ttf")


def plottable(v):
    """The value as a float an axis can hold, or None (not a finite number, or absurdly large)."""
    x = fmt.num(v)
    return x if x is not None and abs(x) <= PLOT_MAX else None


def _xy(ys) -> list:
    """A curve's points: a value per epoch at x = epoch (1, 2, ...), or (x, y) pairs as given."""
    return [v if isinstance(v, (tuple, list)) and len(v) == 2 else (e + 1, v) for e, v in enumerate(ys)]


def find_cjk_font() -> Path | None:
    """A font file with simplified-Chinese glyphs: mplfonts' Noto Sans CJK SC
    first (pip-installed with the runner environment), then the system's."""
    spec = importlib.util.find_spec("mplfonts")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        for name in CJK_FILES:
            p = Path(loc) / "fonts" / name
            if p.is_file():
                return p
    for d in (Path("/usr/share/fonts"), Path("/usr/local/share/fonts"), Path.home() / ".fonts"):
        if d.is_dir():
            for name in CJK_FILES:
                hit = next(iter(sorted(d.rglob(name))), None)
                if hit:
                    return hit
    return None


class _GlyphLog(logging.Handler):
    def __init__(self, sink):
        super().__init__(logging.WARNING)
        self.sink = sink

    def emit(self, record):
        msg = record.getMessage()
        if "missing from" in msg and "Glyph" in msg:
            self.sink.add(msg)


class Charts:
    def __init__(self, assets: Path, lang: str = "en", prefix: str = ""):
        self.assets = Path(assets)
        self.assets.mkdir(parents=True, exist_ok=True)
        self.lang = lang
        self.prefix = prefix
        self.missing_glyphs: set = set()
        self.font_file = None
        self.specs: dict = {}  # {file: {"xscale", "marks", "xlim": [per panel]}}: what each chart drew, for tests
        families = ["DejaVu Sans"]
        if lang != "en":
            self.font_file = find_cjk_font()
            if self.font_file:
                font_manager.fontManager.addfont(str(self.font_file))
                name = font_manager.FontProperties(fname=str(self.font_file)).get_name()
                families = [name, "DejaVu Sans"]
        self.rc = {"font.family": "sans-serif", "font.sans-serif": families, "axes.unicode_minus": False,
                   "figure.dpi": 100, "savefig.dpi": 110, "font.size": 9, "axes.titlesize": 10,
                   "axes.spines.top": False, "axes.spines.right": False,
                   # never an offset over an axis ("R²e-7+9.33307e-1", #67): the ticks read as they are
                   "axes.formatter.useoffset": False}

    # ----------------------------------------------------------- plumbing
    def _save(self, fig, name: str) -> str:
        fname = f"{self.prefix}{name}.png"
        handler = _GlyphLog(self.missing_glyphs)
        loggers = [logging.getLogger(n) for n in ("matplotlib", "matplotlib.backends.backend_agg",
                                                  "matplotlib._text_helpers", "matplotlib.font_manager")]
        for lg in loggers:
            lg.addHandler(handler)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fig.savefig(self.assets / fname, bbox_inches="tight")
            for w in caught:
                msg = str(w.message)
                if "missing from" in msg and "Glyph" in msg:
                    self.missing_glyphs.add(msg)
        finally:
            for lg in loggers:
                lg.removeHandler(handler)
            plt.close(fig)
        return fname

    def _fig(self, w=7.0, h=3.4, ncols=1, nrows=1):
        with plt.rc_context(self.rc):
            fig, axes = plt.subplots(nrows, ncols, figsize=(w, h), squeeze=False)
        return fig, axes

    @staticmethod
    def color(fw: str, i: int = 0) -> str:
        rec = frameworks.find(fw)
        return rec.colour if rec and rec.colour else EXTRA[i % len(EXTRA)]

    # ----------------------------------------------------------- charts
    def bars(self, name, title, ylabel, items, errors=None, note=None):
        """items: [(label, value, framework, mode)], errors: [(low, high)] or None."""
        items = [(i, it) for i, it in enumerate(items) if plottable(it[1]) is not None]
        if not items:
            return None
        with plt.rc_context(self.rc):
            fig, axes = self._fig(w=max(4.5, 0.9 * len(items) + 2), h=3.4)
            ax = axes[0][0]
            xs = list(range(len(items)))
            vals = [plottable(it[1]) for _, it in items]
            cols = [self.color(it[2], i) for i, (_, it) in enumerate(items)]
            hatches = ["//" if it[3] == "eager" else "" for _, it in items]
            yerr = None
            if errors:
                lo = [max(0.0, v - (errors[i][0] if plottable(errors[i][0]) is not None else v)) for (i, _), v in zip(items, vals)]
                hi = [max(0.0, (errors[i][1] if plottable(errors[i][1]) is not None else v) - v) for (i, _), v in zip(items, vals)]
                yerr = [lo, hi]
            bars = ax.bar(xs, vals, color=cols, edgecolor="#333", linewidth=0.6, yerr=yerr, capsize=3)
            for b, h in zip(bars, hatches):
                b.set_hatch(h)
            tops = [v + (yerr[1][i] if yerr else 0.0) for i, v in enumerate(vals)]
            for x, v, top in zip(xs, vals, tops):
                ax.annotate(fmt.sig(v), (x, top), ha="center", va="bottom", fontsize=8, xytext=(0, 3),
                            textcoords="offset points")
            ax.margins(y=0.12)
            ax.set_xticks(xs)
            ax.set_xticklabels([it[0] for _, it in items], fontsize=8)
            ax.set_ylabel(ylabel)
            ax.set_title(title)
            if note:
                fig.text(0.01, -0.02, note, fontsize=7, color="#555", ha="left", va="top")
            return self._save(fig, name)

    def stacked_vs_step(self, name, title, ylabel, labels, layers, steps, step_label, note=None):
        """Per run (labels): its layer times stacked (layers: [(layer, [value per run])]), and
        beside it its measured step (steps: [value per run], hatched): what lies outside the
        layers shows as the step's bar above the stack. None when nothing is plottable."""
        if not labels or not any(plottable(v) is not None for v in steps):
            return None
        with plt.rc_context(self.rc):
            fig, axes = self._fig(w=max(5.0, 1.2 * len(labels) + 3.5), h=3.6)
            ax = axes[0][0]
            cmap = plt.get_cmap("tab20")
            bottoms = [0.0] * len(labels)
            for k, (layer, vals) in enumerate(layers):
                vv = [plottable(v) or 0.0 for v in vals]
                ax.bar([i - 0.2 for i in range(len(labels))], vv, width=0.38, bottom=bottoms, label=layer,
                       color=cmap(k % 20), edgecolor="#333", linewidth=0.4)
                bottoms = [b + v for b, v in zip(bottoms, vv)]
            st = [plottable(v) or 0.0 for v in steps]
            ax.bar([i + 0.2 for i in range(len(labels))], st, width=0.38, color="#ddd", edgecolor="#333",
                   linewidth=0.6, hatch="//", label=step_label)
            for i, (b, v) in enumerate(zip(bottoms, st)):
                ax.annotate(fmt.sig(b), (i - 0.2, b), ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                            textcoords="offset points")
                ax.annotate(fmt.sig(v), (i + 0.2, v), ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                            textcoords="offset points")
            ax.set_xticks(range(len(labels)))
            ax.set_xticklabels(labels, fontsize=8)
            ax.set_ylabel(ylabel)
            ax.set_title(title)
            ax.margins(y=0.15)
            ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
            if note:
                fig.text(0.01, -0.02, note, fontsize=7, color="#555", ha="left", va="top")
            self.specs[f"{self.prefix}{name}.png"] = {"stacks": bottoms, "steps": st}
            return self._save(fig, name)

    def grouped_bars(self, name, title, ylabel, labels, series):
        """series: [(series label, [values per label], hatch)] -> grouped bars; None when empty."""
        series = [s for s in series if any(plottable(v) is not None for v in s[1])]
        if not series or not labels:
            return None
        with plt.rc_context(self.rc):
            fig, axes = self._fig(w=max(4.5, 1.0 * len(labels) + 2.5), h=3.4)
            ax = axes[0][0]
            n = len(series)
            width = 0.8 / n
            greys = ("#4c72b0", "#a1c4e8", "#dd8452")
            for k, (slabel, vals, hatch) in enumerate(series):
                xs = [i - 0.4 + width * (k + 0.5) for i in range(len(labels))]
                vv = [plottable(v) if plottable(v) is not None else 0.0 for v in vals]
                bars = ax.bar(xs, vv, width=width, label=slabel, color=greys[k % len(greys)], edgecolor="#333",
                              linewidth=0.5, hatch=hatch)
                for x, v, b in zip(xs, vals, bars):
                    txt = fmt.mb(v) if plottable(v) is not None else fmt.NA
                    ax.annotate(txt, (x, b.get_height()), ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                                textcoords="offset points", rotation=90 if n > 2 else 0)
            ax.set_xticks(range(len(labels)))
            ax.set_xticklabels(labels, fontsize=8)
            ax.set_ylabel(ylabel)
            ax.set_title(title)
            ax.legend(fontsize=8, frameon=False)
            ax.margins(y=0.18)
            return self._save(fig, name)

    def curves(self, name, panels, xlabel):
        """panels: [(title, ylabel, [(label, framework, mode, [y per epoch, or (x in epochs, y)])])]."""
        panels = [p for p in panels if any(any(plottable(y) is not None for _, y in _xy(s[3])) for s in p[2])]
        if not panels:
            return None
        with plt.rc_context(self.rc):
            fig, axes = self._fig(w=3.6 * len(panels) + 0.6, h=3.3, ncols=len(panels))
            for ax, (title, ylabel, series) in zip(axes[0], panels):
                for i, (label, fw, mode, ys) in enumerate(series):
                    pts = [(x, plottable(y)) for x, y in _xy(ys) if plottable(x) is not None and plottable(y) is not None]
                    if not pts:
                        continue
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3,
                            color=self.color(fw, i), linestyle="--" if mode == "eager" else "-", label=label)
                ax.set_title(title)
                ax.set_xlabel(xlabel)
                ax.set_ylabel(ylabel)
                ax.xaxis.get_major_locator().set_params(integer=True)
            handles, labels = axes[0][0].get_legend_handles_labels()
            if handles:
                fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8, frameon=False,
                           bbox_to_anchor=(0.5, -0.02 - 0.05 * math.ceil(len(labels) / 4)))
            fig.tight_layout()
            return self._save(fig, name)

    def prediction(self, name, title, xlabel, ylabel, truth_label, truth, series, baseline=None):
        """LSTM: validation truth, the persistence baseline (label, values) and each run's prediction (ppm)."""
        if not truth or not series:
            return None
        with plt.rc_context(self.rc):
            fig, axes = self._fig(w=7.5, h=3.6)
            ax = axes[0][0]
            xs = list(range(len(truth)))
            ax.plot(xs, [plottable(v) for v in truth], color="black", linewidth=2.0, label=truth_label)
            if baseline:
                ax.plot(list(range(len(baseline[1]))), [plottable(v) for v in baseline[1]], color="grey",
                        linewidth=1.2, linestyle=":", label=baseline[0])
            for i, (label, fw, mode, ys) in enumerate(series):
                ax.plot(list(range(len(ys))), [plottable(v) for v in ys], color=self.color(fw, i), linewidth=1.0,
                        linestyle="--" if mode == "eager" else "-", label=label, alpha=0.85)
            ax.set_title(title)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.legend(fontsize=7, frameon=False, ncol=2)
            return self._save(fig, name)

    def scaling(self, name, panels, note=None):
        """Lines against a log x axis, one per series, with error bars where given.
        panels: [(title, xlabel, ylabel, [(label, framework, mode, [(x, y, low, high)])])]."""
        panels = [p for p in panels if any(plottable(pt[1]) is not None for s in p[3] for pt in s[3])]
        if not panels:
            return None
        with plt.rc_context(self.rc):
            fig, axes = self._fig(w=3.8 * len(panels) + 0.6, h=3.4, ncols=len(panels))
            for ax, (title, xlabel, ylabel, series) in zip(axes[0], panels):
                xs_all = sorted({pt[0] for s in series for pt in s[3]})
                seen: dict = {}
                for i, (label, fw, mode, pts) in enumerate(series):
                    k = seen[fw] = seen.get(fw, -1) + 1  # a framework's second series: another marker and shade
                    pts = [pt for pt in pts if plottable(pt[1]) is not None]
                    if not pts:
                        continue
                    ys = [pt[1] for pt in pts]
                    err = [[max(0.0, y - (pt[2] if pt[2] is not None else y)) for y, pt in zip(ys, pts)],
                           [max(0.0, (pt[3] if pt[3] is not None else y) - y) for y, pt in zip(ys, pts)]]
                    ax.errorbar([pt[0] for pt in pts], ys, yerr=err if any(any(e) for e in err) else None,
                                marker="os^Dv"[k % 5], markersize=4, capsize=3, color=self.color(fw, i),
                                alpha=1.0 if k == 0 else 0.6,
                                linestyle="--" if mode == "eager" else "-", label=label)
                ax.set_xscale("log", base=2)
                ax.set_xticks(xs_all)
                ax.set_xticklabels([f"{x:g}" for x in xs_all])
                ax.minorticks_off()
                ax.set_title(title)
                ax.set_xlabel(xlabel)
                ax.set_ylabel(ylabel)
                ax.set_ylim(bottom=0)
            handles, labels = axes[0][0].get_legend_handles_labels()
            if handles:
                fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8, frameon=False,
                           bbox_to_anchor=(0.5, -0.02 - 0.05 * math.ceil(len(labels) / 4)))
            if note:
                fig.text(0.01, -0.12 - 0.05 * math.ceil(len(labels) / 4), note, fontsize=7, color="#555", ha="left", va="top")
            fig.tight_layout()
            return self._save(fig, name)

    def hbar_panels(self, name, panels, note=None, line=None, log=False, points=False, band_label=""):
        """Summary figure: one panel per workload, horizontal bars.
        panels: [(title, xlabel, [(label, value, framework, best[, (low, high)])][, band])]; a (low, high)
        interval is drawn as an error bar, a band (low, high) as a grey span behind the points
        (`band_label` in its legend); `line` draws a reference (1.0: no change).
        `log`: a log axis (ratios: 2x slower sits as far from 1 as 2x faster, and a
        35x outlier does not squeeze the 1-3x range). `points`: a point with its
        interval on an axis fitted to the data, not a bar from 0 (a quality figure
        whose differences a 0-1 axis would hide)."""
        panels = [p for p in panels if any(plottable(v[1]) is not None for v in p[2])]
        if not panels:
            return None
        rows = max(len(p[2]) for p in panels)
        with plt.rc_context(self.rc):
            fig, axes = self._fig(w=3.4 * len(panels) + 0.8, h=0.32 * rows + 1.3, ncols=len(panels))
            lims = []
            for ax, (title, xlabel, items, *band) in zip(axes[0], panels):
                if band and band[0]:  # the seed noise where nothing is ranked: the points sit inside it
                    ax.axvspan(*band[0], color="#bbb", alpha=0.35, linewidth=0, label=band_label)
                self._hbar_panel(ax, [it for it in items if plottable(it[1]) is not None], log, points)
                if band and band[0]:
                    ax.set_xlim(min(ax.get_xlim()[0], band[0][0]), max(ax.get_xlim()[1], band[0][1]))
                    ax.legend(fontsize=7, frameon=False, loc="lower right")
                if line is not None:
                    ax.axvline(line, color="#555", linewidth=0.8, linestyle="--")
                ax.set_title(title)
                ax.set_xlabel(xlabel)
                lims.append([float(x) for x in ax.get_xlim()])
            if note:
                fig.text(0.01, -0.02, note, fontsize=7, color="#555", ha="left", va="top")
            fig.tight_layout()
            fname = self._save(fig, name)
        self.specs[fname] = {"xscale": "log" if log else "linear", "marks": "points" if points else "bars", "xlim": lims}
        return fname

    def _hbar_panel(self, ax, items, log, points):
        ys = list(range(len(items)))[::-1]
        vals = [plottable(it[1]) for it in items]
        iv = [it[4] if len(it) > 4 and it[4] else (v, v) for it, v in zip(items, vals)]
        xerr = [[max(0.0, v - lo) for v, (lo, _) in zip(vals, iv)], [max(0.0, hi - v) for v, (_, hi) in zip(vals, iv)]]
        colors = [self.color(it[2], i) for i, it in enumerate(items)]
        if points or log:
            for y, v, c, it, lo, hi in zip(ys, vals, colors, items, xerr[0], xerr[1]):
                ax.errorbar([v], [y], xerr=[[lo], [hi]] if lo or hi else None, fmt="o", color=c, capsize=2,
                            markersize=7 if it[3] else 5, markeredgecolor="black" if it[3] else c, elinewidth=0.8)
        else:
            ax.barh(ys, vals, color=colors, edgecolor=["black" if it[3] else "#333" for it in items],
                    linewidth=[2.0 if it[3] else 0.5 for it in items],
                    xerr=xerr if any(any(x) for x in xerr) else None, capsize=2, error_kw={"elinewidth": 0.8})
        for y, it, v, (_, hi) in zip(ys, items, vals, iv):
            # beyond the whisker's end, so the figure never sits on the bar's interval
            ax.annotate(fmt.sig(it[1]), (max(v, hi), y), va="center", ha="left", fontsize=7, xytext=(3, 0),
                        textcoords="offset points")
        ax.set_yticks(ys)
        ax.set_yticklabels([it[0] for it in items], fontsize=8)
        if log:
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}×"))
            ax.xaxis.set_minor_formatter(FuncFormatter(_minor_label))
        ax.margins(x=0.25, y=0.1 if (points or log) else ax.margins()[1])


# ------------------------------------------------------------------ DCGAN media
def _minor_label(x, _pos) -> str:
    """Label the 2 and 5 of each decade on a log axis, so 1-3x can be read."""
    if x <= 0:
        return ""
    m = x / 10 ** math.floor(math.log10(x))
    return f"{x:g}" if round(m, 6) in (2.0, 5.0) else ""


def read_gray(path) -> "object":
    import imageio.v3 as iio
    import numpy as np
    a = np.asarray(iio.imread(path))
    if a.ndim == 3:
        a = a[..., :3].mean(axis=2).astype("uint8")
    return a


def unscale(a, factor: int):
    """Undo pixel repetition (the grids are written at scale 3)."""
    if factor > 1 and a.shape[0] % factor == 0 and a.shape[1] % factor == 0:
        return a[::factor, ::factor]
    return a


def detect_scale(a) -> int:
    for f in (4, 3, 2):
        if a.shape[0] % f == 0 and a.shape[1] % f == 0:
            b = a[::f, ::f].repeat(f, 0).repeat(f, 1)
            if (b == a).all():
                return f
    return 1


def make_gif(frames_paths, out_path, duration_ms: int = 400) -> Path | None:
    """An animated GIF (looping) of the per-epoch grids, at the grids' native
    resolution (the HTML scales it up with pixelated rendering), with the last
    frame held longer."""
    import imageio.v3 as iio
    import numpy as np
    frames = []
    for p in frames_paths:
        try:
            a = read_gray(p)
        except Exception:  # noqa: BLE001 - a missing/corrupt grid leaves a gap, not a crash
            continue
        frames.append(unscale(a, detect_scale(a)))
    if not frames:
        return None
    shape = frames[0].shape
    frames = [f for f in frames if f.shape == shape]
    out_path = Path(out_path)
    if len(frames) == 1:  # one epoch: a still GIF (Pillow takes no list of durations for one frame)
        iio.imwrite(out_path, frames[0], extension=".gif")
        return out_path
    durations = [duration_ms] * (len(frames) - 1) + [duration_ms * 4]
    iio.imwrite(out_path, np.stack(frames), extension=".gif", duration=durations, loop=0)
    return out_path


def copy_png(src, out_path) -> Path | None:
    try:
        data = Path(src).read_bytes()
    except OSError:
        return None
    Path(out_path).write_bytes(data)
    return Path(out_path)


__all__ = ["Charts", "find_cjk_font", "make_gif", "copy_png", "FRAMEWORKS"]
