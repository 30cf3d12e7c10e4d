"""Numerical equivalence of a framework's training step against the numpy float64
reference (the workload's `reference.py` on `frameval.nb.reference`), run by the `check` cell of every notebook.

    from frameval.nb import check
    chk = check.Checker(rec, workload, seed, lr=lr, batch_size=batch_size, **options)  # options: the workload's own (lstm_biases=1)
    for b in chk.batches: ...          # STEPS batches of the training batch size (numpy)
    chk.forward(**outputs)             # the model at the shared initial weights, on chk.batches[0]
    chk.grads({name: grad})            # the gradients the FIRST training step computed
    chk.losses(**losses)               # once per step, in order: the losses the step returned
    chk.weights({name: w}, running={name: stat})   # after the STEPS steps
    chk.finish()                       # -> rec.result["check"]; prints a table; never raises

The steps are taken with the very step object that training then uses (same
compiled graph, same optimizer objects), dropout off; afterwards the notebook
puts the shared initial weights and a fresh optimizer state back in place.

Batches (deterministic from the seed, drawn from the embedded data sets,
independent of the run's data parameters):
    lenet: {"x": float32 (n,1,28,28), "y": int64 (n,)}
    dcgan: {"x": float32 (n,1,28,28), "z": float32 (n,100)}
    lstm:  {"x": float32 (n,20,1),    "y": float32 (n,1)}
Forward outputs: lenet logits; dcgan fake = G(z) in training mode (batch
statistics) and d_logits = D(x) with dropout off; lstm pred.
Gradients of the first step, by canonical name: lenet and lstm, of the loss
(lstm: lstm.bias, or bias_ih and bias_hh with lstm_biases=2); dcgan
"discriminator.<name>" of d_loss, "generator.<name>" of g_loss through the
once-updated discriminator.
Weights: every trainable tensor by canonical name (dcgan prefixed with
"generator." / "discriminator."); running: the generator's BatchNorm running
statistics ("generator.bn0.running_mean", ...).

Measures and why:
- forward, gradients, running statistics: relative norm ||out - ref|| / ||ref||.
- losses: |a - b| / |b| per step.
- update: the change w_k - w_0 after k Adam steps against the reference's,
  in units of Adam's step size (lr * k), each element weighted by the smallest
  magnitude of its reference gradient over the k steps (`movement_err`). Adam moves every element by
  about lr whatever its gradient, so an element whose gradient is float32 noise
  (a near-cancelling sum) can move either way, and an element whose moves
  cancel across steps has a near-zero reference change; neither says anything
  about the maths. A wrong beta or a missing bias correction changes every
  element's move by a fraction of lr, which this measure sees. The plain figure
  (relative to the reference change, unweighted) is kept for information, with
  a diagnosis only when its own conditions hold.
A gradient off by a constant factor fails `grads` and `losses`; wrong betas or a
missing bias correction fail `update` (one fresh Adam step cannot see betas:
the first step is lr * g / |g| for any betas).
"""
from __future__ import annotations

import math
import time
import traceback

import numpy as np

from .. import workloads
from ..catalog import CHECK_SECTIONS
from ..workloads.base import Kit
from . import reference as R
from . import amp as AMP
from . import precision, refcache
from .weights import init_weights

STEPS = 3
PROBE_SIZE = 16
# Calibrated, not loosened: "update" is a new measure (movement in units of lr * k).
# Its float32 floor was measured on the DCGAN generator, whose gradients at the
# initial weights are small differences of large BatchNorm-backward terms, so
# float32 rounding at one step moves the next steps' gradients by up to ~1e-2:
# 7.7e-4 (torch), 8.6e-4 (TensorFlow), 8.4e-4 (MXNet) at batch 16-64 on
# generator.fc.weight, against 1.6e-6 for a numpy float32 run. The mutations it
# must catch sit far above 5e-3: Adam's betas swapped 3.2e-2 to 4.8e-2, no bias
# correction > 2 (tests/test_reference.py).
TOLERANCES = {"forward": 1e-4, "losses": 1e-4, "grads": 1e-3, "update": 5e-3, "running": 1e-3}
# Each workload's default lr, forward outputs, losses, reference and any
# tolerances of its own live in its record (frameval/workloads/).
# A LeakyReLU input within this fraction of its layer's RMS from the kink is
# ambiguous in float32 (its rounding error is ~1e-7 of the RMS; this is ~10x that).
# A workload may set its own (Workload.kink_fraction: LeNet's, measured over k steps).
KINK_FRACTION = 1e-6
# An element counts as "noise-level" for the diagnosis when its smallest
# reference gradient is below this fraction of its tensor's largest.
NOISE_FRACTION = 1e-2


