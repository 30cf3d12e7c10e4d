#!/usr/bin/env bash
# The GPU route's proof (issues #47 deliverable 4 and #48), prepared on the CPU and run
# on a lent GPU machine through the device tool in one call. Nothing is installed there
# from a network: the runner's missing wheels travel in .gpubundle (docs/gpu.md).
#
# Here, once (a network; 45 wheels, about 17 MB, for the H100's python3 3.12):
#   echo /.gpubundle/ >> .git/info/exclude
#   python3 run_all.py bundle .gpubundle --runner-only \
#       --target-freeze ../shared/gpu/h100-python3-freeze.txt --python-version 3.12 --platform manylinux_2_28_x86_64
# There: device run, carry [".gpubundle"], timeout_s 480, command:
#   PYTHONUNBUFFERED=1 bash tools/gpu_proof.sh
# Rehearsed here on the CPU with an interpreter like the H100's (docs/gpu.md):
#   DEVICE=cpu PY=/path/to/python3.12 FRAMEVAL_CACHE_DIR=/tmp/c FRAMEVAL_JUPYTER_DIR=/tmp/j bash tools/gpu_proof.sh
# What comes back in $OUT (8 files at most): report.md, report.html, results.tgz (every
# result.json and timing.json, no notebooks), log.txt, gpu.txt; with EAGER=1 also log-eager.txt,
# report-eager.md, results-eager.tgz.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-proof-out}
DEVICE=${DEVICE:-gpu}
PY=${PY:-$(command -v python3)}
R=${R:-/tmp/gpu-proof}
# WORKLOADS: the quick profile's workloads to run (the GPT included: --workloads names it, it is not in
# the default matrix). EAGER=1 adds torch's eager runs afterwards, in their own folder and report, once
# the graph results are packed (JAX eager dispatches op by op and did not fit a 45 s limit on the H100).
WORKLOADS=${WORKLOADS:-lenet,dcgan,lstm}
EAGER=${EAGER:-0}
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || echo "no nvidia-smi"; } > "$OUT/gpu.txt" 2>&1
"$PY" -c 'import torch, jax; print("torch", torch.__version__, torch.version.cuda, "jax", jax.__version__, jax.devices())' \
    >> "$OUT/gpu.txt" 2>&1
# The quick profile, torch and JAX, graph mode, at each framework's default precision: the six
# runs whose checks failed on the first H100 run (TF32). The whole route runs offline, report
# included. Every run gets a 150 s limit, so one slow run is recorded and the rest still report.
time "$PY" run_all.py --offline .gpubundle --python torch="$PY" --python jax="$PY" \
    --frameworks torch,jax --workloads "$WORKLOADS" --device "$DEVICE" --mode graph --timeout 150 --out "$R" 2>&1 | tee "$OUT/log.txt"
cp "$R/report.md" "$R/report.html" "$OUT/" 2>/dev/null
(cd "$R" && tar czf "$OUT/results.tgz" timing.json plan.json provenance.json machine.json \
    $(find runs -name result.json)) 2>/dev/null
# The second command of the first H100 run: NVIDIA_TF32_OVERRIDE=0 must run everything again
# (the cache key's "arithmetic" part), not reuse TF32 results.
NVIDIA_TF32_OVERRIDE=0 "$PY" run_all.py --offline .gpubundle --python torch="$PY" --python jax="$PY" \
    --frameworks torch,jax --workloads "$WORKLOADS" --device "$DEVICE" --mode graph --out "$R" --dry-run 2>&1 | tee -a "$OUT/log.txt"
if [ "$EAGER" = 1 ]; then
    time "$PY" run_all.py --offline .gpubundle --python torch="$PY" --frameworks torch --workloads "$WORKLOADS" \
        --device "$DEVICE" --mode eager --timeout 120 --out "$R-eager" 2>&1 | tee "$OUT/log-eager.txt"
    cp "$R-eager/report.md" "$OUT/report-eager.md" 2>/dev/null
    (cd "$R-eager" && tar czf "$OUT/results-eager.tgz" timing.json plan.json provenance.json machine.json \
        $(find runs -name result.json)) 2>/dev/null
fi
