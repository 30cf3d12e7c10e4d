"""What a framework is, as data: one `Framework` per folder of frameval/frameworks/
(its `__init__.py` holds it as `FRAMEWORK`). Standard library only: the runner
reads the records before its own environment exists, and the notebook kernels
(Python 3.8 to 3.12, some with an old numpy) read them too."""
from __future__ import annotations

from dataclasses import dataclass, field


# eq=False: the records hold dicts, and are looked up by key, never hashed by value.
@dataclass(frozen=True, eq=False)
class Framework:
    key: str                # the name in folders, kernels and --frameworks
    display: str            # how the report and the kernels' display names write it
    order: int              # its place in the default matrix and the report
    aliases: tuple = ()     # other names --frameworks accepts
    packages: tuple = ()    # pip distributions that carry its version; the first is the one its spec pins
    notes: str = ""         # its page under docs/frameworks/
    module: str = ""        # what `import` loads it (default: the key)
    high_api: str = ""      # its high-level training API ("" : it has none)
    high_api_note: str = ""  # a strings key: why its high-API row cannot be given the data as the loop has it
    colour: str = ""        # its line and bar colour in the report's charts ("": one of the spare colours)
    # Kernel environment variables (kernel.json): on every device, on the CPU only, on a GPU only.
    kernel_env: dict = field(default_factory=dict)
    cpu_kernel_env: dict = field(default_factory=dict)
    gpu_kernel_env: dict = field(default_factory=dict)
    # Characters its graph mode cannot have in the output path ("": any path works), and
    # what --out's error says after "fails under a path with".
    graph_path_forbids: str = ""
    graph_path_why: str = ""
    # {defect id: its description}, each defect described once (#68): "pattern", a regex (a
    # notebook or support module matching it applies the workaround and must declare it with
    # rec.workaround(id): tests/test_defects.py), and what the run records and the report
    # prints: "summary" (what was worked around, and how), "versions" (where it was seen),
    # "found_by", "cost" and "substitute" (the layer written in its place, if any). Its
    # reproduction is defects/<fw>/<id>.py; docs/defects.md is checked against this. A bare
    # regex is an older record's form: its notebooks pass the texts to rec.workaround.
    workarounds: dict = field(default_factory=dict)
    # Modules it loads only at its first compile or step (beyond what its notebooks and
    # parts import): imported once when its environment is built, so that their .pyc
    # files exist before the first run (frameval/envs/backends.py: warm_modules). An entry
    # "module:function" also calls that function (a library's lazy initialisation).
    warm_imports: tuple = ()
    # What it offers, per device: {"precision": {"cpu": (...), "gpu": (...)}, "mode": {...}} (#68). A value
    # the catalog knows but the record does not declare is refused before anything runs (plan.py) and by
    # a notebook opened by hand (nb/params.py): adding a precision to catalog.PRECISIONS makes no framework
    # accept it until its own folder declares it. A device absent here offers nothing on it.
    offers: dict = field(default_factory=dict)

    def offered(self, axis: str, device: str) -> tuple:
        """The values of `axis` ("precision", "mode") it declares on `device`."""
        return tuple((self.offers.get(axis) or {}).get(device) or ())

    def defect(self, wid: str) -> dict:
        """Defect `wid` as {"pattern", "summary", "versions", "found_by", "cost", "substitute"} ({} unknown)."""
        d = self.workarounds.get(wid)
        if d is None:
            return {}
        return {"pattern": d} if isinstance(d, str) else dict(d)

    @property
    def import_name(self) -> str:
        return self.module or self.key

    @property
    def package(self) -> str:
        """The distribution that is "the framework" (its spec pins it; install facts read its wheel)."""
        return self.packages[0] if self.packages else self.key

    def kernel(self, device: str = "cpu", gpu_spec: bool = True) -> str:
        """The kernel's name: a GPU kernel only where a GPU spec exists."""
        return f"frameval-{self.key}" + ("-gpu" if device == "gpu" and gpu_spec else "")

    def kernel_vars(self, device: str) -> dict:
        """The framework's own kernel variables on `device`."""
        return {**self.kernel_env, **(self.gpu_kernel_env if device == "gpu" else self.cpu_kernel_env)}
