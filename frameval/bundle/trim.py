"""A runner bundle trimmed to what a target interpreter lacks (`bundle
--runner-only --target-python PATH` or `--target-freeze FILE`): the runner's
lock (`environment.lock.txt`) against the target's installed packages.

Which lock pins a run needs: the closure, through the lock's own "# via"
lines, of the spec's requirements less those only the lab, the tests, Slurm,
uv or the Chinese chart font use (NOT_FOR_RUNS). Of those, a package the
target has is reused where its version meets the spec's own specifier for it
(papermill==2.6.0, mistune>=3); every other one is packed at the lock's
version, for the target's Python and platform.

Standard library only: it is read before the runner environment exists
(--offline checks a trimmed bundle's target with it).
"""
from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

# The runner's requirements a run (notebooks, collector, report) does not use, and what uses them.
NOT_FOR_RUNS = {
    "jupyterlab": "run_all.py lab", "pytest": "the test suite", "hypothesis": "the test suite",
    "playwright": "the browser test", "websocket-client": "the lab test", "submitit": "--executor slurm",
    "uv": "installing framework environments, which pip does too",
    "mplfonts": "the Chinese chart font, 82 MB: the charts fall back to no CJK font",
}

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)")
ROOT = "-r "


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_graph(text: str) -> tuple:
    """({name: version}, {name: {parents}}) of a uv lock with its "# via" lines;
    a requirement of the spec itself has the parent "" (its "-r requirements.in")."""
    pins, parents, current, in_via = {}, {}, None, False
    for line in text.splitlines():
        m = PIN.match(line)
        if m:
            current, in_via = norm(m.group(1)), False
            pins[current], parents[current] = m.group(2), set()
            continue
        s = line.strip()
        if current is None or not s.startswith("#"):
            continue
        body = s.lstrip("#").strip()
        if body.startswith("via"):
            rest, in_via = body[3:].strip(), True
            if rest:
                parents[current].add("" if rest.startswith(ROOT) else norm(rest))
        elif in_via and line.startswith("    #   "):
            parents[current].add("" if body.startswith(ROOT) else norm(body))
        else:
            in_via = False
    return pins, parents


def parse_freeze(text: str) -> dict:
    """{name: version} of `pip freeze` output (editable and URL lines: the version after @ or "")."""
    out = {}
    for line in text.splitlines():
        s = line.split("#")[0].strip()
        if not s or s.startswith("-"):
            continue
        m = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:==\s*(\S+)|@\s*(\S+))?", s)
        if m:
            out[norm(m.group(1))] = m.group(2) or ""
    return out


