"""`python3 run_all.py lab`: JupyterLab with every framework's kernel visible,
for teaching sessions. Builds what is missing first.

The repository stays clean: the lab serves a per-user working copy of
notebooks/ (`paths.lab_dir()/notebooks`), so saving never writes into the
clone. A copy is refreshed from the repository when the repository's notebook
changed and the copy has no edits (its hash still equals the hash recorded
when it was copied); an edited copy is left alone, with a printed note.

Notebooks run there write into the hand-runs folder (`paths.hand_runs_dir()`),
an output folder the collector reads as it is; a post-save hook copies a saved
notebook beside the result.json its outputs name (`output.ipynb`, which the
report links), so the executed notebook sits with its run.
"""
from __future__ import annotations

import argparse
import hashlib
import ipaddress
import json
import os
import re
import shlex
import sys
from pathlib import Path

from . import files
from .paths import REPO, hand_runs_dir, lab_dir
from .plan import PlanError, framework_entries
from .catalog import FRAMEWORKS

MANIFEST = ".frameval-copied.json"   # {relative path: sha256 of the repository file last copied}


def parser():
    p = argparse.ArgumentParser(prog="run_all.py lab", description="Start JupyterLab on your working copy of "
                                "notebooks/ with the project's framework kernels (builds missing environments and "
                                "data caches first). Notebooks run there write to the hand-runs folder, which "
                                "`run_all.py --report-only --from <it>` turns into a report.")
    p.add_argument("--frameworks", default="all", help="environments to build: comma-separated, or all (default)")
    p.add_argument("--ip", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=8888, help="port (default 8888; the next free one is used if taken)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--env-backend", default=os.environ.get("FRAMEVAL_ENV_BACKEND", "auto"), help="auto, conda or venv")
    return p


def main(argv) -> int:
    args = parser().parse_args(argv)
    try:
        entries = framework_entries(args.frameworks)  # names, aliases, all, and FRAMEWORK==VERSION pins
    except PlanError as e:
        print(f"frameval: error: {e}", file=sys.stderr)
        return 2
    if not 0 < args.port < 65536:
        print(f"frameval: error: --port {args.port}: must be 1-65535", file=sys.stderr)
        return 2
    from . import versions
    why = versions.check_pins([e for e in entries if e[1]], "cpu", args.env_backend)
    if why:  # a pin the package index lacks: one line, before anything is built
        print(f"frameval: error: {why}", file=sys.stderr)
        return 2
    from .bootstrap import ensure_runner
    ensure_runner(["lab", *argv], backend=args.env_backend)
    from . import data, envs
    from .envs.spec import key, split_key
    fws = [key(fw, pin) for fw, pin in entries]
    data.prepare_all()
    def done(fw, env, secs):  # a failed one is reported; the other kernels are still useful
        if not isinstance(env, envs.Env):
            print(f"frameval: environment {fw} failed to build: {str(env).splitlines()[0]}", file=sys.stderr)
        else:
            if env.built_now:
                print(f"frameval: environment {fw} built in {secs:.1f} s", flush=True)
            if split_key(fw)[1]:  # the notebooks name the bare kernel: the pinned one is picked by hand
                print(f"frameval: {fw}: pick the kernel \"{env.kernel}\" (Kernel > Change Kernel); its hand runs go "
                      f"to runs/{fw}/, beside the other version's", flush=True)
    envs.ensure_frameworks(fws, "cpu", args.env_backend, echo=lambda m: print(f"frameval: {m}", flush=True),
                           on_done=done)
    try:
        loopback = ipaddress.ip_address(args.ip).is_loopback
    except ValueError:
        loopback = args.ip == "localhost"
    if not loopback:
        print(f"frameval: WARNING: binding to {args.ip}, a non-loopback address: anyone who can reach it "
              "and has the token can run code on this machine", file=sys.stderr)
    notebooks = sync_notebooks()
    hand = prepare_hand_runs()
    config = write_server_config()
    cmd = [sys.executable, "-m", "jupyter", "lab", f"--ip={args.ip}", f"--port={args.port}",
           f"--ServerApp.root_dir={notebooks}", "--ServerApp.port_retries=50"]
    if args.no_browser:
        cmd.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers and CI run as root
        cmd.append("--allow-root")
    print(f"frameval: notebooks: your working copy in {notebooks} (the repository's notebooks/ is never written)")
    print(f"frameval: hand runs go to {hand}/runs/<framework>/<workload>-<mode>[@changed=params]/ "
          "(save the notebook after a run to keep it beside its result.json)")
    print(f"frameval: report from them: {report_command(hand)}")
    print("frameval: starting JupyterLab; the URL with its token is printed below", flush=True)
    env = envs.jupyter_env()
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(filter(None, [str(config), env.get("JUPYTER_CONFIG_PATH", "")]))
    os.execve(sys.executable, cmd, env)


def report_command(hand: Path | None = None) -> str:
    """The one command that makes the report from the hand runs."""
    hand = Path(hand or hand_runs_dir())
    return f"python3 run_all.py --report-only --from {shlex.quote(str(hand))} --out reports/hand"


# ------------------------------------------------------------------ the working copy
def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _copy(src: Path, dst: Path):
    files.atomic_copy(src, dst)


