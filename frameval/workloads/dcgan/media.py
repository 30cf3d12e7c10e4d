"""The DCGAN's report media (frameval/report/media.py asks the record's
`media` hook): each run's per-epoch image grids as an animated GIF, and its
last grid. The report's code, not a kernel's: it runs in the runner's
environment, and the run cache key leaves it out (frameval/sources.py)."""
from __future__ import annotations

from pathlib import Path

from ...report import charts as ch
from ...report import fmt


def grids(wrows, S, charts, name, assets_dir: Path, problems, out: dict) -> None:
    for i, w in enumerate(wrows):
        _run_media(w, i, S, name, assets_dir, problems, out)


def _run_media(w, i, S, name, assets_dir, problems, out):
    """The run's per-epoch grids as an animated GIF, and its last grid."""
    base = Path(w.result.dir or ".")
    paths = [base / str(g) for g in w.result.grids]
    paths = [p for p in paths if p.is_file()]
    if not paths:
        return
    stem = f"{name}-dcgan-{i:02d}-{fmt.anchor(w.fw)}-{fmt.anchor(w.mode)}-{fmt.anchor(w.device)}"
    gif = problems.run(S("what_gif", run=w.label), ch.make_gif, paths, assets_dir / f"{stem}.gif",
                       default=lambda it: it)
    if isinstance(gif, dict):
        out["gifs"].append({"error": gif["text"], "label": w.label, "epochs": len(paths)})
    elif gif:
        out["gifs"].append({"file": gif.name, "label": w.label, "epochs": len(paths)})
    png = problems.run(S("what_grid", run=w.label), ch.copy_png, paths[-1], assets_dir / f"{stem}-final.png",
                       default=lambda it: it)
    if isinstance(png, dict):
        out["grids"].append({"error": png["text"], "label": w.label, "epochs": len(paths)})
    elif png:
        out["grids"].append({"file": png.name, "label": w.label, "epochs": len(paths)})
