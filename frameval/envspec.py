"""Environment specs in conda format, read with the standard library only.

The runner must read `environment.yml` before it has any third-party package
(it is how the runner builds its own environment), so this module parses the
small subset of YAML that conda environment files use: a mapping with `name`,
`channels`, and `dependencies`, whose items are strings or one `pip:` list.
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


def parse_spec(path: str | Path) -> EnvSpec:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise SpecError(f"{path}: cannot read environment spec ({e.strerror})") from None
    top: dict = {}
    deps: list = []
    pip: list = []
    channels: list = []
    section = None  # "channels" | "dependencies" | "pip"
    for n, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw)
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        body = line.strip()
        if indent == 0:
            m = re.match(r"^([A-Za-z_][\w-]*):\s*(.*)$", body)
            if not m:
                raise SpecError(f"{path}:{n}: expected 'key: value', got {body!r}")
            key, value = m.groups()
            top[key] = value.strip().strip("'\"")
            section = key if key in ("channels", "dependencies") else None
            if key == "channels" and value.startswith("["):
                channels += [c.strip() for c in value.strip("[]").split(",") if c.strip()]
            continue
        if not body.startswith("- "):
            raise SpecError(f"{path}:{n}: expected a '- item' list entry, got {body!r}")
        item = body[2:].strip().strip("'\"")
        if section == "channels":
            channels.append(item)
        elif section == "dependencies":
            if item == "pip:":
                section = "pip"
            else:
                deps.append(item)
        elif section == "pip":
            if indent <= 2 and item != "pip:":  # back at the dependency level
                section = "dependencies"
                deps.append(item)
            else:
                pip.append(item)
        else:
            raise SpecError(f"{path}:{n}: list item outside 'channels' or 'dependencies'")
    if "name" not in top or not top["name"]:
        raise SpecError(f"{path}: missing 'name'")
    pythons = [d for d in deps if re.match(r"^python\s*[=<>]", d)]
    if not pythons:
        raise SpecError(f"{path}: dependencies must pin a Python version, e.g. 'python=3.11'")
    m = re.search(r"(\d+\.\d+)", pythons[0])
    if not m:
        raise SpecError(f"{path}: cannot read a Python version from {pythons[0]!r}")
    conda = tuple(d for d in deps if d not in pythons and d != "pip")
    return EnvSpec(name=top["name"], path=path, python=m.group(1), conda=conda,
                   pip=tuple(pip), channels=tuple(channels), text=text)
