"""The machine's peak: a real measurement in the runner environment, positive,
with its method recorded, written where the report reads it."""
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import REPO
from frameval import cpu, idle, probe

pytestmark = pytest.mark.fast


def test_probe_measures_positive_figures_and_records_its_method(tmp_path):
    lines = []
    m = probe.record(tmp_path, lines.append, wait_s=1)
    assert m["peak_gflops_1"] > 0 and m["peak_gflops_all"] > 0 and m["bandwidth_gbs"] > 0
    assert m["threads_all"] >= 1 and m["seconds"] > 0  # its duration is this machine's, not bounded here
    assert "numpy.matmul" in m["method"]["matmul"] and "float32" in m["method"]["matmul"]
    assert "copy" in m["method"]["copy"]
    on_disk = json.loads((tmp_path / probe.MACHINE).read_text())
    assert on_disk["peak_gflops_1"] == m["peak_gflops_1"] and probe.read(tmp_path) == on_disk
    assert "GFLOP/s" in lines[-1]


def test_a_small_product_counts_its_flops_with_its_load_and_spread():
    # 2 n^3 FLOPs in a measured time: a tiny product is far from peak but positive and finite
    got = probe.matmul(n=64)
    assert 0 < got["gflops"] < 1e5 and idle.MIN_REPEATS <= got["repeats"] <= idle.MAX_REPEATS
    assert got["spread"] >= 0 and "load" in got and "other_share" in got and "busy" in got


def test_repeats_that_agree_stop_early_and_ones_that_do_not_run_to_the_limit():
    steady = idle.best_time(lambda: time.sleep(0.02))  # a sleep repeats within 3%
    assert steady["repeats"] == idle.MIN_REPEATS and steady["spread"] < idle.AGREE
    calls = []
    growing = idle.best_time(lambda: (calls.append(1), time.sleep(0.004 * len(calls))))  # each 1 step longer
    assert growing["repeats"] == idle.MAX_REPEATS and growing["spread"] > idle.NOISY_SPREAD
    assert "repeat spread" in idle.busy_reason(growing)


def test_slow_first_repeats_whose_best_two_agree_are_warm_up_not_other_work():
    """As an idle 2-core EPYC timed numpy's 2-thread product (other processes 1%
    of the CPU): two slow repeats, then two that agree. The best is reproducible,
    so the figure is idle; repeats that never agree still mark it busy."""
    warm = {"times": [0.1801098, 0.1763228, 0.1076175, 0.1086852], "load": [0.51, 1.87, 2.5], "other_share": 0.0146}
    warm["spread"] = idle.spread(warm["times"])
    assert warm["spread"] > idle.NOISY_SPREAD and idle.converged(warm) and idle.busy_reason(warm) is None
    never = dict(warm, times=[0.18, 0.11, 0.15, 0.125, 0.17, 0.2, 0.14, 0.16, 0.19, 0.135])
    never["spread"] = idle.spread(never["times"])
    assert not idle.converged(never) and "repeat spread" in idle.busy_reason(never)
    # other work is other work, however well the repeats agree
    assert "other processes 48%" in idle.busy_reason(dict(warm, other_share=0.48))


def _stops_at_first_agreement(f):
    """The loop's rule, checked on the repeats a figure recorded: it ran on
    exactly until its best two first agreed (or to the limit)."""
    t = f["times"]
    first = next((i + 1 for i in range(idle.MIN_REPEATS - 1, len(t))
                  if idle._agree(t[:i + 1]) or sum(t[:i + 1]) > idle.BUDGET_S), idle.MAX_REPEATS)
    return f["repeats"] == len(t) == first


@pytest.mark.idle
def test_a_real_probe_records_its_load_spread_and_time_and_stops_early(tmp_path):
    lines = []
    m = probe.record(tmp_path, lines.append, n=256, copy_mb=8, wait_s=2)
    figs = m["numpy_figures"]
    assert set(figs) == {"1", str(m["threads_all"])}
    for f in figs.values():
        assert f["gflops"] > 0 and f["spread"] >= 0 and f["load"] and _stops_at_first_agreement(f), f
        assert (f["busy"] is None) == (idle.busy_reason(f) is None)
    assert m["load_before"] and m["load_measured"] and m["waited_s"] >= 0 and "busy" in m
    assert m["seconds"] > 0 and f"the probe took {m['seconds']:.1f} s" in lines[-1]


