"""JAX (Flax linen + optax) helpers shared by notebooks/jax/{lenet,dcgan,lstm}.ipynb.

Importing this module does NOT import JAX: XLA reads its flags and sizes its CPU
thread pool when the backend starts, so the setup cell calls `setup` first:

    rec = nb.Recorder(...)                         # thread env vars first
    from frameval.frameworks.jax import support as fw
    dev = fw.setup(rec, mode, device, seed)        # XLA flags + CPU affinity, then `import jax`
    import jax, jax.numpy as jnp, flax.linen as nn, optax

- `setup`: threads (XLA_FLAGS and the process's CPU affinity, set before the import),
  the platform and device, the recorder's hooks (sync on the latest result, the
  allocator's peak on a GPU).
- `track`, `sync`: `rec.sync` blocks on the most recent result the notebook handed to
  `track` (JAX dispatches asynchronously: the clock must wait for the device).
- `put`, `placement`: arrays onto the device, and where the data set lives.
- `adam`, `read_adam`: optax Adam with its hyperparameters kept in its state
  (`optax.inject_hyperparams`), so they can be read back; eps after the
  bias-corrected square root (`eps_root=0`), the spec's formula.
- `SpecBatchNorm`: flax.linen.BatchNorm's names and momentum convention, with the
  running variance updated from the UNBIASED batch variance (PyTorch's, the spec's
  reference); flax's own uses the biased one.
- `dropout`: inverted dropout whose rate is an argument of the step (a traced value),
  so the check runs the same compiled step with the rate at 0.
- `to_flax`, `to_canonical`: canonical weights <-> Flax variable trees
  (conv OIHW <-> HWIO, dense (out, in) <-> (in, out), transposed conv (in, out, kh, kw)
  <-> spatially flipped (kh, kw, in, out)).
- `compile_step`, `record_scope`: `jax.jit` of the whole step (graph) or the plain
  function (eager), and the graph scope from the jitted step's own cache.
- `autocast`: -p precision=bf16 as Flax does it (JAX has no autocast): the notebooks build
  their modules with `dtype=amp.dtype` (bfloat16 while `amp.on`, else None: float32 as
  before) and Flax's default `param_dtype=float32`; `compile_step`/`compile_eval` given the
  amp keep one jitted function per value of `amp.on`.

See docs/frameworks/jax.md.
"""
from __future__ import annotations

import os

import numpy as np

jax = jnp = None  # imported by setup(), after the XLA flags are in place
_LATEST = []


def setup(rec, mode, device, seed):
    """Threads, platform, device and recorder hooks; -> the jax.Device."""
    global jax, jnp
    if mode not in ("graph", "eager"):
        raise ValueError(f"mode must be 'graph' or 'eager', not {mode!r}")
    n = rec.threads
    missing = ["jax has no thread-count getter (XLA's CPU pool is sized from the schedulable CPUs when the "
               "backend starts)"]
    how = []
    try:  # XLA sizes its intra-op pool from sched_getaffinity: restrict the CPUs before the backend starts
        cpus = sorted(os.sched_getaffinity(0))
        if n < len(cpus):
            os.sched_setaffinity(0, cpus[:n])
        how.append(f"os.sched_setaffinity ({len(os.sched_getaffinity(0))} schedulable CPUs)")
    except (AttributeError, OSError) as e:
        missing.append(f"os.sched_setaffinity: {e}")
    flags = os.environ.get("XLA_FLAGS", "")
    if n == 1 and "xla_cpu_multi_thread_eigen" not in flags:
        flags += " --xla_cpu_multi_thread_eigen=false"
    os.environ["XLA_FLAGS"] = flags.strip()
    how.append(f"XLA_FLAGS={os.environ['XLA_FLAGS']!r}" if os.environ["XLA_FLAGS"] else "XLA_FLAGS unset")
    if device == "cpu":
        os.environ["JAX_PLATFORMS"] = "cpu"  # no CUDA probe, no warning about a missing GPU
    import jax as _jax
    import jax.numpy as _jnp
    jax, jnp = _jax, _jnp
    if device == "gpu":
        try:
            dev = jax.devices("gpu")[0]
        except RuntimeError as e:
            raise RuntimeError(f"device='gpu' but JAX sees no GPU in this environment ({e}); install envs/jax-gpu.yml") from e
    else:
        dev = jax.devices("cpu")[0]
    jax.config.update("jax_default_device", dev)
    # Threads as far as they can be read back: the schedulable CPUs bound XLA's pool; jax reports no count.
    rec.set_threads_effective(None, None, how="; ".join(how), missing=missing)
    gpu = dev.platform == "gpu"
    rec.after_import(jax.__version__, sync=sync,
                     reset_device_peak=None,
                     device_peak_mb=(lambda: dev.memory_stats()["peak_bytes_in_use"] / 1e6) if gpu else None,
                     gpu_name=dev.device_kind if gpu else None, gpu_runtime=_gpu_runtime(dev) if gpu else None)
    if gpu:
        rec.note("device peak: jax's memory_stats()['peak_bytes_in_use'] since the process started (jax has no "
                 "peak reset): it includes the check's and the warm-up's allocations")
    import flax
    import optax
    print(f"jax {jax.__version__} (flax {flax.__version__}, optax {optax.__version__}) on {dev}, "
          f"{len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'} schedulable CPUs, mode={mode}")
    return dev


