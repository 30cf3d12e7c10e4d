"""Inline curves for notebooks run by hand: small SVG line charts made with the
standard library (framework environments have no matplotlib)."""
from __future__ import annotations

import html
import math

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")


def svg_lines(series: dict, title: str = "", xlabel: str = "epoch", width: int = 360, height: int = 220) -> str:
    """{label: [y, ...]} -> an SVG line chart (x = 1..n). Non-numbers are skipped."""
    pts = {k: [(i + 1, float(v)) for i, v in enumerate(vals) if isinstance(v, (int, float)) and math.isfinite(v)]
           for k, vals in series.items()}
    allp = [p for v in pts.values() for p in v]
    ml, mr, mt, mb = 48, 10, 24, 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<text x="{width / 2}" y="15" text-anchor="middle" font-weight="bold">{html.escape(title)}</text>']
    if allp:
        x0, x1 = min(p[0] for p in allp), max(p[0] for p in allp)
        y0, y1 = min(p[1] for p in allp), max(p[1] for p in allp)
        x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + 1e-9 + abs(y0) * 0.01)

        def sx(x):
            return ml + (x - x0) / (x1 - x0) * (width - ml - mr)

        def sy(y):
            return height - mb - (y - y0) / (y1 - y0) * (height - mt - mb)

        out.append(f'<rect x="{ml}" y="{mt}" width="{width - ml - mr}" height="{height - mt - mb}" fill="none" stroke="#999"/>')
        for yv in (y0, (y0 + y1) / 2, y1):
            out.append(f'<text x="{ml - 4}" y="{sy(yv) + 4:.1f}" text-anchor="end">{yv:.3g}</text>')
        out.append(f'<text x="{ml}" y="{height - 8}">{x0:g}</text><text x="{width - mr}" y="{height - 8}" text-anchor="end">{x1:g}</text>')
        out.append(f'<text x="{(ml + width) / 2}" y="{height - 8}" text-anchor="middle">{html.escape(xlabel)}</text>')
        for n, (label, p) in enumerate(pts.items()):
            c = COLORS[n % len(COLORS)]
            if p:
                path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in p)
                out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{path}"/>')
                for x, y in p:
                    out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{c}"/>')
            out.append(f'<text x="{ml + 6}" y="{mt + 14 + 13 * n}" fill="{c}">{html.escape(label)}</text>')
    out.append("</svg>")
    return "".join(out)


def plot_curves(rec, *groups, xlabel="epoch"):
    """Show one chart per group of epoch metrics, e.g. (["train_loss", "test_loss"], ["test_acc"]).
    Returns None: it is the last line of a cell, and a returned list of SVG
    strings would be printed as raw markup under the chart."""
    charts = []
    for keys in groups:
        charts.append(svg_lines({k: [e.get(k) for e in rec.epochs] for k in keys}, title=", ".join(keys), xlabel=xlabel))
    try:
        from IPython.display import HTML, display
        display(HTML("<div style='display:flex;flex-wrap:wrap;gap:8px'>" + "".join(charts) + "</div>"))
    except Exception:
        pass