def test_a_busy_machine_is_noticed(tmp_path):
    """Busy loops on every core: the probe's figure says it was not measured idle."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.5)
        # 2048: each product takes tens of ms, so the /proc/stat window (10 ms ticks) holds enough
        # ticks to read the hogs' share; at 512 the whole figure took 10 ms and read 21% once in 4
        got = probe._child(1, "matmul", 2048)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert got["other_share"] > idle.BUSY_OTHER_SHARE and got["busy"] and "other processes" in got["busy"], got


def test_no_machine_file_reads_as_none(tmp_path):
    assert probe.read(tmp_path) is None
    (tmp_path / probe.MACHINE).write_text("[1]")
    assert probe.read(tmp_path) is None


def test_a_planted_cap_is_removed_for_the_probe_and_recorded(tmp_path, monkeypatch):
    """OPENBLAS_CORETYPE=Prescott pins OpenBLAS to its oldest SSE kernels
    (threadpoolctl names them Katmai): the probe's children must not inherit it,
    and machine.json must say it was there."""
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Prescott")
    code = "from frameval.probe import blas_name; print(blas_name())"
    kept = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO))).stdout
    assert "Katmai" in kept or "Prescott" in kept, kept  # the cap bites where it is kept: the test can fail
    lines = []
    m = probe.record(tmp_path, lines.append, wait_s=1)
    assert m["isa_caps"]["OPENBLAS_CORETYPE"] == "Prescott" and m["isa_caps"] == cpu.caps()
    assert "openblas" in m["method"]["blas"].lower()
    assert "Katmai" not in m["method"]["blas"] and "Prescott" not in m["method"]["blas"]
    assert "OPENBLAS_CORETYPE=Prescott" in lines[-1] and "which the runs keep" in lines[-1]


def test_caps_are_found_described_and_removed():
    env = {"OPENBLAS_CORETYPE": "Haswell", "ONEDNN_MAX_CPU_ISA": "AVX2", "SOME_LIB_MAX_CPU_ISA": "x",
           "XLA_FLAGS": "--xla_cpu_max_isa=AVX2 --xla_dump_to=/tmp/d", "PATH": "/bin"}
    assert cpu.caps(env) == {"ONEDNN_MAX_CPU_ISA": "AVX2", "OPENBLAS_CORETYPE": "Haswell",
                             "SOME_LIB_MAX_CPU_ISA": "x", "XLA_FLAGS": "--xla_cpu_max_isa=AVX2"}
    assert cpu.uncapped(env) == {"XLA_FLAGS": "--xla_dump_to=/tmp/d", "PATH": "/bin"}
    assert cpu.describe("OPENBLAS_CORETYPE").startswith("OpenBLAS")


def test_a_cap_is_listed_only_where_its_library_can_run(tmp_path, monkeypatch):
    """NVPL is NVIDIA's Arm BLAS: on x86_64 nothing loads it, so its cap is recorded as inert, never listed."""
    env = {"NVPL_BLAS_DEBUG_CPU_TYPE": "1", "OPENBLAS_CORETYPE": "Haswell", "MKL_DEBUG_CPU_TYPE": "5"}
    assert cpu.caps(env, machine="x86_64") == {"MKL_DEBUG_CPU_TYPE": "5", "OPENBLAS_CORETYPE": "Haswell"}
    assert cpu.inert_caps(env, machine="x86_64") == {"NVPL_BLAS_DEBUG_CPU_TYPE": "1"}
    assert cpu.caps(env, machine="aarch64") == {"NVPL_BLAS_DEBUG_CPU_TYPE": "1", "OPENBLAS_CORETYPE": "Haswell"}
    assert cpu.caps(env, machine="AMD64") == cpu.caps(env, machine="x86_64")
    monkeypatch.setenv("NVPL_BLAS_DEBUG_CPU_TYPE", "1")
    here = cpu.arch()
    assert ("NVPL_BLAS_DEBUG_CPU_TYPE" in cpu.caps()) == (here == "aarch64")
    if here == "x86_64":
        m = probe.record(tmp_path, lambda _: None, n=64, copy_mb=1, wait_s=0)
        assert "NVPL_BLAS_DEBUG_CPU_TYPE" not in m["isa_caps"] and m["isa_caps_inert"]["NVPL_BLAS_DEBUG_CPU_TYPE"] == "1"


@pytest.mark.fast
@pytest.mark.idle
def test_a_decaying_load_average_is_not_taken_for_work_now():
    """Right after a command's own runs the 1-minute load average still reads busy on
    an idle machine: the CPU's share over half a second decides (every command of
    the suite waited 20 s for the load average before). Real processes, no stand-ins."""
    high = [9.0, 9.0, 9.0]
    assert idle.busy_now([0.0, 0.0, 0.0]) is False  # an idle load average: no look needed
    assert idle.busy_now(high) is False  # this test process sleeps; nothing else runs in the suite now
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        time.sleep(0.3)
        share = idle.busy_share_now()
        assert share is not None and share > idle.BUSY_OTHER_SHARE, share
        assert idle.busy_now(high) is True
    finally:
        for h in hogs:
            h.kill()


