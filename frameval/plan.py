"""From command-line choices to a validated list of Runs (standard library only,
so that bad input is refused before any environment is built).

Parameter resolution, lowest to highest: the notebook's parameters cell, the
profile, the profile's per-framework override, `-p key=value`, then
`-p workload.key=value`. Every name and value is checked against the
notebook's parameters cell (papermill itself only warns about unknown names).
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path

from . import notebook as nbfile
from . import files, versions
from .envs.spec import PinError, key as framework_key
from .paths import REPO, notebook_path
from .catalog import not_offered
from .catalog import (APIS, BY_KEY, HIGH_API_NOTEBOOKS, WORKLOAD_BY_KEY, WORKLOAD_PARAMS, DEVICES, FRAMEWORKS, MODES, PRECISIONS,
                      PROFILES, WORKLOADS, DEFAULT_WORKLOADS, canonical_framework)

# Set by the runner from its own options, not with -p.
RESERVED = {"mode": "--mode", "device": "--device", "out_dir": "--out",
            "resume_from": "-p resume_check=true (the runner's second kernel resumes from the run's checkpoint)"}
# Value ranges the notebooks rely on.
RULES = {
    "epochs": (1, "a positive integer"), "batch_size": (1, "a positive integer"),
    "lr": (0.0, "a positive number"), "threads": (0, "0 (all cores) or more"),
    "max_train_samples": (0, "0 (all) or more"), "seed": (0, "0 or more"),
    "serve_calls": (1, "a positive integer (100 or more for a p99)"),
}
# A workload's own parameters have their rules in its record (param_rules, param_values).
ALLOWED = {"api": APIS, "precision": PRECISIONS}


MAX_REPEATS = 100
# --serve's timed calls per batch size: the fewest with a 99th percentile that is not just the slowest
# call (fewer, with -p serve_calls, and the report says p99 is not available: docs/serving.md)
SERVE_CALLS = 100
# "off": the runs leave serving out unless -p serve=true asks (tests/conftest.py sets it: the suite's
# hundreds of tiny runs would each pay a framework import and an export; its serving tests ask)
SERVE_DEFAULT_VAR = "FRAMEVAL_SERVE_DEFAULT"
MAX_SEEDS = 100


def parse_seeds(text) -> list:
    """--seeds: "5" is five seeds, 0 to 4; "0,1,4" (a comma list) those seeds.
    [] when not given: each notebook's own seed, one run."""
    text = str(text or "").strip()
    if not text:
        return []
    items = [x.strip() for x in text.split(",")]
    if not all(x.isdigit() for x in items if x) or not any(items):
        raise PlanError(f"--seeds {text!r}: a count (5: seeds 0 to 4) or a comma list of seeds (0,1,4)")
    if "," not in text:
        n = int(items[0])
        if not 1 <= n <= MAX_SEEDS:
            raise PlanError(f"--seeds {n}: must be 1 to {MAX_SEEDS}")
        return list(range(n))
    seeds = list(dict.fromkeys(int(x) for x in items if x))
    if len(seeds) > MAX_SEEDS:
        raise PlanError(f"--seeds: {len(seeds)} seeds, at most {MAX_SEEDS}")
    return seeds


class PlanError(ValueError):
    """Bad input: the message is one line that names the problem."""


@dataclass
class Run:
    framework: str
    workload: str
    mode: str
    device: str
    params: dict
    notebook: Path
    profile: str
    repeat: int = 1
    profile_notes: list = field(default_factory=list)
    pin: str = ""  # a framework version other than its spec's (--frameworks paddle==3.2.2)
    sweep: dict = field(default_factory=dict)  # the swept parameters' values of this run (-p batch_size=16,64)
    seed: int | None = None  # a replicate of --seeds: its own folder (seed_dir) and cache key, one row with its twins
    seed_dir: str = ""       # "" for the notebook's own seed, else "seed-<n>" inside the run's folder

    @property
    def fw_key(self) -> str:
        """The framework as planned: "paddle", or "paddle@3.2.2" for a pinned version
        (its run folders, environment and kernel are its own)."""
        return framework_key(self.framework, self.pin)

    @property
    def tag(self) -> str:
        """The swept values, "batch_size=16+threads=1" ("" outside a sweep): in the
        run's folder name, so each value has its own folder and result."""
        return files.params_tag(self.sweep)

    @property
    def name(self) -> str:
        return f"{self.fw_key}/{files.run_folder(self.workload, self.mode, self.device, self.tag)}"

    @property
    def replicate(self) -> str:
        """" seed 3 repeat 2", " repeat 2", " seed 3" or "": which replicate of its run this is."""
        return ("" if self.seed is None else f" seed {self.seed}") + ("" if self.repeat == 1 else f" repeat {self.repeat}")


