"""Numerical equivalence of a framework's model against the numpy float64
reference (`frameval.nb.reference`), run by the `check` cell of every notebook.

    from frameval.nb import check
    chk = check.Checker(rec, workload, seed, lr=lr, lstm_biases=1)   # size=16 by default
    p = chk.probe                      # == check.probe(workload, seed)
    chk.forward(**outputs)             # a FRESH model from nb.init_weights(seed)
    chk.step(losses={...}, weights={...})  # after ONE training step on the probe batch
    chk.finish()                       # -> rec.result["check"]; prints a table; never raises

Probe batch (16 samples, deterministic from the seed, independent of the run's
data parameters; `size=` on probe() and Checker() asks for another batch size,
e.g. the training batch size, since a compiler's code can depend on the shape):
    lenet: {"x": float32 (16,1,28,28), "y": int64 (16,)}
    dcgan: {"x": float32 (16,1,28,28), "z": float32 (16,100)}
    lstm:  {"x": float32 (16,20,1),    "y": float32 (16,1)}
Forward outputs:
    lenet: logits (16,10); dcgan: fake (16,1,28,28) = G(z) in training mode
    (batch statistics) and d_logits (16,1) = D(x) with dropout off; lstm: pred (16,1)
Step (one Adam step from a fresh optimizer, dropout off):
    lenet: losses {"loss"}, weights {canonical name: array} for every trainable weight
    dcgan: losses {"d_loss", "g_loss"}, weights {"generator.<name>", "discriminator.<name>"}
    lstm:  losses {"loss"}, weights lstm.weight_ih, lstm.weight_hh, lstm.bias
           (lstm.bias_ih + lstm.bias_hh with lstm_biases=2), fc.weight, fc.bias
Arrays may be numpy arrays or framework tensors (converted with .detach/.cpu/
.numpy/.asnumpy); canonical layouts (NCHW images, weights as in weights.py).

Error measure: relative norm ||out - ref|| / ||ref|| per tensor (losses:
|a - b| / |b|); for the step the *updated* weights are compared. The relative
error of the update itself, ||w1 - w1_ref|| / ||w1_ref - w0||, is recorded too
("update", information only: Adam's first step is close to lr * sign(g), so an
element whose gradient is near zero can flip sign from float rounding alone).

Result, `rec.result["check"]`:
    {"forward": {name: err|None}, "losses": {name: err|None}, "step": {name: err|None},
     "update": {name: err}, "problems": [...], "missing": [...], "ignored": [...],
     "forward_ok", "step_ok", "ok": True | False | None (None: not everything was checked),
     "max_forward_err", "max_step_err", "tolerances", "probe_source",
     "seconds" (wall time from Checker() to finish()), "reference_s" (numpy's share)}
"""
from __future__ import annotations

import math
import time
import traceback

import numpy as np

from . import reference as R
from .weights import init_weights, trainable_names

PROBE_SIZE = 16
# losses are forward quantities (float32 PyTorch: ~1e-7); 1e-4 still catches a G step
# taken through the stale discriminator (g_loss off by ~7e-4 at seed 0).
TOLERANCES = {"forward": 1e-4, "step": 1e-3, "losses": 1e-4}
DEFAULT_LR = {"lenet": 1e-3, "dcgan": 1e-4, "lstm": 1e-3}
FORWARD_OUTPUTS = {"lenet": ("logits",), "dcgan": ("fake", "d_logits"), "lstm": ("pred",)}
LOSSES = {"lenet": ("loss",), "dcgan": ("d_loss", "g_loss"), "lstm": ("loss",)}


# ----------------------------------------------------------------------- probe
def _probe_source(workload, seed, size=PROBE_SIZE):
    """The data part of the probe, and where it came from."""
    rng = np.random.RandomState([seed, 3])
    if workload in ("lenet", "dcgan"):
        try:
            from .data import load_mnist
            d = load_mnist("embedded")
            idx = rng.permutation(len(d.y_train))[:size]
            return d.x_train[idx].copy(), d.y_train[idx].copy(), f"mnist embedded: {len(idx)} training images"
        except Exception:
            x = rng.uniform(-1, 1, (size, 1, 28, 28)).astype(np.float32)
            return x, rng.randint(0, 10, size).astype(np.int64), "random (MNIST cache missing)"
    if workload == "lstm":
        try:
            from .data import load_co2
            d = load_co2(20)
            idx = rng.permutation(len(d.y_train))[:size]
            return d.x_train[idx].copy(), d.y_train[idx].copy(), f"co2: {len(idx)} training windows"
        except Exception:
            x = rng.standard_normal((size, 20, 1)).astype(np.float32)
            return x, rng.standard_normal((size, 1)).astype(np.float32), "random (CO2 cache missing)"
    raise KeyError(f"unknown workload {workload!r}")


