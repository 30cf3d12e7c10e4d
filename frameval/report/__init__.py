"""The report: merge result folders into a Markdown report (images in `assets/`)
and a self-contained HTML report, in English or Chinese.

    from frameval import report
    info = report.build(["out/"], "out/report", lang="zh", title="...", author="...")

Modules: `spec` (the audited facts), `model` (rows, tables, audit, check, errors),
`charts` (matplotlib charts, DCGAN GIFs), `render` (Jinja2), `i18n` (strings
from `templates/strings/<lang>.json`), `fmt` (numbers, "n/a", escaping).
"""
from .build import build  # noqa: F401
from .i18n import LANGS, Strings  # noqa: F401

__all__ = ["build", "LANGS", "Strings"]