def split_list(value: str, allowed, what: str, aliases=None, opt_in=(), default=None) -> list:
    """A comma list checked against `allowed` ("all" is all of them); names in
    `opt_in` are accepted too but are not part of "all"; "default" is `default`
    (where given: the default matrix's workloads)."""
    items = []
    for raw in (value or "").split(","):
        raw = raw.strip()
        if not raw:
            continue
        if raw == "all" or (raw == "default" and default is not None):
            items.extend(allowed if raw == "all" else default)
            continue
        item = (aliases or (lambda x: x))(raw)
        if item not in allowed and item not in opt_in:
            raise PlanError(f"unknown {what} {raw!r}; choose from {', '.join((*allowed, *opt_in))}")
        items.append(item)
    if not items:
        raise PlanError(f"no {what} given")
    return list(dict.fromkeys(items))


def parse_overrides(pairs) -> dict:
    """['epochs=2', 'lenet.lr=0.002'] -> {None: {'epochs': '2'}, 'lenet': {'lr': '0.002'}}."""
    out: dict = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise PlanError(f"-p {pair!r}: expected key=value (or workload.key=value)")
        key, value = pair.split("=", 1)
        key = key.strip()
        scope = None
        if "." in key:
            scope, key = key.split(".", 1)
            if scope not in WORKLOADS:
                raise PlanError(f"-p {pair!r}: unknown workload {scope!r}; choose from {', '.join(WORKLOADS)}")
        if key in RESERVED:
            raise PlanError(f"-p {pair!r}: {key} is set with {RESERVED[key]}, not -p")
        out.setdefault(scope, {})[key] = value.strip()
    return out


def resolve(key: str, raw, default, where: str, workload: str | None = None) -> list:
    """A -p value as a list of values: one, or a sweep's ("16,64,256"), each coerced."""
    if not (isinstance(raw, str) and "," in raw):
        return [coerce(key, raw, default, where, workload)]
    items = [x.strip() for x in raw.split(",")]
    if not all(items):
        raise PlanError(f"-p {key}={raw}: an empty value in the list; write e.g. {key}=16,64,256")
    return list(dict.fromkeys(coerce(key, x, default, where, workload) for x in items))


def rules_of(workload: str | None) -> tuple:
    """(ranges, allowed values): the common rules and the workload record's own."""
    wl = WORKLOAD_BY_KEY.get(workload) if workload else None
    return ({**RULES, **(wl.param_rules if wl else {})}, {**ALLOWED, **(wl.param_values if wl else {})})


def coerce(key: str, raw, default, where: str, workload: str | None = None):
    """Convert a -p string to the type of the parameters cell's default, and check its range."""
    if isinstance(raw, str):
        try:
            if isinstance(default, bool):
                if raw.lower() not in ("true", "false", "1", "0"):
                    raise ValueError
                value = raw.lower() in ("true", "1")
            elif isinstance(default, int):
                value = int(raw)
            elif isinstance(default, float):
                value = float(raw)
            else:
                value = raw
        except ValueError:
            kind = type(default).__name__
            raise PlanError(f"-p {key}={raw}: {key} must be {'an' if kind[0] in 'aeiou' else 'a'} {kind} ({where})") from None
    else:
        value = raw
    rules, allowed = rules_of(workload)
    if key in rules and isinstance(value, (int, float)) and not isinstance(value, bool):
        low, text = rules[key]
        if (value <= low) if key == "lr" else (value < low):
            raise PlanError(f"-p {key}={raw}: {key} must be {text} ({where})")
    if key in allowed and value not in allowed[key]:
        raise PlanError(f"-p {key}={raw}: choose from {', '.join(map(str, allowed[key]))} ({where})")
    return value