# ----------------------------------------------------------------------- probe
def kit():
    """The tools a workload's reference hooks compute with (they are standard
    library only and receive them from here)."""
    from . import data
    return Kit(np=np, R=R, data=data, init=init_weights)


def check_batches(workload: str, seed: int = 0, batch_size: int = PROBE_SIZE, steps: int = STEPS):
    """-> [batch dict] * steps, and the source. The same in every framework."""
    wl, k = workloads.get(workload), kit()
    x, y, source = wl.sample(k, seed, batch_size * steps)
    out = []
    for i in range(steps):
        s = slice(i * batch_size, (i + 1) * batch_size)
        out.append(wl.batch(k, x[s], y[s], seed, i))
    return out, source


def probe(workload: str, seed: int = 0, size: int = PROBE_SIZE) -> dict:
    """One batch of `size` samples (the first check batch)."""
    return check_batches(workload, seed, size, 1)[0][0]


# ------------------------------------------------------------------- helpers
def to_numpy(a):
    """A framework tensor (torch, tf, paddle, mindspore, megengine, mxnet) or
    a number -> numpy array."""
    if isinstance(a, np.ndarray):
        return a
    if isinstance(a, (int, float, np.generic)):
        return np.asarray(a)
    for attr in ("detach", "cpu"):
        f = getattr(a, attr, None)
        if callable(f):
            try:
                a = f()
            except Exception:
                pass
    for attr in ("asnumpy", "numpy"):
        f = getattr(a, attr, None)
        if callable(f):
            try:
                return np.asarray(f())
            except Exception:
                pass
    # a bfloat16 tensor numpy cannot hold (torch's, under a mixed-precision run): exactly, as float32
    for widen in (lambda t: t.float(), lambda t: t.astype("float32")):
        try:
            wide = widen(a)
        except Exception:
            continue
        if wide is not a:
            return to_numpy(wide)
    return np.asarray(a)


def rel_err(out, ref, weight=None) -> float:
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    if weight is not None:
        out, ref = out * weight, ref * weight
    den = float(np.linalg.norm(ref))
    num = float(np.linalg.norm(out - ref))
    return num if den == 0.0 else num / den


def movement_err(d_out, d_ref, weight, scale) -> float:
    """Error of Adam's k-step movement in units of its step size (lr * k: Adam
    moves an element at most about lr a step), each element weighted by its
    smallest reference gradient over the steps. Dividing by the step size, not
    by the reference movement, keeps elements whose moves cancel across steps
    from inflating the figure; the weights keep an element whose gradient was
    noise-level at any step (float32 noise's sign decides its move there) from
    deciding it."""
    w = np.asarray(weight, np.float64)
    den = float(np.linalg.norm(w)) * scale
    num = float(np.linalg.norm(w * (np.asarray(d_out, np.float64) - np.asarray(d_ref, np.float64))))
    return num if den == 0.0 else num / den


def _fmt(v):
    if v is None:
        return "not checked"
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return f"{v:.2e}"


def _verdict(pairs, extra_bad=False):
    """pairs of (err or None, tolerance): False if any fails, None if any is missing."""
    if extra_bad or any(v is not None and not (v <= t) for v, t in pairs):
        return False
    if not pairs or any(v is None for v, _ in pairs):
        return None
    return True


def _combine(verdicts):
    """False if any is False, None if any is None, else True."""
    verdicts = list(verdicts)
    return False if False in verdicts else (None if None in verdicts else True)


def _max(d):
    vals = [v for v in d.values() if v is not None]
    return max(vals) if vals else None