# ------------------------------------------------------------------ timing
def _gpu_runtime(dev) -> dict:
    """What JAX reports of its CUDA stack: the client's platform version (XLA's
    "cuda 13000" style) and, where jaxlib's CUDA plugin exposes them, the CUDA
    runtime's and cuDNN's versions. Each one missing is left out, never guessed."""
    out = {}
    try:
        out["cuda"] = str(dev.client.platform_version)
    except Exception:
        pass
    try:
        from jax._src.lib import cuda_versions
        for key, fn in (("cuda_runtime", "cuda_runtime_get_version"), ("cudnn", "cudnn_get_version")):
            if cuda_versions is not None and hasattr(cuda_versions, fn):
                out[key] = str(getattr(cuda_versions, fn)())
    except Exception:
        pass
    return out


def track(out):
    """Remember the latest result of a dispatched computation; returns it unchanged."""
    _LATEST[:] = [out]
    return out


def sync():
    """Wait until the latest tracked result (and so everything before it) is computed."""
    if _LATEST:
        jax.block_until_ready(_LATEST[0])


# ------------------------------------------------------------------ data
def put(a, dev):
    return jax.device_put(np.ascontiguousarray(a), dev)


def placement(dev, host=None, array=None):
    """Where the data set lives once the data cell moved it."""
    if dev.platform != "cpu":
        return f"device copy ({dev.device_kind})"
    try:
        shared = host is not None and array is not None and array.unsafe_buffer_pointer() == host.ctypes.data
    except Exception:
        shared = False
    return "host, shares numpy's buffer (jax.device_put)" if shared else "host copy (jax.device_put to the CPU device)"


def fresh(tree, dev):
    """New device buffers of a (numpy) tree: what a step that donates its inputs may consume."""
    return jax.tree.map(lambda a: jax.device_put(np.array(a, copy=True), dev), tree)


def fresh_opt(tx, params, dev):
    """A fresh optimizer state, committed to the device like the parameters: a jitted step's
    cache keys on where its inputs are committed, so an uncommitted first state would make
    the step compile twice (once for the fresh state, once for the states it returns)."""
    return jax.device_put(tx.init(params), dev)


# ------------------------------------------------------------------ optimizer
def adam(lr):
    """The spec's Adam: optax.adam (eps after the bias-corrected sqrt, eps_root 0), its
    hyperparameters kept in the state so they can be read back."""
    import optax
    return optax.inject_hyperparams(optax.adam)(learning_rate=lr, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0)


