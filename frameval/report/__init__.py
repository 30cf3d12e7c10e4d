"""The report: merge result folders into a Markdown report (images in `assets/`)
and a self-contained HTML report, in English or Chinese.

    from frameval import report
    info = report.build(["out/"], "out/report", lang="zh", title="...", author="...")
    report.finish(info)     # raises ReportIncomplete naming the parts that could not be drawn

Modules: `spec` (the audited facts), `model` (rows, each holding its runs'
`frameval.result.Result`), `cells` (a table's cells), `tables` (comparison,
memory, code size, errors), `audit`, `check` (same function?), `versions` and
`comparison` (two versions of a framework: the verdict table; the verdicts
are frameval/stats.py's), `defects`, `findings`, `media` and `charts`
(matplotlib charts, DCGAN GIFs), `context` (environment, metadata,
reproduce), `guard` (a part that fails is shown, not fatal), `render`
(Jinja2), `i18n` (strings from `templates/strings/<lang>.json`), `fmt`
(numbers, "n/a", escaping).
"""
from .build import build  # noqa: F401
from .guard import ReportError, ReportIncomplete  # noqa: F401
from .i18n import LANGS, Strings  # noqa: F401


def finish(info: dict) -> None:
    """The collector's exit status: raise `ReportIncomplete` (one line naming
    what failed) when some part of the written report could not be drawn."""
    problems = info.get("problems") or []
    if problems:
        raise ReportIncomplete(f"report written ({info.get('md')}, {info.get('html')}), but {len(problems)} part(s) "
                               f"could not be drawn: " + "; ".join(problems))


__all__ = ["build", "finish", "LANGS", "Strings", "ReportError", "ReportIncomplete"]