def build_plan(frameworks: str = "all", workloads: str = "default", mode: str = "graph", device: str = "cpu",
               profile: str = "quick", overrides=None, repeats: int = 1, seeds=()) -> list:
    entries = framework_entries(frameworks, device)
    fws = list(dict.fromkeys(fw for fw, _ in entries))
    wls = split_list(workloads, WORKLOADS, "workload", default=DEFAULT_WORKLOADS)
    if mode not in (*MODES, "both"):
        raise PlanError(f"unknown mode {mode!r}; choose from graph, eager, both")
    modes = list(MODES) if mode == "both" else [mode]
    if device not in DEVICES:
        raise PlanError(f"unknown device {device!r}; choose from {', '.join(DEVICES)}")
    if profile not in PROFILES:
        raise PlanError(f"unknown profile {profile!r}; choose from {', '.join(PROFILES)}")
    if not 1 <= repeats <= MAX_REPEATS:  # each repeat is a fresh kernel: thousands would run for days
        raise PlanError(f"--repeats {repeats}: must be 1 to {MAX_REPEATS}")
    ov = parse_overrides(overrides) if not isinstance(overrides, dict) else overrides
    seeds = parse_seeds(seeds) if isinstance(seeds, str) else list(seeds or [])
    if seeds and any("seed" in values for values in ov.values()):
        raise PlanError("--seeds and -p seed= both given; use one (--seeds makes one row of its seeds, "
                        "-p seed=0,1,2 a row per seed)")
    unwritten = [f"{fw} {wl}: not run: {wl} has no {fw} notebook yet (it has {', '.join(WORKLOAD_BY_KEY[wl].frameworks)})"
                 for fw in fws for wl in wls if not WORKLOAD_BY_KEY[wl].written_for(fw)]
    if len(unwritten) == len(fws) * len(wls):
        raise PlanError("; ".join(unwritten))
    cells = _parameter_cells(fws, wls)
    _check_overrides(ov, cells, wls)
    missing = [f"{fw}/{wl}" for (fw, wl), d in cells.items() if seeds and "seed" not in d]
    if missing:
        raise PlanError(f"--seeds: {', '.join(missing)} has no seed parameter")
    runs, left_out = [], []
    for fw, pin in entries:
        for wl in (w for w in wls if (fw, w) in cells):
            path = notebook_path(fw, wl)
            params, notes, swept = _resolved(fw, wl, cells[fw, wl], profile, ov)
            for combo in sweep_values(swept):
                if dict(params, **combo).get("api") == "high":
                    if fw not in HIGH_API_NOTEBOOKS:
                        left_out.append(api_note(fw, wl))
                        continue
                    combo = dict(combo, api="high")  # its own run folder, beside the basic loop's
                for m in modes:
                    for seed in seeds or [None]:
                        p = dict(params, **combo, mode=m, device=device, **({} if seed is None else {"seed": seed}))
                        why = not_offered(fw, p)
                        if why:  # a value the catalog knows but this framework's folder does not declare
                            raise PlanError(why)
                        if p.get("resume_check") and int(p.get("epochs") or 0) < 2:
                            raise PlanError(f"-p resume_check=true: {fw}/{wl} trains {p.get('epochs')} epoch(s); the "
                                            "checkpoint is taken after half the epochs, so it needs epochs of 2 or more")
                        sdir = "" if seed is None or seed == cells[fw, wl].get("seed") else f"seed-{seed}"
                        for k in range(1, repeats + 1):
                            runs.append(Run(fw, wl, m, device, p, path, profile, k,
                                            [f"{fw} {wl}: smaller {profile} size ({', '.join(notes)}) for a slow CPU kernel"]
                                            if notes else [], pin=pin, sweep=combo, seed=seed, seed_dir=sdir))
    if left_out and not runs:
        raise PlanError("api=high: " + "; ".join(dict.fromkeys(left_out)))
    for r in runs:  # the plan's notes say which frameworks the high-level API (or a missing notebook) left out, and why
        r.profile_notes.extend(dict.fromkeys(left_out + unwritten))
    return runs