def read_adam(rec, *opts):
    """The Adam settings as optax's state holds them (optax.inject_hyperparams): the first state's."""
    h = {k: float(v) for k, v in opts[0].hyperparams.items()}
    rec.settings_read(optimizer="optax.adam", lr=h["learning_rate"], betas=[h["b1"], h["b2"]], adam_eps=h["eps"],
                      adam_eps_root=h["eps_root"])


# ------------------------------------------------------------------ layers
def _layers():
    import flax.linen as nn

    class SpecBatchNorm(nn.Module):
        """flax.linen.BatchNorm's variables (params scale/bias, batch_stats mean/var) and
        momentum convention (running = momentum * running + (1 - momentum) * batch), over
        every axis but the last; the running variance takes the unbiased batch variance
        (m / (m - 1)), as PyTorch and the spec's reference do. Two-pass variance (no
        E[x^2] - E[x]^2 cancellation)."""
        momentum: float = 0.9
        epsilon: float = 1e-5
        dtype: object = None  # mixed precision (#69): computes in float32, returns dtype, as flax's BatchNorm

        @nn.compact
        def __call__(self, x, use_running_average: bool):
            if self.dtype is not None:  # flax's BatchNorm: statistics and normalisation at >= float32
                x = x.astype(jnp.promote_types(x.dtype, jnp.float32))
            c = x.shape[-1]
            scale = self.param("scale", nn.initializers.ones, (c,))
            bias = self.param("bias", nn.initializers.zeros, (c,))
            ra_mean = self.variable("batch_stats", "mean", lambda: jnp.zeros((c,), jnp.float32))
            ra_var = self.variable("batch_stats", "var", lambda: jnp.ones((c,), jnp.float32))
            axes = tuple(range(x.ndim - 1))
            if use_running_average:
                mean, var = ra_mean.value, ra_var.value
            else:
                mean = x.mean(axes)
                var = jnp.square(x - mean).mean(axes)
                if not self.is_initializing():
                    m = x.size // c
                    ra_mean.value = self.momentum * ra_mean.value + (1 - self.momentum) * mean
                    ra_var.value = self.momentum * ra_var.value + (1 - self.momentum) * var * (m / (m - 1))
            y = (x - mean) * jax.lax.rsqrt(var + self.epsilon) * scale + bias
            return y if self.dtype is None else y.astype(self.dtype)

    return SpecBatchNorm


def __getattr__(name):  # SpecBatchNorm, built after setup() imported jax
    if name == "SpecBatchNorm":
        globals()["SpecBatchNorm"] = _layers()
        return globals()[name]
    raise AttributeError(name)


def dropout(x, rate, key):
    """Inverted dropout; `rate` may be a traced value (0 turns it off without a recompile:
    bernoulli(key, 1.0) keeps every element)."""
    keep = 1.0 - rate
    return jnp.where(jax.random.bernoulli(key, keep, x.shape), x / keep, 0.0)


# ------------------------------------------------------------------ weights
# canonical field -> (collection, flax name)
_FIELDS = {"weight": ("params", "kernel"), "bias": ("params", "bias")}
_BN_FIELDS = {"weight": ("params", "scale"), "bias": ("params", "bias"),
              "running_mean": ("batch_stats", "mean"), "running_var": ("batch_stats", "var")}


def _layout(layer, field, shape_ndim):
    """(canonical -> flax, flax -> canonical) for one tensor."""
    same = (lambda w: w, lambda k: k)
    if field != "weight" or layer.startswith("bn"):  # biases, BatchNorm, the LSTM's weight_ih/_hh: as they are
        return same
    if layer.startswith("deconv"):  # (in, out, kh, kw) <-> flipped (kh, kw, in, out): ConvTranspose without transpose_kernel is a correlation
        return (lambda w: w[:, :, ::-1, ::-1].transpose(2, 3, 0, 1), lambda k: k.transpose(2, 3, 0, 1)[:, :, ::-1, ::-1])
    if layer.startswith("conv"):  # OIHW <-> HWIO
        return (lambda w: w.transpose(2, 3, 1, 0), lambda k: k.transpose(3, 2, 0, 1))
    return (lambda w: w.T, lambda k: k.T)  # dense (out, in) <-> (in, out)


