#!/usr/bin/env python3
"""The LSTM against its naive forecast (#67): does the same network, trained to
predict the *change* from the window's last value, beat persistence (next value
= the window's last value) where the specified network, predicting the *level*,
does not?

In PyTorch (eager: the arithmetic, not the speed, is measured here), per seed
and profile, on the specified data (docs/workloads.md: the CO2 windows of 20,
standardised on the training part, split chronologically):

- level: the specified workload: LSTM(1→32) and dense 32→1 predict the next value;
- delta: the same network, the same initial weights (nb.init_weights), data order
  (nb.batches), Adam and learning rate, trained on y − x_last, and its forecast
  read as x_last + the predicted change.

Printed per profile: validation R² of both, persistence's, and each one's skill
over persistence (1 − MSE / MSE_persistence), mean over the seeds with the
range, then the verdict the docs quote. The 1-minute load average is printed
beside each figure (the figures are not timings; it shows the machine's state).

    python3 run_all.py bench lstm_delta                  (3 seeds, the quick and full profiles' epochs)
    python3 run_all.py bench lstm_delta --seeds 1 --epochs 2   (the suite's smoke run)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

if __name__ == "__main__":
    from frameval.bootstrap import bootstrap_script  # standard library only
    bootstrap_script(__file__)  # returns inside the runner environment

# run inside the torch environment: one JSON line per (seed, profile)
CHILD = r"""
import json, sys
import numpy as np
import torch
from frameval import nb
from frameval.workloads.lstm.data import load_co2
cfg = json.loads(sys.argv[1])
torch.set_num_threads(cfg["threads"])
d = load_co2(20)
x_tr, y_tr = torch.from_numpy(d.x_train), torch.from_numpy(d.y_train)
x_va = torch.from_numpy(d.x_val)
last_tr, last_va = x_tr[:, -1], x_va[:, -1]
persist = nb.val_r2(d, last_va.numpy())
out = {"persistence_r2": persist}
for target in ("level", "delta"):
    w = nb.init_weights("lstm", cfg["seed"])
    lstm, fc = torch.nn.LSTM(1, 32, batch_first=True), torch.nn.Linear(32, 1)
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(torch.from_numpy(w["lstm.weight_ih"]))
        lstm.weight_hh_l0.copy_(torch.from_numpy(w["lstm.weight_hh"]))
        lstm.bias_ih_l0.copy_(torch.from_numpy(w["lstm.bias"]))
        lstm.bias_hh_l0.zero_()
        fc.weight.copy_(torch.from_numpy(w["fc.weight"]))
        fc.bias.copy_(torch.from_numpy(w["fc.bias"]))
    lstm.bias_hh_l0.requires_grad_(False)  # the spec's one bias, as the notebook holds it
    params = [p for p in list(lstm.parameters()) + list(fc.parameters()) if p.requires_grad]
    opt = torch.optim.Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    goal = y_tr - last_tr if target == "delta" else y_tr
    for epoch in range(cfg["epochs"]):
        for idx in nb.batches(len(y_tr), 32, cfg["seed"], epoch):
            i = torch.from_numpy(idx)
            pred = fc(lstm(x_tr[i])[0][:, -1])
            loss = torch.nn.functional.mse_loss(pred, goal[i])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        p = fc(lstm(x_va)[0][:, -1])
        level = (last_va + p) if target == "delta" else p
    out[target + "_r2"] = nb.val_r2(d, level.numpy())
print(json.dumps(out))
"""


def skill(r2: float, base: float) -> float:
    """1 − MSE / MSE_persistence: the same validation data, so the same variance."""
    return 1 - (1 - r2) / (1 - base)


def run(python, seed: int, epochs: int, threads: int) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    p = subprocess.run([str(python), "-c", CHILD, json.dumps({"seed": seed, "epochs": epochs, "threads": threads})],
                       capture_output=True, text=True, env=env, cwd=REPO, timeout=3600)
    if p.returncode:
        raise SystemExit(f"lstm_delta: the torch child failed (seed {seed}, {epochs} epochs): "
                         + (p.stderr.strip().splitlines() or ["no output"])[-1])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (default 3)")
    ap.add_argument("--epochs", default="", help="comma-separated epoch counts (default: the quick and full profiles')")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args(argv)
    from frameval import envs, workloads
    wl = workloads.get("lstm")
    profiles = ({f"{e} epochs": int(e) for e in a.epochs.split(",")} if a.epochs else
                {"quick": int(wl.profiles["quick"]["epochs"]), "full": int(wl.spec_settings["epochs"])})
    env = envs.ensure_framework("torch")
    print(f"LSTM, level against delta target, torch eager, seeds 0..{a.seeds - 1}, {a.threads} thread(s)")
    for name, epochs in profiles.items():
        got = [run(env.python, s, epochs, a.threads) for s in range(a.seeds)]
        base = got[0]["persistence_r2"]
        label = name if name.endswith("epochs") else f"{name} profile ({epochs} epochs)"
        print(f"{label}: persistence R² {base:.4f} (load {os.getloadavg()[0]:.2f})")
        for t in ("level", "delta"):
            r2s = [g[t + "_r2"] for g in got]
            sk = [skill(r, base) for r in r2s]
            print(f"  {t:5}: R² mean {sum(r2s) / len(r2s):.4f} ({min(r2s):.4f}–{max(r2s):.4f}), skill over "
                  f"persistence mean {sum(sk) / len(sk):+.3f} ({min(sk):+.3f}–{max(sk):+.3f}) "
                  f"(load {os.getloadavg()[0]:.2f})")
        beats = all(skill(g["delta_r2"], base) > 0 for g in got)
        print(f"  delta beats persistence on every seed: {'yes' if beats else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