class Checker:
    def __init__(self, rec, workload: str, seed: int = 0, lr: float | None = None,
                 batch_size: int = PROBE_SIZE, steps: int = STEPS, **options):
        self.t0 = time.perf_counter()
        self.rec, self.workload, self.seed = rec, workload, int(seed)
        self.wl = workloads.find(workload)  # None: the setup problem says so, the check still reports
        self.tol = {**TOLERANCES, **(self.wl.tolerances if self.wl else {})}
        self.lr = float(lr) if lr is not None else (self.wl.default_lr if self.wl else 1e-3)
        self.batch_size, self.steps = int(batch_size), int(steps)
        # the workload's own options (its record's check_options, e.g. the LSTM's bias vectors), recorded by name
        known = self.wl.check_options if self.wl else {}
        self.options = {k: type(v)(options.get(k, v)) for k, v in known.items()}  # an int stays an int, a name a str
        self.ref_s, self.ref_cached = 0.0, False
        self.problems, self.ignored, self.diagnosis = [], [], []
        self.unreached: dict = {}  # section -> why the framework's API gives no access to it
        self.res = {"forward": {}, "grads": {}, "update": {}, "update_plain": {}, "running": {}}
        self.step_losses = []
        self._ref = None
        self.kink = {"inputs_near_kink": 0, "budget": {},
                     "fraction": (self.wl.kink_fraction or KINK_FRACTION) if self.wl and self.wl.kink_sensitive else None}
        self.allowances = []  # each allowance that turned a figure over its tolerance into a pass, named
        if set(options) - set(known):
            self.problems.append(f"setup: options {sorted(set(options) - set(known))} are not {workload}'s "
                                 f"(it takes {sorted(known) or 'none'})")
        try:
            self.batches, self.source = check_batches(workload, self.seed, self.batch_size, self.steps)
            self.w0 = self._initial()
        except Exception as e:  # never raise from the check
            self.batches, self.w0, self.source = [{}], {}, "unavailable"
            self.problems.append(f"setup: {type(e).__name__}: {e}")
        self.probe = self.batches[0]
        self._full_float32()

    def _full_float32(self):
        """The check runs at full float32 (TF32 and lower defaults off, by the framework's own
        switches: nb/precision.py); finish() restores the run's own settings for training."""
        self.precision_set = []
        try:
            self.precision_set = precision.make_strict(getattr(self.rec, "framework", ""), getattr(self.rec, "device", "cpu"))
        except Exception as e:  # noqa: BLE001 - a switch that cannot be set: the check still runs, and says so
            self.problems.append(f"precision: cannot set full float32 ({type(e).__name__}: {e})")

    # -------------------------------------------------------- reference
    def _initial(self):
        return workloads.get(self.workload).initial(kit(), self.seed, **self.options)

    def _flat_w0(self):
        return self.wl.flat(self.w0) if self.wl else self.w0

    def reference(self) -> dict:
        """The reference's k steps (computed once): losses, grads, grad_min, weights."""
        if self._ref is None:
            self._ref, self.ref_cached = refcache.cached(self.workload, self._flat_w0(), self.batches, self.lr,
                                                         self._compute_reference)
        return self._ref

    def _compute_reference(self):
        return self.wl.train(kit(), self.w0, self.batches, self.lr)

    def _ref_forward(self):
        return self.wl.forward(kit(), self.w0, self.probe)

    def _safe(self, what, f):
        t = time.perf_counter()
        try:
            return f()
        except Exception as e:
            self.problems.append(f"reference {what}: {type(e).__name__}: {e}")
            return None
        finally:
            self.ref_s += time.perf_counter() - t

    # -------------------------------------------------------- comparing
    def _array(self, name, out, shape, section):
        """The framework's value as float64 in the reference's shape, or None (problem recorded)."""
        try:
            a = to_numpy(out).astype(np.float64)
        except Exception as e:
            self.problems.append(f"{section} {name}: cannot convert ({type(e).__name__}: {e})")
            return None
        if a.shape != shape:
            if a.size == int(np.prod(shape)) and tuple(s for s in a.shape if s != 1) == tuple(s for s in shape if s != 1):
                a = a.reshape(shape)
            else:
                self.problems.append(f"{section} {name}: shape {a.shape}, expected {shape}")
                return None
        if not np.all(np.isfinite(a)):
            self.problems.append(f"{section} {name}: non-finite values")
            return None
        return a

    def _compare(self, section, values, refs, weighted=None):
        for name, value in values.items():
            if name not in refs:
                self.ignored.append(f"{section} {name}")
                continue
            ref = np.asarray(refs[name], np.float64)
            a = self._array(name, value, ref.shape, section)
            self.res[section][name] = float("inf") if a is None else rel_err(a, ref)
            if a is not None and weighted is not None:
                weighted(name, a)

    def forward(self, **outputs):
        """Outputs of the model at the shared initial weights on chk.batches[0]."""
        ref = self._safe("forward", self._ref_forward)
        if ref is not None:
            self._compare("forward", outputs, ref)
        return self

    def grads(self, named: dict):
        """The gradients of the first step, by canonical name (see the module doc)."""
        ref = self._safe("step", self.reference)
        if ref is not None:
            self._compare("grads", dict(named), ref["grads"])
        return self

    def not_reached(self, section: str, why: str):
        """A part the API under test does not let the check see (a high-level API whose
        step clears its gradients): checked as absent, said so, never counted as passed
        by a number."""
        if section not in ("grads",):
            raise ValueError(f"only the gradients may be out of reach, not {section!r}")
        self.unreached[section] = why
        return self

    def _kink_budget(self):
        """DCGAN, LeNet: how far the first step's gradients and the k-step movement go
        when every (Leaky)ReLU input that float32 rounding could put on either
        side of the kink takes the other branch. An error within tolerance +
        that distance is float32's choice of branch, not other maths (the
        verdict allows it and a diagnosis says so). Computed only when a
        gradient or update error is over its tolerance."""
        def flipped():
            kink = R.Kink(self.kink["fraction"])
            return self.wl.train(kit(), self.w0, self.batches, self.lr, kink=kink), kink.flips
        out = self._safe("kink", flipped)
        if out is None or not out[1]:
            return
        alt, n = out
        ref, w0 = self._ref, self._flat_w0()
        grads = {k: rel_err(alt["grads"][k], ref["grads"][k]) for k in ref["grads"]}
        update = {k: movement_err(alt["weights"][k] - w0[k], ref["weights"][k] - w0[k],
                                  np.broadcast_to(ref["grad_min"][k], w0[k].shape), self.lr * self.steps)
                  for k in ref["grad_min"] if k in w0}
        self.kink.update(inputs_near_kink=n, budget={"grads": grads, "update": update})

    def losses(self, **losses):
        """The losses one step returned; call once per step, in order."""
        row = {}
        for name, value in losses.items():
            try:
                row[name] = float(to_numpy(value).reshape(-1)[0])
            except Exception as e:
                self.problems.append(f"loss {name} (step {len(self.step_losses) + 1}): {type(e).__name__}: {e}")
                row[name] = float("nan")
        self.step_losses.append(row)
        return self

    def weights(self, named: dict, running: dict | None = None):
        """Trainable weights (and BatchNorm running statistics) after the k steps."""
        ref = self._safe("step", self.reference)
        if ref is None:
            return self
        w0 = self._flat_w0()
        refw = ref["weights"]
        trainable = {k: v for k, v in refw.items() if not k.endswith(("running_mean", "running_var"))}

        def update(name, a):
            d_ref, d_out = refw[name] - w0[name], a - w0[name]
            weight = np.broadcast_to(np.asarray(ref["grad_min"].get(name, 1.0), np.float64), d_ref.shape)
            self.res["update_plain"][name] = rel_err(d_out, d_ref)
            self.res["update"][name] = movement_err(d_out, d_ref, weight, self.lr * self.steps)
            self._diagnose(name, d_out, d_ref, weight)

        self._compare("update", dict(named), trainable, weighted=update)
        running_ref = {k: v for k, v in refw.items() if k.endswith(("running_mean", "running_var"))}
        self._compare("running", dict(running or {}), running_ref)
        return self

    def _diagnose(self, name, d_out, d_ref, weight):
        """Say why the plain update error is large, only when the numbers show it:
        it exceeds the tolerance, the weighted one does not, and the elements that
        moved the other way all have noise-level gradients."""
        tol = self.tol["update"]
        if self.res["update_plain"][name] <= tol or self.res["update"][name] > tol:
            return  # nothing to explain, or a real failure
        flipped = d_out * d_ref < 0
        scale = float(np.max(weight)) if np.size(weight) else 0.0
        if not flipped.any() or scale == 0.0:
            return
        worst = float(np.max(np.broadcast_to(weight, flipped.shape)[flipped])) / scale
        rest = ~flipped
        err_rest = rel_err(d_out[rest], d_ref[rest]) if rest.any() else float("nan")
        if worst <= NOISE_FRACTION and err_rest <= tol:
            self.diagnosis.append(
                f"{name}: {int(flipped.sum())} of {flipped.size} element(s) moved the other way; their smallest "
                f"gradients are at most {worst:.1e} of the tensor's largest (float32 noise decides their sign); "
                f"the other elements' plain update error is {err_rest:.1e}")

    def step(self, losses: dict | None = None, weights: dict | None = None):
        """The older one-step form (`forward`, one step on chk.probe, `step`), kept
        for notebooks not yet on the k-step form: it compares the losses and the
        weights after ONE step. Gradients and running statistics are not given,
        so the verdict is at best "incomplete", never a pass."""
        self.steps, self.batches, self._ref = 1, self.batches[:1], None
        self.losses(**dict(losses or {}))
        return self.weights(dict(weights or {}))

    # -------------------------------------------------------- result
    def _loss_errors(self):
        ref = self._ref["losses"] if self._ref else []
        errs, names = {}, (self.wl.losses if self.wl else ())
        if self.step_losses and len(self.step_losses) != len(ref):
            self.problems.append(f"losses given for {len(self.step_losses)} step(s), expected {len(ref)}")
        for name in names:
            vals = []
            for got, want in zip(self.step_losses, ref):
                if name not in got:
                    continue
                v = got[name]
                vals.append(abs(v - want[name]) / max(abs(want[name]), 1e-12) if math.isfinite(v) else float("inf"))
            errs[name] = max(vals) if vals and len(vals) == len(ref) else None
        return errs

    def _expected(self):
        return self.wl.expected(self.w0) if self.wl else ([], [])

    def _kink_diagnosis(self, sections, budget):
        """Name each figure the kink allowance passed: the diagnosis line and a record in
        `allowances` (the allowance, the quantity, the figure) that the report prints."""
        n, frac = self.kink["inputs_near_kink"], self.kink["fraction"]
        for sec in ("grads", "update"):
            for k, v in sections[sec].items():
                room = budget.get(sec, {}).get(k, 0.0)
                if v is not None and self.tol[sec] < v <= self.tol[sec] + room:
                    text = (f"{k}: {sec} error {v:.1e} is within tolerance plus {room:.1e}, the change when the "
                            f"{n} (Leaky)ReLU input(s) within {frac:.0e} of their layer's RMS from the kink "
                            "take the other branch")
                    if text not in self.diagnosis:
                        self.diagnosis.append(text)
                    entry = {"allowance": "kink", "section": sec, "tensor": k, "error": v,
                             "tolerance": self.tol[sec], "allowed": self.tol[sec] + room, "room": room,
                             "quantity": (f"the reference's own {sec} figure when its {n} (Leaky)ReLU input(s) within "
                                          f"{frac:.0e} of their layer's RMS from the kink take the other branch"),
                             "inputs_near_kink": n, "fraction": frac}
                    if entry not in self.allowances:
                        self.allowances.append(entry)

    def _summary(self):
        tol = self.tol
        if self._ref is None and not any(p.startswith("setup") for p in self.problems):
            self._safe("step", self.reference)
        names, running = self._expected()
        sections = {
            "forward": {k: self.res["forward"].get(k) for k in (self.wl.forward_outputs if self.wl else ())},
            "losses": self._loss_errors(),
            "grads": {} if "grads" in self.unreached else {k: self.res["grads"].get(k) for k in names},
            "update": {k: self.res["update"].get(k) for k in names},
            "running": {k: self.res["running"].get(k) for k in running},
        }
        missing = [f"{sec} {k}" for sec, d in sections.items() for k, v in d.items() if v is None]
        setup_bad = any(p.startswith(("setup", "reference")) for p in self.problems)
        over = any(v is not None and v > tol[sec] for sec in ("grads", "update") for v in sections[sec].values())
        if self.wl is not None and self.wl.kink_sensitive and over and self._ref is not None and not self.kink["budget"]:
            self._kink_budget()
        budget = self.kink["budget"]
        verdicts = {sec: _verdict([(v, tol[sec] + budget.get(sec, {}).get(k, 0.0)) for k, v in d.items()], setup_bad)
                    if d else not setup_bad for sec, d in sections.items()}
        self._kink_diagnosis(sections, budget)
        ok = _combine(verdicts.values())
        return {
            "reference": "numpy float64 (the workload's reference.py on frameval.nb.reference)", "batch_size": self.batch_size,
            "steps": self.steps, "probe_size": self.batch_size, "probe_source": self.source, "seed": self.seed,
            "lr": self.lr, **self.options,
            "measure": ("relative norm ||out - ref|| / ||ref|| (forward, grads, running); losses |a-b|/|b| "
                        f"per step; update: w_{self.steps} - w_0 against the reference's, weighted by the "
                        "smallest reference gradient over the steps, in units of lr * steps"),
            **sections, "update_plain": {k: self.res["update_plain"].get(k) for k in names},
            **{f"{sec}_ok": v for sec, v in verdicts.items()}, "ok": ok,
            "step_ok": _combine(verdicts[s] for s in ("losses", "grads", "update", "running")),
            "max_forward_err": _max(sections["forward"]), "max_grad_err": _max(sections["grads"]),
            "max_update_err": _max(sections["update"]), "max_loss_err": _max(sections["losses"]),
            "max_running_err": _max(sections["running"]),
            "tolerances": dict(tol), "kink": dict(self.kink), "allowances": list(self.allowances), "missing": missing, "ignored": list(self.ignored),
            "problems": list(self.problems), "diagnosis": list(self.diagnosis), "not_reached": dict(self.unreached),
            "seconds": round(time.perf_counter() - self.t0, 3), "reference_s": round(self.ref_s, 3),
            "reference_cached": self.ref_cached,
        }

    KEY = "check"  # where finish() stores the result in result.json

    def finish(self) -> dict:
        """Store the errors in rec.result["check"], print a table; never raises."""
        try:
            precision.restore(getattr(self.rec, "framework", ""), self.precision_set)
        except Exception as e:  # noqa: BLE001
            self.problems.append(f"precision: cannot restore the run's settings ({type(e).__name__}: {e})")
        try:
            res = self._summary()
            res["precision"] = {"float32": "full", "set_for_check": [n for n, _ in self.precision_set]}
        except Exception as e:  # pragma: no cover - last resort
            res = {"ok": None, "problems": self.problems + [f"summary: {type(e).__name__}: {e}",
                                                            traceback.format_exc()[-1500:]]}
        try:
            res = self._after(res)
            self.rec.check_done(res, self.KEY) if self.KEY != "check" else self.rec.check_done(res)
        except Exception as e:
            res.setdefault("problems", []).append(f"cannot store in the recorder: {type(e).__name__}: {e}")
        try:
            print(self.table(res))
        except Exception:
            pass
        return res

    def _after(self, res: dict) -> dict:
        return res

    def table(self, res=None) -> str:
        res = res or self._summary()
        word = {True: "OK", False: "FAILED", None: "INCOMPLETE"}
        lines = [f"numerical check vs numpy float64 reference ({self.workload}, seed {self.seed}, "
                 f"{res.get('steps')} steps at batch {res.get('batch_size')}: {res.get('probe_source')}): "
                 f"{word[res.get('ok')]}  [{res.get('seconds', 0):.2f} s, reference {res.get('reference_s', 0):.2f} s]"]
        tol = res.get("tolerances", TOLERANCES)
        allowed = {(a["section"], a["tensor"]): a["allowed"] for a in res.get("allowances") or []}
        for sec in CHECK_SECTIONS:
            for name, v in (res.get(sec) or {}).items():
                mark = "-" if v is None else ("ok" if v <= tol[sec] else "FAIL")
                if mark == "FAIL" and v <= allowed.get((sec, name), -1.0):
                    mark = f"ok with the kink allowance (up to {allowed[(sec, name)]:.2e})"
                extra = ""
                if sec == "update" and (res.get("update_plain") or {}).get(name) is not None:
                    extra = f"   (plain {_fmt(res['update_plain'][name])})"
                lines.append(f"  {sec:8s} {name:34s} {_fmt(v):>11s}  tol {tol[sec]:.0e}  {mark}{extra}")
        for sec, why in (res.get("not_reached") or {}).items():
            lines.append(f"  {sec:8s} not reached: {why}")
        for p in res.get("problems", []):
            lines.append(f"  problem: {p}")
        for d in res.get("diagnosis", []):
            lines.append(f"  diagnosis: {d}")
        if res.get("ignored"):
            lines.append(f"  ignored (not in the reference): {', '.join(res['ignored'])}")
        return "\n".join(lines)