def _where(name):
    layer, field = name.split(".", 1)
    if layer.startswith("bn"):
        return _BN_FIELDS[field], layer, field
    return _FIELDS.get(field, ("params", field)), layer, field  # a field flax has no other name for (LSTM weight_ih) keeps its own


def to_flax(weights):
    """Canonical numpy weights -> {"params": {layer: {...}}, "batch_stats": {...}} (numpy, float32)."""
    out = {}
    for name, w in weights.items():
        (coll, key), layer, field = _where(name)
        out.setdefault(coll, {}).setdefault(layer, {})[key] = np.ascontiguousarray(
            _layout(layer, field, w.ndim)[0](np.asarray(w, np.float32)))
    return out


def to_canonical(tree, names, prefix="", collection="params"):
    """A Flax tree ({layer: {key: array}}: params, their gradients, or batch_stats) -> canonical
    numpy arrays for the given canonical names (prefixed `prefix`)."""
    out = {}
    for name in names:
        (coll, key), layer, field = _where(name)
        if coll != collection:
            continue
        k = np.asarray(tree[layer][key])
        out[prefix + name] = np.ascontiguousarray(_layout(layer, field, k.ndim)[1](k))
    return out


def count(params):
    return int(sum(np.prod(np.shape(a)) for a in jax.tree.leaves(params)))


# ------------------------------------------------------------------ modes
class Step:
    """The training step: `jax.jit` of the whole function (graph) or the function itself
    (eager). Counts JAX's traces of it and XLA's backend compiles that happen inside its
    calls (jax.monitoring's compile event): `graphs` is the compile count, the training
    step's only (evaluation functions compile outside these calls)."""

    def __init__(self, fn, mode, donate_argnums=()):
        self.mode, self.traces, self.compiles, self._inside = mode, 0, 0, False

        def traced(*args):
            self.traces += mode == "graph"
            return fn(*args)

        self.fn = jax.jit(traced, donate_argnums=donate_argnums) if mode == "graph" else fn
        if mode == "graph":
            def on_event(event, duration, **kw):
                if self._inside and event == "/jax/core/compile/backend_compile_duration":
                    self.compiles += 1
            jax.monitoring.register_event_duration_secs_listener(on_event)

    def __call__(self, *args):
        self._inside = True
        try:
            return self.fn(*args)
        finally:
            self._inside = False

    @property
    def graphs(self):
        return self.compiles if self.mode == "graph" else None


class ByAmp:
    """One compiled object per value of `amp.on` (#69), built on first use: the step reads
    `amp.dtype` when jax traces it, and a jitted function traces once and caches, so the
    float32 check pass and the bfloat16 pass and training each get their own. Calls and
    attributes (`graphs`, `traces`) go to the one for the current `amp.on`: after the check,
    training's."""

    def __init__(self, make, amp):
        self._make, self._amp, self._by = make, amp, {}

    def current(self):
        on = bool(self._amp.on)
        if on not in self._by:
            self._by[on] = self._make()
        return self._by[on]

    def __call__(self, *args, **kw):
        return self.current()(*args, **kw)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.current(), name)


def _mixed(amp):
    return amp is not None and getattr(amp, "precision", None) is not None


def compile_step(step, mode, donate_argnums=(), amp=None):
    """A mixed run's `amp`: one Step per value of amp.on (ByAmp); a float32 run: the one Step, as before."""
    if _mixed(amp):
        return ByAmp(lambda: Step(step, mode, donate_argnums), amp)
    return Step(step, mode, donate_argnums)


def compile_eval(fn, mode, amp=None, **kw):
    """Evaluation / prediction functions: jitted in graph mode (their graphs are not the step's);
    with a mixed run's `amp`, one per value of amp.on."""
    if _mixed(amp) and mode == "graph":  # a new function object each: jax caches traces per function, across jits
        return ByAmp(lambda: jax.jit(lambda *a, **k: fn(*a, **k), **kw), amp)
    return jax.jit(fn, **kw) if mode == "graph" else fn


