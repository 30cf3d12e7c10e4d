"""The contract every framework folder's `support.py` fulfils (#68): what a
notebook needs of its framework, under one name and one signature in all of
them, so that a new measurement or precision is a function in each folder and
one line per notebook, not an edit of every notebook's setup cell.

Modelled on optimum-benchmark's backends (one base class, one folder per
backend). frameval keeps its notebooks for reading and teaching: the model,
the step and the loop stay framework code in the notebook; what is the same
job in every framework is here.

`support.py` imports its framework, so the contract is checked from the
source (`check_source`: each function's presence and its parameters, by `ast`),
never by importing seven frameworks into one process (tests/test_frameworks.py).

Where a framework cannot do a part, its function says so: it raises
`NotOffered` with the reason the report prints, never passes silently.

Capabilities planned next add their methods here, each in its own issue, in
the same form (a function in every `support.py`, its parameters fixed here):
the layer timing's part is `frameworks/<fw>/layers.py` (`setup`,
`substitutes`, `build`); mixed precision is `autocast(rec, precision)` (#69);
saving for deployment and loading it back are `export` and `load`, a training's
checkpoint and its resumption `checkpoint` and `restore` (#70).
Standard library only.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


class NotOffered(RuntimeError):
    """A part of the contract this framework cannot do; the message is the reason the report prints."""


@runtime_checkable
class Support(Protocol):
    """What a notebook calls on `fw` (`from frameval.frameworks.<fw> import support as fw`)."""

    def setup(self, rec, mode: str, device: str, seed: int) -> Any:
        """Everything before the data: whatever must precede the framework's import
        (environment variables), the thread count set and read back into `rec`, the
        seed, the device (a device that is not there raises, never falls back), the
        float32 precision switches, the graph-mode settings, and `rec.after_import`
        with the clock's sync and the device's memory hooks. Returns the device (or
        context) the notebook places its tensors on."""

    def placement(self, dev) -> str:
        """Where the data lives and how a batch reaches the step, in words (result.json's data.placement)."""

    def compile_step(self, step, mode: str):
        """The training step as the run's mode runs it: compiled whole in graph mode, as is in eager."""

    def compile_eval(self, fn, mode: str):
        """The evaluation forward as the run's mode runs it."""

    def record_scope(self, rec, mode: str, step, how: str = "", why: str = "") -> None:
        """What graph mode compiled (graphs, breaks, what runs outside): `rec.graph_scope`."""

    def read_adam(self, rec, *opts) -> None:
        """The optimizers' Adam settings as the framework holds them, recorded for the audit."""

    def reset_adam(self, *opts) -> None:
        """A fresh optimizer state (moments and step count) in place: training starts from
        the shared weights after the check, in the same compiled step."""

    def autocast(self, rec, precision: str) -> Any:
        """-p precision as the framework's own AMP (#69): an `nb.amp.Amp` recorded with
        `rec.set_amp` (mechanism, level, what stays float32), off for a float32 run. Its
        `on` is what the check's float32 pass turns off and training runs with. Raises
        NotOffered, with the framework's own error where it has one, where its AMP cannot
        run on this device: the run is then recorded as not offered, never as float32."""

    def export(self, rec, model, example, path) -> str:
        """The trained model saved for deployment (#70, frameval/nb/serving.py) in the
        framework's own recommended format, into the folder `path` (there, empty):
        its weights and its forward, loadable without the notebook's code, taking any batch
        size. `model` is what the notebook serves (a module, a layer, or for JAX the
        forward with its trained weights closed over); `example` a numpy batch of its
        input. Returns the format in words (what it is and why it is the one). Raises
        NotOffered, with the framework's error, where the framework cannot export it."""

    def load(self, path, device: str):
        """In a fresh process of the environment: the model `export` wrote to `path`,
        loaded onto `device` without the notebook's code. Returns predict(x) -> numpy,
        from a numpy batch of any size, finished (synchronised) when it returns."""

    def checkpoint(self, rec, path, *state) -> str:
        """-p resume_check (#70, frameval/nb/resume.py): the training state after an epoch,
        saved into the folder `path` (there, empty) in the framework's own checkpoint
        format. `state` is what the notebook trains: its model (or, for JAX, the parameter
        pytree) and its optimizer(s) (their moments and step counts). The framework's
        global random state is saved with them where the framework has one. Returns what
        was saved, in words: the format, and the random state or why there is none."""

    def restore(self, rec, path, *state) -> tuple:
        """In a kernel that resumes: what `checkpoint` saved into `path`, put back into
        `state` (the same objects, built by the notebook as for any run), in place where
        the framework's objects are mutable and as new values where they are not (JAX).
        Returns the state in `state`'s order."""


# the contract's functions and the parameter names each must accept, in order
CONTRACT = {name: [p for p in fn.__code__.co_varnames[1:fn.__code__.co_argcount]]
            for name, fn in vars(Support).items() if not name.startswith("_") and callable(fn)}
_VARARG_NAME = {"checkpoint": "state", "restore": "state"}
VARARGS = {name for name, fn in vars(Support).items() if name in CONTRACT and fn.__code__.co_flags & 0x04}


def _functions(tree) -> dict:
    """Module-level functions of a source, by name (a name bound by assignment counts as present)."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = node
        elif isinstance(node, ast.Assign):
            out.update({t.id: None for t in node.targets if isinstance(t, ast.Name)})
    return out


def check_source(path) -> list:
    """What `path` (a support.py) lacks of the contract: one line per missing function or
    parameter; [] where it fulfils it. A function's parameters must start with the
    contract's names, in order; more, with defaults, are its own."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    have, problems = _functions(tree), []
    for name, params in CONTRACT.items():
        node = have.get(name, ...)
        if node is ...:
            problems.append(f"{path}: no {name}({', '.join(params)})")
            continue
        if node is None:  # bound by assignment (an alias of another function): its signature is that one's
            continue
        got = [a.arg for a in node.args.posonlyargs + node.args.args]
        if got[:len(params)] != params:
            problems.append(f"{path}: {name}({', '.join(got)}) should take ({', '.join(params)})")
        if name in VARARGS and node.args.vararg is None:
            problems.append(f"{path}: {name} should take *{_VARARG_NAME.get(name, 'opts')} (one object or more)")
        defaults = len(node.args.defaults)
        if len(got) - defaults > len(params):
            problems.append(f"{path}: {name} has required parameters beyond the contract's: {got[len(params):]}")
    return problems