def sync_notebooks(src: Path | None = None, dst: Path | None = None, echo=print) -> Path:
    """Copy the repository's notebooks into the per-user working copy: missing
    ones copied, unedited ones refreshed when the repository's changed, edited
    ones left alone (a note when the repository's version moved on). Returns
    the working copy's folder."""
    src = Path(src or REPO / "notebooks")
    dst = Path(dst or lab_dir() / "notebooks")
    dst.mkdir(parents=True, exist_ok=True)
    try:
        copied = json.loads((dst / MANIFEST).read_text())
        copied = copied if isinstance(copied, dict) else {}
    except (OSError, ValueError):
        copied = {}
    new, refreshed, kept = [], [], []
    for f in sorted(src.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in f.parts:
            continue
        rel = f.relative_to(src).as_posix()
        mine, repo = dst / rel, _sha(f)
        if not mine.exists():
            _copy(f, mine)
            copied[rel] = repo
            new.append(rel)
            continue
        have = _sha(mine)
        if have == repo:
            copied[rel] = repo
        elif copied.get(rel) == have:      # untouched since it was copied: the repository moved on
            _copy(f, mine)
            copied[rel] = repo
            refreshed.append(rel)
        elif copied.get(rel) != repo:      # edited here, and the repository's changed too
            kept.append(rel)
    files.atomic_write_json(dst / MANIFEST, copied, sort_keys=True)
    if new:
        echo(f"frameval: copied {len(new)} notebook(s) from the repository into {dst}")
    for rel in refreshed:
        echo(f"frameval: {rel}: refreshed from the repository (your copy had no edits)")
    for rel in kept:
        echo(f"frameval: {rel}: the repository's version changed, but your copy has edits: kept yours "
             f"(delete {dst / rel} to get the new one)")
    return dst


# ------------------------------------------------------------------ hand runs
def prepare_hand_runs(echo=print) -> Path:
    """The hand-runs folder as an output folder (runs/ and plan.json), so the
    report command works from the start; hand runs of the older layout
    (<framework>/<workload>-<mode>/ without runs/) are pointed out."""
    from .nb.record import write_hand_plan
    hand = hand_runs_dir()
    write_hand_plan(hand)
    old = [d for d in sorted(hand.glob(f"*/*/{files.RESULT}")) if d.parts[-3] in FRAMEWORKS]
    if old:
        echo(f"frameval: {len(old)} hand run(s) of an older layout in {hand}/<framework>/ are not collected: "
             f"move {hand}/<framework> to {hand}/runs/<framework> to include them")
    return hand


def write_server_config() -> Path:
    """A Jupyter config folder whose jupyter_server_config.py installs the
    post-save hook (a failure to import it is printed, never fatal)."""
    d = lab_dir() / "config"
    d.mkdir(parents=True, exist_ok=True)
    text = (
        "# written by `python3 run_all.py lab` (frameval): copies a saved notebook beside the hand run it made\n"
        "import sys, warnings\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "# the server and the lab extension both apply this config: the second setting is the same hook\n"
        "warnings.filterwarnings('ignore', message='Overriding existing post_save_hook')\n"
        "try:\n"
        "    from frameval.lab import post_save_hook\n"
        "    c.ContentsManager.post_save_hook = post_save_hook\n"
        "except Exception as e:  # noqa: BLE001\n"
        "    print(f'frameval: saved notebooks will not be copied beside their results: {e}', file=sys.stderr)\n")
    f = d / "jupyter_server_config.py"
    if not f.exists() or f.read_text() != text:
        f.write_text(text)
    return d


_PATH_REPR = re.compile(r"""Path\((['"])(.+?)\1\)""")


def result_paths(nb: dict) -> list:
    """The result.json paths a notebook's outputs name (the record cell prints it)."""
    found = []
    for c in nb.get("cells", []):
        for o in c.get("outputs", []) or []:
            texts = [o.get("text", "")] + [v for k, v in (o.get("data") or {}).items() if k == "text/plain"]
            for t in texts:
                t = "".join(t) if isinstance(t, list) else str(t)
                for line in t.splitlines():
                    line = line.strip()
                    m = _PATH_REPR.search(line)
                    cand = m.group(2) if m else line
                    if cand.endswith(files.RESULT) and cand not in found:
                        found.append(cand)
    return found


def post_save_hook(model=None, os_path=None, contents_manager=None, **_):
    """jupyter_server's post-save hook: a saved notebook whose outputs name a
    hand run's result.json is copied beside it as output.ipynb."""
    log = getattr(contents_manager, "log", None)
    try:
        if not os_path or not str(os_path).endswith(".ipynb"):
            return
        nb = json.loads(Path(os_path).read_text(encoding="utf-8"))
        root = (hand_runs_dir() / files.RUNS).resolve()
        for p in result_paths(nb):
            res = Path(p).resolve()
            if res.is_file() and root in res.parents:
                _copy(Path(os_path), res.parent / files.OUTPUT_NB)
                if log:
                    log.info("frameval: %s saved beside its run in %s", os_path, res.parent)
    except Exception as e:  # noqa: BLE001 - a hook never fails a save
        if log:
            log.warning("frameval: could not copy %s beside its run: %s", os_path, e)