# ------------------------------------------------------------------ mixed precision
FLOAT32_KEPT = ("parameters and Adam state (param_dtype=float32; their gradients come back float32)",
                "BatchNorm/LayerNorm statistics and normalisation (Flax's force_float32_reductions; output cast to dtype)",
                "attention logits and softmax (jax.nn.dot_product_attention: preferred_element_type float32)",
                "LSTM carry (Flax's LSTMCell initialises it at param_dtype)",
                "the loss: the notebooks cast the logits/outputs to float32 before optax's loss")


def autocast(rec, precision, dev=None):
    """-p precision=bf16 the way Flax does it (JAX itself has no autocast and no policy
    library is in this environment): the notebooks build their modules with
    `dtype=amp.dtype`, bfloat16 while `amp.on`, else None (Flax infers float32 from the
    inputs and parameters, exactly the float32 model), and `param_dtype=float32` (Flax's
    default), so weights, gradients and Adam stay float32. Flax casts each layer's inputs,
    kernel and bias to `dtype` (flax.linen.dtypes.promote_dtype) and returns its output in
    it; XLA's CPU dots take the bfloat16 operands. Flax computes normalisation statistics
    in float32 (force_float32_reductions) and jax.nn.dot_product_attention its logits and
    softmax; the notebooks cast the logits to float32 before the loss. The float32 pass
    and training each run their own jitted step (`compile_step(..., amp=amp)`): the step
    reads `amp.dtype` when traced, and jit caches one trace per function.
    The mechanism is tried on one small Dense layer first: any error raises NotOffered."""
    from frameval.nb.amp import Amp
    from frameval.frameworks.contract import NotOffered
    low = {"bf16": "bfloat16", "fp16": "float16"}.get(precision)

    class FlaxAmp(Amp):
        @property
        def dtype(self):
            """The dtype the notebooks give their Flax modules: the low one while on, else None (float32)."""
            return getattr(jnp, self.format) if self.on and self.precision else None

    if low is None:
        return rec.set_amp(FlaxAmp(precision))
    import flax
    import flax.linen as nn
    try:  # the real thing, small: a Dense layer computing in the low format, its gradient float32
        layer = nn.Dense(3, dtype=getattr(jnp, low), param_dtype=jnp.float32)
        x = jnp.ones((2, 4), jnp.float32)
        variables = layer.init(jax.random.key(0), x)
        y = layer.apply(variables, x)
        g = jax.grad(lambda v: layer.apply(v, x).astype(jnp.float32).sum())(variables)
        jax.block_until_ready((y, g))
        assert y.dtype == getattr(jnp, low), f"output {y.dtype}, not {low}"
        assert g["params"]["kernel"].dtype == jnp.float32, f"gradient {g['params']['kernel'].dtype}"
    except Exception as e:
        raise NotOffered(f"flax {flax.__version__} nn.Dense(dtype={low}, param_dtype=float32) on "
                         f"{jax.devices()[0].platform}: {type(e).__name__}: {e}") from e
    amp = FlaxAmp(precision, f"flax dtype={low}, param_dtype=float32", "", FLOAT32_KEPT,
                  how="two jitted functions, one per amp.on (fw.ByAmp): the step reads amp.dtype when jax traces it")
    return rec.set_amp(amp)


def reset_adam(*opts):
    """optax's states are values, never changed in place: the notebooks take a new one
    from fw.fresh_opt(tx, params, dev) after the check instead."""
    from frameval.frameworks.contract import NotOffered
    raise NotOffered("optax optimizer states are immutable values; a fresh one comes from fw.fresh_opt(tx, params, dev)")


def record_scope(rec, mode, step, how="jax.jit of the whole train step (forward, jax.grad, optax update)", why=""):
    if mode != "graph":
        rec.set_graph_scope(False, False, False, how="eager")
        return
    rec.set_graph_scope(True, True, True, graphs=step.graphs, graph_breaks=0, how=how, why=why)
    rec.set(step_traces=step.traces)