STAGED_CHILD = '''
import json, os, sys, time
from frameval import idle
if sys.argv[1] == "fail":
    sys.exit("the import failed")
started = time.time()
time.sleep(1.0)  # a framework's import
idle.wait_for_turn()  # the GEMM scripts reach it inside idle.best_time, after their imports
go = time.time()
time.sleep(0.3)  # the work, which must have the machine alone
print(json.dumps({"started": started, "go": go, "end": time.time(), "staged": bool(os.environ.get(idle.STAGED_VAR)),
                  "cache": False}))
'''


def test_staged_children_start_together_and_work_one_after_the_other(tmp_path, monkeypatch):
    # the probe's framework GEMMs: start-ups (Python, the framework's import) share the
    # cores, the timed products do not; a child that fails before its turn holds up nobody
    from types import SimpleNamespace
    from frameval import envscripts
    (tmp_path / "staged_child.py").write_text(STAGED_CHILD)
    monkeypatch.setattr(envscripts, "REPO", tmp_path)  # where scripts are found and hashed: this one's folder
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # frameval for the child
    monkeypatch.setenv("FRAMEVAL_CACHE_DIR", str(tmp_path / "cache"))
    env = SimpleNamespace(python=sys.executable, key_text="test", bytecode_vars={})
    calls = [dict(env=env, module="staged_child", args=[a], use_cache=False) for a in ("a", "b", "fail", "c")]
    a, b, failed, c = envscripts.run_staged(calls, batch=3)
    assert failed["error"] == "the import failed"
    assert b["started"] < a["go"], "the second child started only after the first one's turn"
    assert a["end"] <= b["go"] and b["end"] <= c["go"], "two children worked at once"
    assert c["started"] >= b["end"], "the next batch started while this one worked"
    for x in (a, b, c):  # each one's turn, not its 1 s start-up: durations of one child, compared
        assert x["staged"] and x["end"] - x["go"] <= x["seconds"] + 0.01 < x["end"] - x["started"], x
    one = envscripts.run(env, "staged_child", ["d"], use_cache=False)  # unstaged: no wait, same line
    assert not one["staged"] and one["seconds"] >= 1.3  # start-up and work alike


SPINNING_CHILD = '''
import json, threading, time
from frameval import idle
def spin():  # a framework's own thread that keeps working while its process waits (MegEngine's)
    while True:
        pass
threading.Thread(target=spin, daemon=True).start()
time.sleep(0.5)  # its import
before, t0 = time.process_time(), time.time()
idle.wait_for_turn()
waited_cpu, waited = time.process_time() - before, time.time() - t0
time.sleep(0.4)  # the work, which must have the machine alone
print(json.dumps({"waited_cpu": waited_cpu, "waited": waited, "cache": False}))
'''


