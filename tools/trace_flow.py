"""Which frameval modules a value passes through, measured, not read off the
code: a marker value is planted, the command runs under `sys.settrace`, and
every frameval function whose arguments or locals hold the marker (at its call
or its return) is recorded, in order. Used for the house issue's before/after
lists (#51): a parameter on its way into a notebook, a result figure on its way
into a table cell.

    <runner python> tools/trace_flow.py param [run_all options]
        plants `-p lenet.lr=0.00123457` and runs the command (a real run: the
        trace ends where the runner hands the value to papermill; the kernel's
        side is another process)
    <runner python> tools/trace_flow.py cell REPORT_DIR
        copies REPORT_DIR, plants 7654.321 as one run's training samples/s and
        builds the report from the copy in this process (the call that
        notebooks/collect.ipynb makes in its kernel)

Run it with the runner environment's python (`~/.cache/frameval/envs/
frameval-runner-venv-*/bin/python`), so the command does not re-execute itself.
It prints the modules in first-seen order, and the number of times the value
came back to a module it had already left.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = str(ROOT / "frameval")
LR = 0.00123457
SPEED = 7654.321
# How the planted figures may look once written out.
TEXTS = ("0.00123457", "1.23457e-03", "1.235e-03", "7654.3", "7,654", "7654")


def holds(value, depth: int = 0) -> bool:
    if isinstance(value, float):
        return value in (LR, SPEED)
    if isinstance(value, str):
        return any(t in value for t in TEXTS) and len(value) < 2000
    if depth >= 1:  # the value itself, or one level into a local (a row, a dict): not a whole table
        return False
    if isinstance(value, dict):
        return any(holds(v, depth + 1) for v in list(value.values())[:200])
    if isinstance(value, (list, tuple)):
        return any(holds(v, depth + 1) for v in value[:200])
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict):
        return any(holds(v, depth + 1) for v in list(fields.values())[:100])
    return False


class Tracer:
    def __init__(self):
        self.path: list = []  # module per sighting, consecutive repeats dropped
        self.first_text = None

    def module(self, frame) -> str:
        name = frame.f_globals.get("__name__", "?")
        return name

    def see(self, frame) -> None:
        values = list(frame.f_locals.values())
        if any(holds(v) for v in values):
            m = self.module(frame)
            if not self.path or self.path[-1] != m:
                self.path.append(m)
            if self.first_text is None and any(isinstance(v, str) and holds(v) for v in values):
                self.first_text = len(self.path)  # the value is written out: its first cell

    def __call__(self, frame, event, arg):
        if not frame.f_code.co_filename.startswith(PACKAGE):
            return None
        if event == "call":
            self.see(frame)
            return self.local
        return None

    def local(self, frame, event, arg):
        if event == "return":
            self.see(frame)
        return self.local

    def summary(self) -> str:
        lines = []
        if self.first_text:
            head = self.path[:self.first_text]
            lines = [f"until it is first written out ({len(head)} steps): " + " -> ".join(head), ""]
        return "\n".join(lines + [self.counts(self.path)])

    @staticmethod
    def counts(path) -> str:
        seen, order, returns = set(), [], 0
        for m in path:
            if m in seen:
                returns += 1
            else:
                seen.add(m)
                order.append(m)
        lines = [f"{len(order)} modules, in first-seen order:"] + [f"  {m}" for m in order]
        lines.append(f"returns to a module already left: {returns}")
        return "\n".join(lines)


def plant_speed(report_dir: Path) -> Path:
    copy = Path(tempfile.mkdtemp(prefix="trace-cell-")) / "report"
    shutil.copytree(report_dir, copy)
    result = sorted(copy.glob("runs/torch/lenet-*/result.json"))[0]
    data = json.loads(result.read_text())
    data["samples_per_s"] = SPEED
    result.write_text(json.dumps(data))
    print(f"planted samples_per_s={SPEED} in {result}", file=sys.stderr)
    return copy


def main(argv) -> int:
    sys.path.insert(0, str(ROOT))
    import os
    os.environ.setdefault("FRAMEVAL_NO_BOOTSTRAP", "1")  # stay in this process: the trace is of it
    from frameval import cli
    if argv[:1] == ["param"]:
        args = argv[1:] + ["-p", f"lenet.lr={LR}"]
        run = lambda: cli.main(args)  # noqa: E731
    elif argv[:1] == ["cell"] and len(argv) == 2:
        # The report is built by notebooks/collect.ipynb in a kernel; its one
        # call is made here, in this process, so that the trace sees it.
        import frameval.report
        copy = plant_speed(Path(argv[1]))
        run = lambda: frameval.report.build([str(copy)], str(copy)) and 0  # noqa: E731
    else:
        print(__doc__, file=sys.stderr)
        return 2
    tracer = Tracer()
    sys.settrace(tracer)
    try:
        rc = run()
    finally:
        sys.settrace(None)
    print(tracer.summary())
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