# ------------------------------------------------------------------ serving (#70)
SERVED = "model.jax_exported"  # jax.export's serialized Exported (flatbuffers): StableHLO and its signature


def float32(amp):
    """Around the serve cell: the AMP off (amp.on False) while the model is traced and served, back
    on after. The notebooks' forwards read `amp.dtype` when jax traces them, and with a mixed run's
    amp `net` is a ByAmp: amp.on False picks its float32 jit, so the model in memory and the exported
    one compute float32 (a float32 run's amp is off already: nothing changes)."""
    import contextlib

    @contextlib.contextmanager
    def off():
        was = amp.on
        amp.on = False
        try:
            yield amp
        finally:
            amp.on = was
    return off()


def export(rec, model, example, path):
    """jax.export of jax.jit(model) with a symbolic batch dimension (jax.export.symbolic_shape), the
    trained weights closed over (constants in the module), serialized (Exported.serialize) to one
    file: JAX's own form for running a function without its Python code (StableHLO with a
    compatibility guarantee, loaded with jax.export.deserialize and run with .call); a Flax/Orbax
    checkpoint holds the weights only and needs the model's code. `model`: the forward with its
    trained weights closed over (x -> outputs), as the notebook serves it."""
    import jax as _jax
    from jax import export as jexport

    (batch,) = jexport.symbolic_shape("batch")  # any size >= 1
    dtype = _jax.dtypes.canonicalize_dtype(example.dtype)  # int64 -> int32 without jax_enable_x64, as the model takes
    spec = _jax.ShapeDtypeStruct((batch, *example.shape[1:]), dtype)
    platform = "cuda" if rec.device == "gpu" else "cpu"
    exported = jexport.export(_jax.jit(model), platforms=(platform,))(spec)
    with open(os.path.join(str(path), SERVED), "wb") as f:
        f.write(exported.serialize())
    return (f"jax.export Exported (StableHLO, serialized: {SERVED}), weights as constants, symbolic batch "
            f"(batch, {', '.join(map(str, example.shape[1:]))}) {dtype}, for {platform}: JAX's deployment form "
            "without the model's code (a Flax checkpoint needs it)")


def load(path, device):
    """The serialized Exported read back with jax.export.deserialize; its .call under jax.jit (one
    compile per input shape, at the first call), inputs cast to its signature's dtype; np.asarray
    waits for the result and copies it to the host."""
    import jax as _jax
    from jax import export as jexport

    with open(os.path.join(str(path), SERVED), "rb") as f:
        exported = jexport.deserialize(bytearray(f.read()))
    dev = _jax.devices("gpu" if device == "gpu" else "cpu")[0]
    dtype = exported.in_avals[0].dtype
    call = _jax.jit(exported.call)

    def predict(x):
        return np.asarray(call(_jax.device_put(np.asarray(x, dtype), dev)))
    return predict


# ------------------------------------------------------------------ checkpoint and resume (#70)
def checkpoint(rec, path, *state):
    """flax.serialization.to_bytes of the parameter and optimizer pytrees (optax's Adam state:
    its count and moments), Flax's own msgpack checkpoint. JAX has no global random state:
    its keys are values (LeNet and the LSTM draw none while they train)."""
    import flax.serialization
    with open(os.path.join(path, "state.msgpack"), "wb") as f:
        f.write(flax.serialization.to_bytes(tuple(state)))
    return "flax.serialization msgpack of the parameter and optax state pytrees (Adam's count and moments); " \
           "no global random state (JAX's keys are values)"


def restore(rec, path, *state):
    """The pytrees read back into the structure of `state` (flax.serialization.from_bytes), as
    new device buffers where `state`'s leaves live: JAX's arrays are values, not changed in place."""
    import flax.serialization
    import jax as _jax
    with open(os.path.join(path, "state.msgpack"), "rb") as f:
        saved = flax.serialization.from_bytes(tuple(state), f.read())
    return tuple(_jax.tree.map(lambda new, old: _jax.device_put(np.array(new, copy=True), old.sharding)
                               if hasattr(old, "sharding") else new, saved, tuple(state)))