def spec_specifiers(lines) -> dict:
    """{name: specifier} of the spec's requirement lines: {"papermill": "==2.6.0", "numpy": ""}."""
    out = {}
    for ln in lines:
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*([^;#]*)", ln)
        if m:
            out[norm(m.group(1))] = m.group(2).strip()
    return out


def _vkey(v: str) -> tuple:
    """A release's sortable numbers: 2.6.0 -> (2, 6, 0); 2.11.0+cu130 -> (2, 11, 0)."""
    nums = re.match(r"\d+(?:\.\d+)*", v.split("+")[0])
    key = [int(x) for x in nums.group(0).split(".")] if nums else [0]
    while len(key) > 1 and key[-1] == 0:
        key.pop()
    return tuple(key)


def satisfies(version: str, specifier: str) -> bool:
    """Whether `version` meets a simple specifier list (==, !=, >=, <=, >, <, ~=; "" is anything)."""
    for part in filter(None, (p.strip() for p in specifier.split(","))):
        m = re.match(r"(==|!=|>=|<=|~=|>|<)\s*(\S+)", part)
        if not m:
            return False  # one frameval cannot read: packed, never guessed
        op, want = m.groups()
        if want.endswith(".*"):
            ok = version.split("+")[0].startswith(want[:-2]) == (op == "==")
        else:
            a, b = _vkey(version), _vkey(want)
            ok = {"==": a == b, "!=": a != b, ">=": a >= b, "<=": a <= b, ">": a > b, "<": a < b,
                  "~=": a >= b and a[:max(len(b) - 1, 1)] == b[:max(len(b) - 1, 1)]}[op]
        if not ok:
            return False
    return True


@dataclass
class Trim:
    packed: list = field(default_factory=list)    # [(name, lock version, why)]
    reused: list = field(default_factory=list)    # [(name, target version, lock version)]
    left_out: list = field(default_factory=list)  # [(name, what uses it)]

    @property
    def pins(self) -> list:
        return [f"{n}=={v}" for n, v, _ in self.packed]


def installed_requires(names) -> dict:
    """{package: [(child, extras asked of the child, the package's extra it serves or "")]} from
    this interpreter's metadata (the runner environment holds the lock's versions); {} where absent.
    The lock's "via" lines do not say that fqdn is jsonschema's for its extra format-nongpl, which
    only the lab asks for: this does."""
    try:
        import importlib.metadata as md
    except ImportError:
        return {}
    out = {}
    for name in names:
        try:
            reqs = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        edges = []
        for r in reqs:
            m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?[^;]*(?:;(.*))?", r)
            if not m:
                continue
            extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", m.group(3) or "")
            asked = {norm(x) for x in (m.group(2) or "").split(",") if x.strip()}
            edges.append((norm(m.group(1)), asked, norm(extra.group(1)) if extra else ""))
        out[name] = edges
    return out


def _children(name: str, extras: set, via: dict, requires: dict, reused: bool) -> dict:
    """{child: extras asked of it} that `name` with `extras` needs. A package the target has
    brings its own dependencies: only those of the extras asked of it are followed."""
    if name not in requires:  # no metadata: every "via" child, as the lock says
        return {} if reused else {c: set() for c in via.get(name, ())}
    out: dict = {}
    for child, asked, extra in requires[name]:
        if child in via.get(name, ()) and ((extra and extra in extras) or (not extra and not reused)):
            out.setdefault(child, set()).update(asked)
    return out


def trim(lock_text: str, spec_lines, target: dict, requires: dict | None = None) -> Trim:
    """What a target with the packages `target` ({name: version}) lacks of the runner's lock:
    from the spec's requirements (less NOT_FOR_RUNS), through what each packed package needs."""
    pins, parents = lock_graph(lock_text)
    via: dict = {}
    for child, ps in parents.items():
        for p in ps:
            via.setdefault(p, set()).add(child)
    requires = installed_requires(pins) if requires is None else requires
    specs = spec_specifiers(spec_lines)
    asked = {n: set() for n in specs if n not in NOT_FOR_RUNS and n in pins}
    todo, decided = list(asked), {}
    while todo:
        name = todo.pop()
        have = target.get(name)
        decided[name] = reuse = bool(have) and satisfies(have, specs.get(name, ""))
        for child, extras in _children(name, asked[name], via, requires, reuse).items():
            if child in pins and (child not in asked or not extras <= asked[child]):
                asked.setdefault(child, set()).update(extras)
                todo.append(child)
    out = Trim(left_out=[(n, why) for n, why in NOT_FOR_RUNS.items() if n in pins])
    for name in sorted(decided):
        have = target.get(name)
        if decided[name]:
            out.reused.append((name, have, pins[name]))
        else:
            why = ("not in the target" if have is None else
                   f"the target's {have or 'unversioned'} does not meet {specs.get(name) or 'a version'}")
            out.packed.append((name, pins[name], why))
    return out


# ------------------------------------------------------------ the target
TARGET_PROBE = r"""
import json, os, platform, re, sys, sysconfig
try:
    libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
except (ValueError, OSError, AttributeError):
    libc = ""
m = re.match(r"glibc (\d+)\.(\d+)", libc)
plat = ("manylinux_%s_%s_%s" % (m.group(1), m.group(2), platform.machine().lower()) if m
        else re.sub(r"[-.]", "_", sysconfig.get_platform()))
try:
    import importlib.metadata as md
    dists = sorted("%s==%s" % (d.metadata["Name"], d.version) for d in md.distributions() if d.metadata["Name"])
except ImportError:
    dists = []
print("FRAMEVAL-TARGET " + json.dumps({"python": "%d.%d" % sys.version_info[:2], "platform": plat,
      "executable": sys.executable, "freeze": "\n".join(dists)}))
"""


class TargetError(ValueError):
    """A target that cannot be read; the message is one line."""


def probe_target(python) -> dict:
    """{python: "3.12", platform, executable, freeze} of an interpreter, from one run of it."""
    exe = Path(python).expanduser()
    if not exe.is_file():
        raise TargetError(f"--target-python {python}: no such file")
    try:
        p = subprocess.run([str(exe), "-c", TARGET_PROBE], capture_output=True, text=True, timeout=300,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TargetError(f"--target-python {python}: cannot run it ({e})") from None
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("FRAMEVAL-TARGET ")), "")
    if not line:
        last = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        raise TargetError(f"--target-python {python}: not a Python 3.8+ interpreter ({last[:200]})")
    return json.loads(line.split(" ", 1)[1])