def probe(workload: str, seed: int = 0, size: int = PROBE_SIZE) -> dict:
    """The probe batch (16 samples unless `size` says otherwise), the same in every
    framework (float32 / int64). With the data caches present, a larger size starts
    with the same 16 samples."""
    return _probe(workload, seed, size)[0]


def _probe(workload, seed, size=PROBE_SIZE):
    x, y, source = _probe_source(workload, seed, size)
    return _assemble(workload, seed, x, y), source


def _assemble(workload, seed, x, y):
    if workload == "lenet":
        return {"x": x, "y": y}
    if workload == "dcgan":
        z = np.random.RandomState([seed, 3, 1]).standard_normal((len(x), 100)).astype(np.float32)
        return {"x": x, "z": z}
    return {"x": x, "y": y}


# ------------------------------------------------------------------- helpers
def to_numpy(a):
    """A framework tensor (torch, tf, paddle, mindspore, megengine, mxnet) or
    a number -> numpy float64 / int array."""
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
    return np.asarray(a)


def rel_err(out, ref) -> float:
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    den = float(np.linalg.norm(ref))
    num = float(np.linalg.norm(out - ref))
    if den == 0.0:
        return num
    return num / den


def _fmt(v):
    if v is None:
        return "not checked"
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return f"{v:.2e}"