# ------------------------------------------------------------ mixed precision
class AmpChecker(Checker):
    """The second pass of a mixed-precision run (#69, nb/amp.py): the same calls
    on the same step, now under the framework's AMP and the run's own float32
    settings, judged on forward, losses and gradients against amp.bound. The
    update and the running statistics stay judged at float32 by the first pass
    (Adam normalises a bfloat16 gradient's error away, and a bound for it would
    be a bound for Adam). Stored as result["check_amp"]."""

    KEY = "check_amp"

    def __init__(self, rec, workload: str, seed: int = 0, amp=None, **kw):
        self.amp = amp
        super().__init__(rec, workload, seed, **kw)
        wl = self.wl
        depth = (wl.amp_depth or sum(len(p.layers) for p in wl.passes({}))) if wl else 1
        self.bound_inputs = {"format": amp.format, "depth": depth, "reduction": (wl.amp_reduction or 1) if wl else 1,
                             "batch": self.batch_size}
        self.tol = dict(self.tol, **AMP.bound(amp.format, depth, self.bound_inputs["reduction"], self.batch_size),
                        update=float("inf"), running=float("inf"))

    def _full_float32(self):
        self.precision_set = []  # the run's own settings: the AMP decides what is float32

    def weights(self, named: dict, running: dict | None = None):
        return self  # judged at float32 (the first pass)

    def _kink_budget(self):
        return  # a branch float32 could take either way is far inside a bfloat16 bound

    def _after(self, res: dict) -> dict:
        for sec in ("update", "running", "update_plain"):
            res[sec] = {}
        res.pop("update_ok", None)
        res.pop("running_ok", None)
        judged = [res.get(f"{sec}_ok") for sec in AMP.JUDGED]
        res["ok"] = _combine(judged + [not any(p.startswith(("setup", "reference")) for p in res.get("problems", []))])
        res["step_ok"] = _combine([res.get("losses_ok"), res.get("grads_ok")])
        res["amp"] = self.amp.record()
        res["bound"] = dict(self.bound_inputs, **{k: self.tol[k] for k in AMP.JUDGED},
                            unit_roundoff=AMP.UNIT_ROUNDOFF[self.amp.format], kappa=AMP.KAPPA, lam=AMP.LAMBDA)
        res["measure"] = ("as the float32 pass (forward, grads: relative norm; losses per step), under the run's AMP; "
                          "judged against the bound of docs/precision.md")
        res["outside"] = [f"{sec} {k}: {v:.2e} > {self.tol[sec]:.2e}" for sec in AMP.JUDGED
                          for k, v in (res.get(sec) or {}).items() if v is not None and v > self.tol[sec]]
        return res


def run(rec, workload: str, seed: int, amp, body, **kw) -> dict:
    """The notebook's check: `body(chk)` makes the calls (forward, the steps, grads,
    weights) and puts the initial weights and a fresh optimizer back. A float32 run
    (amp None or off) runs it once, as Checker always did. A mixed run runs it
    first with its AMP off at full float32 (the check every run has), then once more
    under its AMP (AmpChecker); training then runs with the AMP on."""
    mixed = amp is not None and getattr(amp, "precision", None)
    if mixed:
        amp.on = False
    try:
        chk = Checker(rec, workload, seed, **kw)
        body(chk)
        res = chk.finish()
    finally:
        if mixed:
            amp.on = True
    if mixed:
        chk2 = AmpChecker(rec, workload, seed, amp=amp, **kw)
        body(chk2)
        chk2.finish()
    return res
