"""Environment specs in conda format (`environment.yml`, `envs/<fw>[-gpu].yml`).

Once the runner environment exists they are read with a real YAML parser
(PyYAML). Before it exists, `python3 run_all.py` on a bare Python must read
`environment.yml` to build that environment, so a standard-library reader
handles the subset conda files use: `name: value`, `channels` and
`dependencies` as block lists (indented by any amount, or at column 0) or flow
lists, each dependency a string or one `pip:` list. Anything outside that
subset is refused with the line and what to write instead, never guessed.
Both readers give the same mapping, from which one function builds the spec,
so the spec's hash (the cache key) does not depend on which read it.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path


class SpecError(ValueError):
    """An environment spec that cannot be used; the message says which file and why."""


@dataclass(frozen=True)
class EnvSpec:
    name: str
    path: Path
    python: str  # "3.11"
    conda: tuple = ()  # conda packages other than python and pip
    pip: tuple = ()  # pip requirement lines, in order
    channels: tuple = ()
    text: str = field(default="", repr=False)

    @property
    def key(self) -> str:
        """Hash of what decides the environment's contents (not comments)."""
        canon = "\n".join([self.name, self.python, *self.channels, "--conda", *self.conda, "--pip", *self.pip])
        return hashlib.sha256(canon.encode()).hexdigest()[:12]


def _strip_comment(line: str) -> str:
    # A '#' starts a comment at line start or after whitespace (URLs keep theirs).
    return re.sub(r"(^|\s)#.*$", "", line).rstrip()


def _scalar(v: str) -> str:
    v = v.strip()
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"" else v


def _flow(v: str, where: str) -> list:
    if not (v.startswith("[") and v.endswith("]")):
        raise SpecError(f"{where}: expected a list")
    return [_scalar(x) for x in v[1:-1].split(",") if x.strip()]


def read_subset(text: str, path) -> dict:
    """The standard-library reader: {"name", "channels", "dependencies"} with
    dependencies as strings and at most one {"pip": [...]}."""
    top: dict = {}
    key = None          # the top-level key whose block list is being read
    col = None          # the column of that list's dashes
    pip = pip_col = None
    unsupported = "outside the subset the standard-library reader takes (used before the runner " \
                  "environment exists): write `key: value` lines and '- item' lists, one `- pip:` list"
    for n, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw)
        if not line.strip():
            continue
        where, indent, body = f"{path}:{n}", len(line) - len(line.lstrip()), line.strip()
        if "\t" in raw[:indent]:
            raise SpecError(f"{where}: a tab in the indentation (YAML allows spaces only)")
        if body == "-" or body.startswith("- "):
            item = body[1:].strip()
            if key is None:
                raise SpecError(f"{where}: list item outside 'channels' or 'dependencies'")
            if pip is not None and indent >= pip_col:
                pip.append(_scalar(item))
                continue
            col = indent if col is None else col
            if indent != col:
                raise SpecError(f"{where}: list item at column {indent}, its list's items are at column {col}")
            pip = None
            if key == "dependencies" and re.fullmatch(r"pip\s*:", item):
                pip, pip_col = [], indent + 2  # the column of the `pip` key
                top[key].append({"pip": pip})
            elif ":" in item and not re.search(r"://|::", item) or item.startswith(("[", "{")):
                raise SpecError(f"{where}: {item!r} is {unsupported}")
            else:
                top[key].append(_scalar(item))
            continue
        m = re.fullmatch(r"([A-Za-z_][\w-]*):\s*(.*)", body)
        if indent or not m:
            raise SpecError(f"{where}: {body!r} is {unsupported}")
        k, value = m.groups()
        key, col, pip = None, None, None
        if k in ("channels", "dependencies"):
            top[k] = _flow(value, where) if value else []
            key = None if value else k
        else:
            top[k] = _scalar(value)
    return top


def read_yaml(text: str, path) -> dict:
    import yaml
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise SpecError(f"{where}: not valid YAML ({getattr(e, 'problem', None) or e})") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping with name, channels and dependencies")
    return data


def _strings(value, what: str, path) -> list:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(x, (str, int, float)) for x in value):
        raise SpecError(f"{path}: '{what}' must be a list of strings")
    return [str(x).strip() for x in value]


def spec_from(data: dict, path: Path, text: str) -> EnvSpec:
    """The spec a mapping (from either reader) describes."""
    if not data.get("name"):
        raise SpecError(f"{path}: missing 'name'")
    deps, pip = [], []
    for d in data.get("dependencies") or []:
        if isinstance(d, dict) and list(d) == ["pip"]:
            pip += _strings(d["pip"], "pip", path)
        elif isinstance(d, (str, int, float)):
            deps.append(str(d).strip())
        else:
            raise SpecError(f"{path}: a dependency must be a string or one 'pip:' list, got {d!r}")
    pythons = [d for d in deps if re.match(r"^python\s*[=<>]", d)]
    if not pythons:
        raise SpecError(f"{path}: dependencies must pin a Python version, e.g. 'python=3.11'")
    m = re.search(r"(\d+\.\d+)", pythons[0])
    if not m:
        raise SpecError(f"{path}: cannot read a Python version from {pythons[0]!r}")
    conda = tuple(d for d in deps if d not in pythons and d != "pip")
    return EnvSpec(name=str(data["name"]), path=path, python=m.group(1), conda=conda, pip=tuple(pip),
                   channels=tuple(_strings(data.get("channels"), "channels", path)), text=text)


def parse_spec(path: str | Path, stdlib_only: bool = False) -> EnvSpec:
    """Read a spec with PyYAML where it is importable (the runner environment),
    else (or with `stdlib_only`) with the standard-library reader."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise SpecError(f"{path}: cannot read environment spec ({e.strerror})") from None
    try:
        if stdlib_only:
            raise ImportError
        import yaml  # noqa: F401
    except ImportError:
        return spec_from(read_subset(text, path), path, text)
    return spec_from(read_yaml(text, path), path, text)
