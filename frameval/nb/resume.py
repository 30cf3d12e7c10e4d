"""Checkpoint and resume (issue #70, deliverable 4): the part that is the same in
every framework. Numpy and the standard library only.

`-p resume_check=true` proves that a training interrupted after epoch k resumes
to the result of the training that was never interrupted:

1. the run trains as always; after epoch k (half its epochs) the framework
   folder's `checkpoint` (frameworks/contract.py) saves the training state into
   work/checkpoint/state/: the weights, the optimizer's moments and step count,
   and the framework's global random state where it has one. The position in
   the data order is the epoch: every epoch's order is a function of the seed
   and the epoch alone (`nb.batches`), so the next batch of a checkpoint taken
   between epochs is the first of epoch k + 1;
2. at its end the run writes the losses of epochs k + 1 to n and its final
   weights beside the checkpoint (what the resumed run must reproduce);
3. the runner starts a second kernel of the same notebook with `resume_from`
   set to the checkpoint (frameval/execute.py): it builds the model and runs its
   check as any run does, then `restore` puts the saved state back and it
   trains epochs k + 1 to n;
4. that kernel compares its losses and final weights with the first's: "exact"
   (bit for bit), "within" (the check's loss tolerance, relative), or "diverged",
   with the largest deviations. The runner copies this `resume` record into the
   run's result.

A notebook's *train* cell:

    run = nb.Resume(rec, fw, epochs, state=lambda: (model, opt), weights=lambda: ...)
    model, opt = run.restore(model, opt)
    for epoch in run.epochs():
        ...

Without `resume_check` or `resume_from`, `epochs()` is `range(epochs)` and
nothing is saved.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np

from .. import files, workloads
from ..faults import injected

STATE = "state"            # the folder `fw.checkpoint` writes into, inside the checkpoint folder
META = "meta.json"         # what was saved, when, from which parameters
REST = "rest.json"         # the uninterrupted run's epochs after the checkpoint
WEIGHTS = "final_weights.npz"
# parameters that are the resume's own or do not change the training's arithmetic
NOT_COMPARED = ("out_dir", "resume_check", "resume_from", "serve", "serve_calls")
# "within": every loss and every final weight tensor within this relative deviation
# (the check's loss tolerance, frameval/nb/check.py: one float32 rounding path against another)
WITHIN = 1e-4


class ResumeError(RuntimeError):
    """A checkpoint that is missing, unreadable or from another run; the message says which."""


def after_epoch(epochs: int) -> int:
    """k, the epoch after which the checkpoint is taken: half the epochs, at least 1."""
    return max(1, int(epochs) // 2)


def _failed(stage: str, e: BaseException) -> dict:
    text = str(e).strip().splitlines()
    return {"status": "failed", "stage": stage, "error": f"{type(e).__name__}: {text[-1] if text else ''}"[:600]}


def _numpy(named: dict) -> dict:
    from .check import to_numpy  # the one converter of framework tensors the check uses
    return {str(k): np.asarray(to_numpy(v)) for k, v in named.items()}


def _bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


class Resume:
    """One run's checkpoint and resume (the module's docstring). `state()` returns the
    objects `fw.checkpoint` saves (the model, its optimizer(s); for JAX the parameter and
    optimizer pytrees) as they are now; `weights()` the trained tensors by name."""

    def __init__(self, rec, fw, epochs: int, *, state, weights):
        params = rec.params
        self.rec, self.fw, self.n = rec, fw, int(epochs)
        self.state, self.weights = state, weights
        self.source = str(params.get("resume_from") or "")
        self.checking = bool(params.get("resume_check")) and not self.source
        self.k = after_epoch(self.n)
        self.start, self.restored = 0, False
        self.folder = Path(self.source) if self.source else rec.work_file(files.CHECKPOINT)
        self.curves = [key for key, _ in workloads.get(rec.workload).curves]
        if self.checking and self.n < 2:
            raise ResumeError(f"resume_check needs at least 2 epochs (epochs={self.n}): the checkpoint is taken "
                              "after half of them")

    # ------------------------------------------------------------ the resumed kernel
    def restore(self, *objs):
        """`objs` as given, or, in a kernel that resumes, the checkpoint's state put back by
        `fw.restore` (in place where the framework's objects are mutable); the training
        then starts at the checkpoint's epoch."""
        if not self.source:
            return objs[0] if len(objs) == 1 else objs
        meta = self._meta()
        t0 = time.perf_counter()
        objs = tuple(self.fw.restore(self.rec, self.folder / STATE, *objs))
        if injected(self.rec.framework, self.rec.workload, "resume-") == "resume-fresh-optimizer":
            self.fw.reset_adam(*objs[1:])  # the fault tests' incomplete restore: the comparison must call it diverged
        self.restore_s = time.perf_counter() - t0
        self.start, self.restored = int(meta["epoch"]), True
        self.rec.first_epoch = self.start  # its epochs are numbered k + 1 to n, as in the first kernel
        print(f"resumed from {self.folder} after epoch {self.start} ({meta['format']})")
        return objs[0] if len(objs) == 1 else objs

    def _meta(self) -> dict:
        path = self.folder / META
        if not path.exists():
            raise ResumeError(f"no checkpoint at {self.folder} ({META} is missing)")
        meta = json.loads(path.read_text(encoding="utf-8"))
        mine = self.rec.params
        theirs = meta.get("params", {})
        other = [f"{k}={theirs.get(k)!r} there, {mine.get(k)!r} here" for k in sorted(set(mine) | set(theirs))
                 if k not in NOT_COMPARED and mine.get(k) != theirs.get(k)]
        if (meta.get("framework"), meta.get("workload")) != (self.rec.framework, self.rec.workload):
            other.insert(0, f"{meta.get('framework')}/{meta.get('workload')} there")
        if other:
            raise ResumeError(f"the checkpoint at {self.folder} is from another run: {'; '.join(other)}")
        return meta

    # ------------------------------------------------------------ both kernels
    def epochs(self):
        """The epoch indices to train (0-based); the checkpoint is saved after epoch k, the
        rest written at the end, or (resumed) the comparison made."""
        if self.source and not self.restored:
            raise ResumeError("resume_from is set but the notebook never called Resume.restore")
        for e in range(self.start, self.n):
            yield e
            if self.checking and e + 1 == self.k:
                self._save()
        if self.checking:
            self._save_rest()
        elif self.source:
            self._compare()

    def _save(self) -> None:
        """The checkpoint after epoch k; a failure (a full disk, a framework that cannot)
        is the `resume` record's, and the training goes on."""
        shutil.rmtree(self.folder, ignore_errors=True)
        (self.folder / STATE).mkdir(parents=True)
        t0 = time.perf_counter()
        try:
            fmt = self.fw.checkpoint(self.rec, self.folder / STATE, *self.state())
        except Exception as e:  # noqa: BLE001 - recorded: the run's other results stay
            self.checking = False
            status = "not_offered" if type(e).__name__ == "NotOffered" else None
            out = dict(_failed("checkpoint", e), after_epoch=self.k)
            self.rec.set(resume=dict(out, status=status) if status else out)
            print(f"resume: the checkpoint failed: {out['error']}")
            return
        record = {"status": "checkpointed", "after_epoch": self.k, "epochs": self.n, "format": str(fmt),
                  "save_s": round(time.perf_counter() - t0, 4), "bytes": _bytes(self.folder / STATE),
                  "data_position": f"epoch {self.k + 1}, its first batch (the order is nb.batches(seed, epoch))"}
        meta = dict(record, framework=self.rec.framework, workload=self.rec.workload, epoch=self.k,
                    params={k: v for k, v in self.rec.params.items() if k not in NOT_COMPARED})
        files.atomic_write_json(self.folder / META, meta)
        self.rec.set(resume=record)
        print(f"checkpoint after epoch {self.k}: {record['bytes'] / 1024:.1f} KiB in {record['save_s']:.3f} s ({fmt})")

    def _save_rest(self) -> None:
        """What the resumed kernel must reproduce: epochs k + 1 to n's curves, the final weights."""
        rest = [{k: ep.get(k) for k in ("epoch", *self.curves)} for ep in self.rec.epochs[self.k:]]
        try:
            files.atomic_write_json(self.folder / REST, {"epochs": rest})
            np.savez(self.folder / WEIGHTS, **_numpy(self.weights()))
        except OSError as e:
            self.rec.set(resume=dict(self.rec.result.get("resume", {}), **_failed("checkpoint", e)))

    def _compare(self) -> None:
        """The resumed run against the uninterrupted one: its `resume` record."""
        rest = json.loads((self.folder / REST).read_text(encoding="utf-8"))["epochs"]
        with np.load(self.folder / WEIGHTS) as z:
            final = {k: z[k] for k in z.files}
        record = dict(compare(rest, self.rec.epochs, self.curves, final, _numpy(self.weights())),
                      after_epoch=self.start, restore_s=round(self.restore_s, 4))
        self.rec.set(resume=record)
        print(summary(record))


def compare(rest: list, mine: list, curves: list, final: dict, weights: dict) -> dict:
    """Losses epoch by epoch and final weights tensor by tensor: exact, within WITHIN, or diverged."""
    loss_abs, loss_rel, unequal = 0.0, 0.0, []
    if len(rest) != len(mine):
        return {"status": "diverged", "why": f"{len(mine)} epochs resumed, {len(rest)} expected"}
    for a, b in zip(rest, mine):
        for key in curves:
            x, y = a.get(key), b.get(key)
            if x is None and y is None:
                continue
            if x is None or y is None or not np.isfinite([x, y]).all():
                unequal.append(f"epoch {a['epoch']} {key}: {x!r} against {y!r}")
                continue
            d = abs(float(x) - float(y))
            loss_abs, loss_rel = max(loss_abs, d), max(loss_rel, d / max(abs(float(x)), 1e-30))
    w_abs, w_rel, worst = 0.0, 0.0, ""
    if set(final) != set(weights):
        unequal.append(f"weights {sorted(set(final) ^ set(weights))} in one run only")
    for name in sorted(set(final) & set(weights)):
        a, b = final[name].astype(np.float64), weights[name].astype(np.float64)
        d = float(np.max(np.abs(a - b))) if a.size else 0.0
        rel = d / max(float(np.max(np.abs(a))) if a.size else 0.0, 1e-30)
        if rel > w_rel or (d and not worst):
            worst = name
        w_abs, w_rel = max(w_abs, d), max(w_rel, rel)
    exact = not unequal and loss_abs == 0.0 and w_abs == 0.0
    within = not unequal and loss_rel <= WITHIN and w_rel <= WITHIN
    return {"status": "exact" if exact else "within" if within else "diverged", "epochs_compared": len(rest),
            "loss_max_abs": loss_abs, "loss_max_rel": loss_rel, "weights_max_abs": w_abs, "weights_max_rel": w_rel,
            "worst_tensor": worst if w_abs else "", "unequal": unequal[:5], "tolerance": WITHIN}


def summary(r: dict) -> str:
    """One line for the notebook's output."""
    if r["status"] in ("exact", "within", "diverged"):
        return (f"resume after epoch {r.get('after_epoch')}: {r['status']}; losses max |diff| "
                f"{r.get('loss_max_abs', float('nan')):.3g}, final weights max |diff| {r.get('weights_max_abs', float('nan')):.3g}")
    return f"resume: {r['status']}: {r.get('error', '')}"
