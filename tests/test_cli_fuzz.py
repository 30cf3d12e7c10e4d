"""A fuzzed command line: real options with random and boundary values,
unknown and repeated options, empty strings, unicode and very long values.
Every draw ends with exit 0 or 2, never a traceback, and an exit 2 creates
nothing on disk. Draws always add --dry-run, so no notebook runs.

The same examples every run (derandomize), so CI's verdict does not depend on
the draw; FRAMEVAL_FUZZ_EXPLORE=1 draws new ones, FRAMEVAL_FUZZ_EXAMPLES=N
sets how many."""
import contextlib
import io
import os
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO
from frameval import cli
from frameval.commands.run import parser

EXPLORE = bool(os.environ.get("FRAMEVAL_FUZZ_EXPLORE"))
EXAMPLES = int(os.environ.get("FRAMEVAL_FUZZ_EXAMPLES", "500" if EXPLORE else "40"))


def _options():
    """(option string, takes a value) for every option of the run command."""
    out = []
    for a in parser()._actions:
        if a.option_strings and "-h" not in a.option_strings:
            out += [(o, a.nargs != 0) for o in a.option_strings if o.startswith("--") or o == "-p"]
    return out


OPTIONS = _options()
BOUNDARY = ["", "0", "-1", "1", "2", "7", "64", "2147483648", "1e309", "nan", "-0.5", "all", "both", "gpu", "cpu",
            "full", "quick", "graph", "eager", "zh", "en", "slurm", "local", "torch", "jax,mxnet", "lenet", "lstm",
            "epochs=1", "lenet.lr=0", "batch_size=0", "window=5000", "max_train_samples=10", "dataset=full",
            "x" * 1000, "评测报告", "\u0000", "torch=/nonexistent/python", "a=b=c", ".", "..", "/", "/proc/x"]
# No "==": a pinned version asks the package index, a network call per draw.
TEXT = st.text(alphabet=st.characters(blacklist_characters="=\x00", blacklist_categories=("Cs",)), max_size=40)
VALUE = st.one_of(st.sampled_from(BOUNDARY), TEXT, st.integers(-10**12, 10**12).map(str),
                  st.floats(allow_nan=True).map(repr))
TOKEN = st.one_of(
    st.sampled_from(OPTIONS).flatmap(lambda o: st.tuples(st.just(o[0]), VALUE) if o[1] else st.tuples(st.just(o[0]))),
    st.tuples(st.sampled_from(["--nosuch", "-x", "--frameworks=", "--mode=both", "-pepochs=1", "--", "stray"])))


def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _run(argv, cwd):
    """cli.main in this process (the runner environment): (exit status, stderr)."""
    err, out = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = cli.main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    finally:
        os.chdir(old)
    return code, err.getvalue()


@pytest.mark.fast
@settings(max_examples=EXAMPLES, deadline=None, database=None, print_blob=True, derandomize=not EXPLORE,
          suppress_health_check=list(HealthCheck))
@given(st.lists(TOKEN, max_size=6))
def test_fuzzed_command_line_never_tracebacks(tmp_path_factory, tokens):
    work = tmp_path_factory.mktemp("fuzz")
    argv = [x for t in tokens for x in t]
    if not any(a == "--out" or a.startswith("--out=") for a in argv):
        argv += ["--out", str(work / "out")]
    argv.append("--dry-run")
    before = _tree(work)
    code, err = _run(argv, work)
    assert "Traceback" not in err, (argv, err)
    assert code in (0, 2), (argv, code, err)
    if code == 2:
        assert _tree(work) == before, (argv, "exit 2 created files")
        assert err.strip(), (argv, "exit 2 without a word")


def test_fuzzed_options_on_a_python_without_numpy(tmp_path):
    """The checks made before the runner environment exists, on a bare Python,
    for every command: one line, exit 2, nothing created."""
    bare = tmp_path / "bare"
    subprocess.run(["python3", "-m", "venv", "--without-pip", str(bare)], check=True)
    py = str(bare / "bin" / "python")
    cases = [["--frameworks", "nosuch"], ["--out", "/proc/x"], ["-p", "max_train_samples=10"],
             ["-p", "lstm.window=5000"], ["--device", "gpu"], ["--lang", "\u8bc4"], ["--timeout", "nan"],
             ["--slurm-time", "5"], ["--executor", "x" * 500], ["--repeats", "-1"], ["--nosuch"],
             ["compare", str(tmp_path), str(REPO)], ["compare", "--lang", "fr", str(REPO), str(REPO)],
             ["lab", "--port", "0"], ["lab", "--frameworks", "nosuch"], ["defects", "--frameworks", "nosuch"],
             ["test", "--env-backend", "bogus"], ["bench", "nosuch"], ["run", "--mode", "sideways"]]
    for argv in cases:
        run_command = argv[0].startswith("-") or argv[0] == "run"
        out = [] if "--out" in argv or not run_command else ["--out", str(tmp_path / "o")]
        p = subprocess.run([py, str(REPO / "run_all.py"), *argv, *out], capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and "Traceback" not in p.stderr and p.stderr.strip(), (argv, p.stderr)
        assert not (tmp_path / "o").exists(), argv