class Checker:
    def __init__(self, rec, workload: str, seed: int = 0, lr: float | None = None, lstm_biases: int = 1,
                 size: int = PROBE_SIZE):
        self.t0 = time.perf_counter()
        self.rec, self.workload, self.seed = rec, workload, int(seed)
        self.lr = float(lr) if lr is not None else DEFAULT_LR.get(workload, 1e-3)
        self.lstm_biases = int(lstm_biases)
        self.size = int(size)
        self.ref_s = 0.0
        self.problems, self.ignored, self.diagnosis = [], [], []
        self.fwd, self.losses, self.stp, self.upd = {}, {}, {}, {}
        self._fwd_called = self._step_called = False
        self._finished = False
        try:
            self.probe, self.source = _probe(workload, self.seed, int(size))
            self.w0 = self._initial()
        except Exception as e:  # never raise from the check
            self.probe, self.w0, self.source = {}, {}, "unavailable"
            self.problems.append(f"setup: {type(e).__name__}: {e}")

    # -------------------------------------------------------- reference
    def _initial(self):
        if self.workload == "lenet":
            return R.as64(init_weights("lenet", self.seed))
        if self.workload == "dcgan":
            return {"generator": R.as64(init_weights("generator", self.seed)),
                    "discriminator": R.as64(init_weights("discriminator", self.seed))}
        if self.workload == "lstm":
            return R.lstm_params(R.as64(init_weights("lstm", self.seed)), self.lstm_biases)
        raise KeyError(f"unknown workload {self.workload!r}")

    def _ref_forward(self):
        p = self.probe
        x = np.asarray(p["x"], np.float64)
        if self.workload == "lenet":
            return {"logits": R.lenet_forward(self.w0, x)[0]}
        if self.workload == "dcgan":
            fake = R.generator_forward(self.w0["generator"], np.asarray(p["z"], np.float64), train=True)[0]
            return {"fake": fake, "d_logits": R.discriminator_forward(self.w0["discriminator"], x)[0]}
        return {"pred": R.lstm_forward(self.w0, x)[0]}

    def _ref_step(self):
        """-> losses, {name: updated}, {name: initial} over the expected (trainable) names."""
        p = self.probe
        if self.workload == "lenet":
            r = R.lenet_step(self.w0, p["x"], p["y"], self.lr)
            self.ref_grads = r["grads"]
            return r["losses"], r["weights"], self.w0
        if self.workload == "dcgan":
            r = R.dcgan_step(self.w0["generator"], self.w0["discriminator"], p["x"], p["z"], self.lr)
            new, old = {}, {}
            self.ref_grads = {}
            for net in ("generator", "discriminator"):
                for k in trainable_names(net):
                    new[f"{net}.{k}"], old[f"{net}.{k}"] = r[net][k], self.w0[net][k]
                    self.ref_grads[f"{net}.{k}"] = r["grads"][net][k]
            return r["losses"], new, old
        r = R.lstm_step(self.w0, p["x"], p["y"], self.lr)
        self.ref_grads = r["grads"]
        return r["losses"], r["weights"], self.w0

    def _timed(self, f):
        t = time.perf_counter()
        try:
            return f()
        finally:
            self.ref_s += time.perf_counter() - t

    # -------------------------------------------------------- comparing
    def _compare(self, name, out, ref, section):
        """Relative error, or a problem recorded (and +inf) for a malformed output."""
        try:
            a = to_numpy(out).astype(np.float64)
        except Exception as e:
            self.problems.append(f"{section} {name}: cannot convert ({type(e).__name__}: {e})")
            return float("inf")
        ref = np.asarray(ref, np.float64)
        if a.shape != ref.shape:
            if a.size == ref.size and tuple(s for s in a.shape if s != 1) == tuple(s for s in ref.shape if s != 1):
                a = a.reshape(ref.shape)
            else:
                self.problems.append(f"{section} {name}: shape {a.shape}, expected {ref.shape}")
                return float("inf")
        if not np.all(np.isfinite(a)):
            self.problems.append(f"{section} {name}: non-finite values")
            return float("inf")
        return rel_err(a, ref)

    def forward(self, **outputs):
        """Outputs of a fresh model on the probe batch (see the module doc)."""
        self._fwd_called = True
        try:
            ref = self._timed(self._ref_forward)
        except Exception as e:
            self.problems.append(f"reference forward: {type(e).__name__}: {e}")
            return self
        for name, value in outputs.items():
            if name in ref:
                self.fwd[name] = self._compare(name, value, ref[name], "forward")
            else:
                self.ignored.append(f"forward {name}")
        return self

    def step(self, losses: dict | None = None, weights: dict | None = None):
        """Losses and updated weights after one training step on the probe batch."""
        self._step_called = True
        losses, weights = dict(losses or {}), dict(weights or {})
        try:
            rl, new, old = self._timed(self._ref_step)
        except Exception as e:
            self.problems.append(f"reference step: {type(e).__name__}: {e}")
            return self
        for name, value in losses.items():
            if name in rl:
                try:
                    v = float(to_numpy(value).reshape(-1)[0])
                    self.losses[name] = abs(v - rl[name]) / max(abs(rl[name]), 1e-12) if math.isfinite(v) else float("inf")
                    if not math.isfinite(v):
                        self.problems.append(f"loss {name}: {v}")
                except Exception as e:
                    self.problems.append(f"loss {name}: {type(e).__name__}: {e}")
                    self.losses[name] = float("inf")
            else:
                self.ignored.append(f"loss {name}")
        for name, value in weights.items():
            if name in new:
                err = self._compare(name, value, new[name], "step")
                self.stp[name] = err
                if math.isfinite(err):
                    got = to_numpy(value).astype(np.float64).reshape(new[name].shape)
                    self.upd[name] = rel_err(got - old[name], new[name] - old[name])
                    if err > TOLERANCES["step"]:
                        self._diagnose(name, got, new[name], old[name])
            else:
                self.ignored.append(f"weight {name}")
        self._expected_weights = list(new)
        return self

    def _diagnose(self, name, got, ref, w0):
        """Explain a step mismatch that is only Adam's first step going the other
        way on elements whose reference gradient is tiny. Adam's first update is
        about lr * sign(g) for any |g| above eps, so float32 rounding of a
        near-zero gradient decides its direction. The verdict is not changed:
        the diagnosis says why it failed."""
        g = getattr(self, "ref_grads", {}).get(name)
        if g is None:
            return
        g = np.asarray(g, np.float64).reshape(ref.shape)
        flipped = (got - w0) * (ref - w0) < 0
        if not flipped.any():
            return
        rest = ~flipped
        err_rest = rel_err(got[rest], ref[rest]) if rest.any() else float("nan")
        scale = float(np.abs(g).max()) or 1.0
        worst = float(np.abs(g[flipped]).max()) / scale
        self.diagnosis.append(
            f"{name}: Adam's first step went the other way on {int(flipped.sum())} of {flipped.size} "
            f"element(s), whose reference gradients are at most {worst:.1e} of the tensor's largest "
            f"(float32 rounding decides their sign); the other elements' error is {err_rest:.1e}")

    # -------------------------------------------------------- result
    def _summary(self):
        tol = TOLERANCES
        exp_fwd = list(FORWARD_OUTPUTS.get(self.workload, ()))
        exp_loss = list(LOSSES.get(self.workload, ()))
        exp_w = getattr(self, "_expected_weights", None)
        if exp_w is None:
            try:
                exp_w = list(self._ref_names())
            except Exception:
                exp_w = []
        fwd = {k: self.fwd.get(k) for k in exp_fwd}
        losses = {k: self.losses.get(k) for k in exp_loss}
        stp = {k: self.stp.get(k) for k in exp_w}
        missing = [f"forward {k}" for k, v in fwd.items() if v is None] + \
                  [f"loss {k}" for k, v in losses.items() if v is None] + \
                  [f"weight {k}" for k, v in stp.items() if v is None]

        def verdict(pairs, extra_bad=False):
            """pairs of (err or None, tolerance): False if any fails, None if any missing."""
            if extra_bad or any(v is not None and not (v <= t) for v, t in pairs):
                return False
            if not pairs or any(v is None for v, _ in pairs):
                return None
            return True

        setup_bad = any(p.startswith(("setup", "reference")) for p in self.problems)
        forward_ok = verdict([(v, tol["forward"]) for v in fwd.values()], setup_bad)
        step_ok = verdict([(v, tol["step"]) for v in stp.values()] +
                          [(v, tol["losses"]) for v in losses.values()], setup_bad)
        if forward_ok is False or step_ok is False:
            ok = False
        elif forward_ok and step_ok:
            ok = True
        else:
            ok = None

        def mx(d):
            vals = [v for v in d.values() if v is not None]
            return max(vals) if vals else None

        return {
            "reference": "numpy float64 (frameval.nb.reference)", "probe_size": len(self.probe.get("x", ())),
            "probe_source": getattr(self, "source", "unavailable"), "seed": self.seed, "lr": self.lr,
            "lstm_biases": self.lstm_biases if self.workload == "lstm" else None,
            "measure": "relative norm ||out - ref|| / ||ref|| (step: updated weights; losses: |a-b|/|b|)",
            "forward": fwd, "losses": losses, "step": stp, "update": dict(self.upd),
            "forward_ok": forward_ok, "step_ok": step_ok, "ok": ok,
            "max_forward_err": mx(fwd), "max_step_err": mx({**stp, **losses}),
            "max_update_err": mx(self.upd),
            "tolerances": dict(tol), "missing": missing, "ignored": list(self.ignored),
            "problems": list(self.problems), "diagnosis": list(self.diagnosis),
            "seconds": round(time.perf_counter() - self.t0, 3), "reference_s": round(self.ref_s, 3),
        }

    def _ref_names(self):
        if self.workload == "dcgan":
            return [f"{n}.{k}" for n in ("generator", "discriminator") for k in trainable_names(n)]
        if self.workload == "lenet":
            return trainable_names("lenet")
        return list(self.w0)

    def finish(self) -> dict:
        """Store the errors in rec.result["check"], print a table; never raises."""
        try:
            res = self._summary()
        except Exception as e:  # pragma: no cover - last resort
            res = {"ok": None, "forward_ok": None, "step_ok": None,
                   "problems": self.problems + [f"summary: {type(e).__name__}: {e}",
                                                traceback.format_exc()[-1500:]]}
        try:
            self.rec.result["check"] = res
        except Exception as e:
            res.setdefault("problems", []).append(f"cannot store in rec.result: {type(e).__name__}: {e}")
        try:
            print(self.table(res))
        except Exception:
            pass
        self._finished = True
        return res

    def table(self, res=None) -> str:
        res = res or self._summary()
        word = {True: "OK", False: "FAILED", None: "INCOMPLETE"}
        lines = [f"numerical check vs numpy float64 reference ({self.workload}, seed {self.seed}, "
                 f"{res.get('probe_size')}-sample probe: {res.get('probe_source')}): "
                 f"{word[res.get('ok')]}  [{res.get('seconds', 0):.2f} s, reference {res.get('reference_s', 0):.2f} s]"]
        tol = res.get("tolerances", TOLERANCES)
        for sec, key in (("forward", "forward"), ("losses", "losses"), ("step", "step")):
            for name, v in (res.get(sec) or {}).items():
                mark = "-" if v is None else ("ok" if v <= tol[key] else "FAIL")
                extra = ""
                if sec == "step" and name in res.get("update", {}):
                    extra = f"   (update {_fmt(res['update'][name])})"
                lines.append(f"  {sec:8s} {name:28s} {_fmt(v):>11s}  tol {tol[key]:.0e}  {mark}{extra}")
        for p in res.get("problems", []):
            lines.append(f"  problem: {p}")
        if res.get("ignored"):
            lines.append(f"  ignored (not in the reference): {', '.join(res['ignored'])}")
        return "\n".join(lines)
