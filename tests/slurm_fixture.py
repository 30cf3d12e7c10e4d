"""A real one-node Slurm cluster on this host, for tests/test_slurm.py.

Writes slurm.conf into a temp folder (this host's real CPUs and memory from
`slurmd -C`, proctrack/linuxproc, task/none, no cgroups, SlurmUser=root, a
partition `debug` Default=YES with a MaxTime), starts munged (unless one
already answers), slurmctld and slurmd in the foreground as child processes,
waits until `sinfo` shows the node idle, and stops them by their process ids
afterwards. Only localhost traffic. Commands see the cluster through
SLURM_CONF, set in os.environ for the fixture's lifetime.

Missing Slurm is installed as a printed setup step (apt-get); if that cannot
be done the fixture FAILS with the command to run, it never skips.
"""
from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

INSTALL = "apt-get update && apt-get install -y slurm-wlm munge"
MAX_TIME_MIN = 60


def _say(msg):
    print(f"[slurm fixture] {msg}", flush=True)


def ensure_installed():
    if shutil.which("slurmctld") and shutil.which("slurmd") and shutil.which("munged"):
        return
    _say(f"setup step: Slurm is not installed; running: {INSTALL}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    ok = shutil.which("apt-get") and os.geteuid() == 0
    if ok:
        ok = subprocess.run(INSTALL, shell=True, env=env, capture_output=True, text=True).returncode == 0
    if not ok or not shutil.which("slurmctld"):
        pytest.fail(f"Slurm is not installed and could not be installed here; as root run: {INSTALL}")


def node_line() -> str:
    """`slurmd -C`: this host's NodeName line with its real CPUs and memory."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("NodeName="))
    return line + " NodeAddr=127.0.0.1 State=UNKNOWN"


def write_conf(root: Path) -> Path:
    host = socket.gethostname().split(".")[0]
    for d in ("state", "spool"):
        (root / d).mkdir(parents=True, exist_ok=True)
    conf = root / "slurm.conf"
    conf.write_text(f"""# frameval test cluster: one node, this host, localhost only
ClusterName=frameval
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MinJobAge=900
KillWait=5
InactiveLimit=0
SchedulerParameters=sched_interval=2
{node_line()}
PartitionName=debug Nodes={host} Default=YES MaxTime={MAX_TIME_MIN} State=UP
""")
    return conf


def munge_works() -> bool:
    try:
        m = subprocess.run(["munge", "-n"], capture_output=True, timeout=10)
        return m.returncode == 0 and subprocess.run(["unmunge"], input=m.stdout, capture_output=True,
                                                    timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def start_munge(procs):
    if munge_works():
        _say("munged already running: using it")
        return
    munge = pwd.getpwnam("munge")
    for d in (Path("/run/munge"), Path("/var/lib/munge"), Path("/var/log/munge")):
        d.mkdir(parents=True, exist_ok=True)
        os.chown(d, munge.pw_uid, munge.pw_gid)
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        _say("setup step: creating /etc/munge/munge.key")
        if shutil.which("mungekey"):
            subprocess.run(["mungekey", "--create", "--keyfile", str(key)], check=True)
        else:
            key.write_bytes(os.urandom(1024))
    os.chown(key, munge.pw_uid, munge.pw_gid)
    os.chmod(key, 0o400)
    p = subprocess.Popen(["runuser", "-u", "munge", "--", "munged", "-F"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    procs.append(("munged", p))
    for _ in range(50):
        if munge_works():
            return
        time.sleep(0.2)
    pytest.fail("munged did not start (see /var/log/munge/munged.log)")


def wait_idle(root, timeout=90):
    t0 = time.time()
    while time.time() - t0 < timeout:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True).stdout
        if out.split() and out.split()[1].startswith("idle"):
            return
        time.sleep(1)
    logs = "".join(Path(root, f).read_text()[-1500:] for f in ("slurmctld.log", "slurmd.log")
                   if Path(root, f).exists())
    pytest.fail(f"the Slurm node never became idle (sinfo: {out!r})\n{logs}")


class Cluster:
    def __init__(self, root: Path):
        self.root, self.procs = root, []

    def start(self):
        ensure_installed()
        for cmd in ("slurmctld", "slurmd"):
            busy = subprocess.run(["pgrep", "-x", cmd], capture_output=True, text=True).stdout.split()
            if busy:
                pytest.fail(f"a {cmd} is already running here (pid {' '.join(busy)}); stop it first")
        self.conf = write_conf(self.root)
        os.environ["SLURM_CONF"] = str(self.conf)
        _say(f"slurm.conf: {self.conf}")
        start_munge(self.procs)
        for name, cmd in (("slurmctld", ["slurmctld", "-D", "-c", "-f", str(self.conf)]),
                          ("slurmd", ["slurmd", "-D", "-f", str(self.conf)])):
            log = open(self.root / f"{name}.stdout", "w")
            self.procs.append((name, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)))
            time.sleep(1)
        wait_idle(self.root)
        _say("node idle: " + subprocess.run(["sinfo", "-h", "-N", "-o", "%N %c CPUs %m MB %P"],
                                            capture_output=True, text=True).stdout.strip())
        return self

    def stop(self):
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        os.environ.pop("SLURM_CONF", None)

    def log(self, name="slurmctld.log") -> str:
        p = self.root / name
        return p.read_text(errors="replace") if p.exists() else ""


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("slurm"))
    try:
        yield c.start()
    finally:
        c.stop()
