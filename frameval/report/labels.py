"""Short, honest labels of a run's state for the status cell, the audit and the
summary: how much of the training step graph mode compiled (from
`graph_scope`), whether the machine was busy (`machine`), how many timing
windows were outliers (`timing`), which optimizer algorithm an API name
means, and whether a value the framework cannot read back is "not readable"
rather than different. Each returns None where the record says nothing, so
that results of older schemas get no label that was not measured."""
from __future__ import annotations

import re

from ..result import Result, as_dict, as_list, number
from ..speed import OUTLIER_FACTOR
from . import fmt

SCOPE_PARTS = ("forward", "backward", "update")
# What a `why` says when the breaks are the optimizer's own (torch.optim breaks
# the graph around step(); the update is then a graph of its own).
_OPTIMIZER_BREAK = re.compile(r"torch\.optim|optimi[sz]er|\bstep\(\)", re.I)
# The API prefixes the notebooks put before an optimizer's name: "torch.optim.Adam",
# "optax.adam", "keras Adam", "paddle.optimizer.Adam", "nn.Adam", "mx.optimizer.Adam".
_API_PREFIX = re.compile(r"^.*[.\s]")


def scope_label(r: Result, mode: str, S):
    """(text, class) of how much of the training step a graph-mode run compiled;
    None for a run in another mode. `compiled` is true only for the whole step
    without a break, so compiled=False alone says nothing about what was
    compiled: the words come from `graph_scope`, or say it was not recorded."""
    if mode != "graph":
        return None
    gs = r.graph_scope
    if not gs:
        return S("label_scope_not_recorded"), ""
    inside = [p for p in SCOPE_PARTS if gs.get(p) is True]
    graphs, breaks = number(gs.get("graphs")), number(gs.get("graph_breaks"))
    if not inside or graphs == 0:
        return S("label_nothing_compiled"), "flag"
    if len(inside) < len(SCOPE_PARTS):
        outside = [p for p in SCOPE_PARTS if p not in inside]
        if len(inside) == 1:
            return S("label_part_only", part=S("label_" + inside[0])), "warn"
        return S("label_partial", inside="+".join(S("label_" + p) for p in inside),
                 outside="+".join(S("label_" + p) for p in outside)), "warn"
    return _whole_step(gs, graphs, breaks, S), ""


def _whole_step(gs, graphs, breaks, S) -> str:
    """"whole step, 1 graph", "whole step, 2 graphs (optimizer break)", or the
    counts as recorded ("whole step, 3 graphs, 2 breaks")."""
    counts = [] if graphs is None else [_count(S, "graph", graphs)]
    cause = ""
    if breaks and _OPTIMIZER_BREAK.search(str(gs.get("why") or "")):
        cause = S("label_optimizer_break")  # the graph count says it; the cause is what matters
        counts = counts or [_count(S, "break", breaks)]
    elif breaks:
        counts.append(_count(S, "break", breaks))
    return S("label_sep").join([S("label_whole")] + counts) + cause


def _count(S, what, n) -> str:
    return S(f"label_{what}_one") if n == 1 else S(f"label_{what}s", n=fmt.integer(n))


def compiled_nothing(r: Result, mode: str) -> bool:
    """A graph-mode run whose recorded scope holds no part of the step (the only
    graph-scope case worth an alert of its own: partial scopes are compared
    between runs by the audit's graph-scope row)."""
    gs = r.graph_scope
    if mode != "graph" or not gs:
        return False
    return not any(gs.get(p) is True for p in SCOPE_PARTS) or number(gs.get("graphs")) == 0


# Other processes' share of the machine's CPU time over a run above which its
# times are less reliable. Not the load average: a run that keeps every core
# busy lifts that to the core count by itself, and a default report's runs
# follow one another (each 1-minute average still holds the last run's threads).
BUSY_SHARE = 0.25


def busy_machine(r: Result):
    """(other processes' share of the CPUs, cores) when other work took more than
    BUSY_SHARE of the machine during the run; None when it did not, or the run
    recorded no such figure (older results)."""
    m = r.machine
    share, cores = number(m.get("other_share")), number(m.get("cores"))
    if share is None or not cores or share <= BUSY_SHARE:
        return None
    return share, int(cores)


def busy_text(r: Result, S):
    got = busy_machine(r)
    return None if got is None else S("label_busy", share=f"{got[0] * 100:.0f}%", cores=got[1])


def outlier_text(r: Result, S):
    """"1 of 6 windows over 3x the median time": outliers are counted in the
    record, never dropped from the median; None when there are none."""
    t = as_dict(r.timing)
    n, of = number(t.get("outlier_windows")), number(t.get("steady_windows"))
    if not n or n <= 0:
        return None
    return S("label_outliers", n=fmt.integer(n), of=fmt.integer(of) if of is not None else "?",
             x=f"{OUTLIER_FACTOR:g}")


def optimizer_algorithm(name) -> str:
    """The algorithm an optimizer's recorded name means, without its API prefix
    and case: "torch.optim.Adam", "optax.adam", "keras Adam" -> "adam"; "AdamW"
    stays "adamw" (another algorithm)."""
    return _API_PREFIX.sub("", str(name).strip()).lower()


def not_readable(e: dict) -> bool:
    """A threads_effective record that lists APIs the framework lacks: its None
    values are "not readable", not unknown and not different."""
    return bool(as_list(as_dict(e).get("missing")))