def api_note(fw: str, wl: str) -> str:
    """Why a framework has no api=high run."""
    has = BY_KEY[fw].high_api
    return (f"{fw} {wl}: api=high not run: {fw} has {has}, but its notebook does not train through it yet" if has
            else f"{fw} {wl}: api=high not run: {fw} has no high-level training API")


def _parameter_cells(fws, wls) -> dict:
    """{(framework, workload): its notebook's parameters cell}; a missing or unreadable notebook is bad input."""
    cells = {}
    for fw in fws:
        for wl in (w for w in wls if WORKLOAD_BY_KEY[w].written_for(fw)):
            path = notebook_path(fw, wl)
            if not path.exists():
                raise PlanError(f"{fw}/{wl}: notebook {path.relative_to(REPO)} does not exist")
            try:
                cells[fw, wl] = nbfile.parameters(path)
            except nbfile.NotebookError as e:
                raise PlanError(f"{path.relative_to(REPO)}: {e}") from None
    return cells


def _check_overrides(ov: dict, cells: dict, wls) -> None:
    """A plain -p key must belong to some planned workload; a scoped one to its own."""
    for scope, values in ov.items():
        for key in values:
            owners = [wl for (fw, wl), d in cells.items() if key in d and (scope is None or wl == scope)]
            if scope is not None and scope not in wls and key in WORKLOAD_PARAMS[scope] and key not in RESERVED:
                continue  # a valid setting for a workload this plan does not run
            if not owners:
                takes = sorted(({k for (fw, wl), d in cells.items() if scope in (None, wl) for k in d}
                                | set(WORKLOAD_PARAMS.get(scope, ()))) - set(RESERVED))
                raise PlanError(f"-p {(scope + '.') if scope else ''}{key}: unknown parameter"
                                f"{' for ' + scope if scope else ''}; known: {', '.join(takes)}")


def _resolved(fw: str, wl: str, defaults: dict, profile: str, ov: dict) -> tuple:
    """(parameters, notes, {swept key: values}) of one notebook, layer by layer: the profile's
    values (the same for every framework: equal work), then -p for all workloads and for this one."""
    params, notes, swept = dict(defaults), [], {}
    # the suite's default (SERVE_DEFAULT_VAR) under everything else: a notebook without `serve` ignores it
    layers = [({"serve": False} if os.environ.get(SERVE_DEFAULT_VAR) == "off" else {}, "environment"),
              (PROFILES[profile].get(wl, {}), "profile"),
              (ov.get(None, {}), "-p"), (ov.get(wl, {}), "-p")]
    for values, where in layers:
        for key, raw in values.items():
            if key in defaults:
                got = resolve(key, raw, defaults[key], f"{fw}/{wl}", wl)
                params[key] = got[0]
                swept.pop(key, None)  # a later layer's single value ends an earlier sweep
                if len(got) > 1:
                    swept[key] = got
                if where == "framework":
                    notes.append(f"{key}={params[key]}")
    return params, notes, swept


def sweep_values(swept: dict) -> list:
    """[{key: value}] for every combination of the swept values ([{}] without a sweep)."""
    keys = sorted(swept)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(swept[k] for k in keys))]


def framework_entries(frameworks: str, device: str = "cpu") -> list:
    """[(framework, pin)] from --frameworks: "all", names, aliases and
    FRAMEWORK==VERSION pins; a pin equal to the spec's own is the bare name."""
    out = []
    for raw in (frameworks or "").split(","):
        if not raw.strip():
            continue
        try:
            name, pin = versions.parse_entry(raw)
            if pin and name == "all":
                raise PinError(f"--frameworks {raw.strip()!r}: pin one framework at a time, e.g. paddle==3.2.2")
            fws = split_list(name, FRAMEWORKS, "framework", canonical_framework)
            out += [(fw, versions.normalise(fw, pin, device)) for fw in fws]
        except PinError as e:
            raise PlanError(str(e)) from None
    if not out:
        raise PlanError("no framework given")
    return list(dict.fromkeys(out))