def test_a_waiting_child_whose_own_threads_keep_working_is_stopped_until_its_turn(tmp_path, monkeypatch):
    # blocked on its stdin a child's main thread is quiet, but not a framework's
    # own threads: the parent stops the process until its turn (POSIX only)
    from types import SimpleNamespace
    from frameval import envscripts
    (tmp_path / "spinning_child.py").write_text(SPINNING_CHILD)
    monkeypatch.setattr(envscripts, "REPO", tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("FRAMEVAL_CACHE_DIR", str(tmp_path / "cache"))
    env = SimpleNamespace(python=sys.executable, key_text="test", bytecode_vars={})
    calls = [dict(env=env, module="spinning_child", args=[a], use_cache=False) for a in ("a", "b", "c")]
    a, b, c = envscripts.run_staged(calls, batch=3)
    assert c["waited"] > 0.8, c  # it waited through the two turns before its own
    for x in (a, b, c):
        # the spinning thread alone would have taken about as much CPU as the wait lasted
        assert "error" not in x and x["waited_cpu"] < 0.1 + 0.1 * x["waited"], x



def test_an_interrupted_probe_leaves_no_child_stopped_or_waiting(tmp_path, monkeypatch):
    # Ctrl-C while one child works: the others, stopped until their turn, are ended
    from types import SimpleNamespace
    from frameval import envscripts
    (tmp_path / "spinning_child.py").write_text(SPINNING_CHILD)
    monkeypatch.setattr(envscripts, "REPO", tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("FRAMEVAL_CACHE_DIR", str(tmp_path / "cache"))
    started, init = [], envscripts._Child.__init__

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(envscripts._Child, "__init__", lambda self, *a, **k: (init(self, *a, **k), started.append(self))[0])
    monkeypatch.setattr(envscripts._Child, "finish", interrupted)
    env = SimpleNamespace(python=sys.executable, key_text="test", bytecode_vars={})
    calls = [dict(env=env, module="spinning_child", args=[a], use_cache=False) for a in ("a", "b", "c")]
    with pytest.raises(KeyboardInterrupt):
        envscripts.run_staged(calls, batch=3)
    assert len(started) == 3 and all(c.proc.poll() is not None for c in started), [c.proc.poll() for c in started]


WOBBLY_CHILD = '''
import json, os, sys
# the first call in each folder is busy by its repeats alone (or by other processes), later ones idle
mark = os.path.join(os.environ["FRAMEVAL_CACHE_DIR"], sys.argv[1] + ".seen")
first = not os.path.exists(mark)
open(mark, "w").close()
busy = {"spread": "repeat spread 30%", "others": "other processes 60% of the CPU time",
        "always": "repeat spread 30%"}[sys.argv[1]] if first or sys.argv[1] == "always" else None
print(json.dumps({"gflops": 50.0 if busy else 100.0, "busy": busy, "other_share": 0.6 if sys.argv[1] == "others" else 0.0,
                  "cache": busy is None}))
'''


def test_a_gemm_figure_busy_by_its_own_repeats_alone_is_measured_once_more(tmp_path, monkeypatch):
    # MindSpore's 2-thread product on an idle machine: one process in two failed to repeat within 3%
    from types import SimpleNamespace
    from frameval import ceilings, envscripts
    (tmp_path / "wobbly_child.py").write_text(WOBBLY_CHILD)
    monkeypatch.setattr(envscripts, "REPO", tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("FRAMEVAL_CACHE_DIR", str(tmp_path))
    env = SimpleNamespace(python=sys.executable, key_text="test", bytecode_vars={})
    calls = [dict(env=env, module="wobbly_child", args=[a], use_cache=False) for a in ("spread", "others", "always")]
    spread, others, always = ceilings._again_where_busy(calls, envscripts.run_staged(calls, batch=2))
    assert spread["busy"] is None and spread["gflops"] == 100.0 and spread["first_busy"] == "repeat spread 30%"
    assert others["busy"] and "first_busy" not in others  # other processes held the cores: not measured again
    assert always["busy"] == "repeat spread 30%" and always["gflops"] == 50.0 and "first_busy" not in always


@pytest.mark.fast
def test_the_gemm_is_measured_at_the_thread_counts_the_plan_runs():
    """Each framework's GEMM is measured on the counts the plan's runs are set
    against (report/peak.py: a 1-thread run against the 1-thread figure, any
    other against the all-core one): the default plan (every run on all cores)
    measures no 1-thread product, a sweep over 1 and 2 threads both; a count
    left out is None in the entry and named, never 0."""
    from frameval import ceilings
    assert ceilings.plan_counts([0, None, 0], 2) == [2]
    assert ceilings.plan_counts([1, 2], 2) == [1, 2]
    assert ceilings.plan_counts([1, 1], 16) == [1]
    assert ceilings.plan_counts([4], 16) == [16]  # 4 of 16 cores: set against the all-core figure, as before
    assert ceilings.plan_counts([0], 1) == [1]
    fig = {"gflops": 170.0, "repeats": 3, "spread": 0.01, "load": [0.1], "other_share": 0.0, "busy": None,
           "op": "jnp.dot", "version": "0.10", "seconds": 1.0}
    e = ceilings._one("jax", {2: fig}, 2)
    assert e["gflops_1"] is None and e["not_measured"] == ["1"] and e["gflops_all"] == 170.0
    assert set(e["figures"]) == {"2"} and (e["gflops_best"], e["threads_best"]) == (170.0, 2)
    both = ceilings._one("jax", {1: dict(fig, gflops=90.0), 2: fig}, 2)
    assert both["gflops_1"] == 90.0 and "not_measured" not in both


def test_a_framework_measured_at_one_count_runs_one_child(tmp_path, monkeypatch):
    """For real (JAX's environment): with counts [all cores] one child is
    started and timed, the entry holds its figure and no 1-thread one, and the
    line said names only the count measured."""
    from frameval import ceilings, envs, envscripts
    env = envs.ensure_framework("jax")
    monkeypatch.setenv("FRAMEVAL_CACHE_DIR", str(tmp_path))  # no figure cached: measured
    started = []
    child = envscripts._Child
    monkeypatch.setattr(envscripts, "_Child", lambda call, staged: started.append(call["args"]) or child(call, staged))
    cores = os.cpu_count() or 1
    said = []
    got = ceilings.measure({"jax": env}, cores, said.append, counts=[cores])
    assert started == [["jax", str(cores)]], started
    e = got["jax"]
    assert e["gflops_all"] > 0 and e.get("error") is None
    if cores > 1:
        assert e["gflops_1"] is None and e["not_measured"] == ["1"]
        assert f"GFLOP/s on {cores} threads" in said[-1] and "1/" not in said[-1], said
