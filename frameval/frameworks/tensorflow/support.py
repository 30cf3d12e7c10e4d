"""TensorFlow helpers shared by notebooks/tensorflow/{lenet,dcgan,lstm,gpt}.ipynb:
the contract every framework folder fulfils (frameval/frameworks/contract.py).

Importing this module imports TensorFlow and Keras 3 (backend forced to TensorFlow)
quietly: KERAS_BACKEND and TF_CPP_MIN_LOG_LEVEL are set first, file descriptor 2 is
silenced around the import and the Python loggers are set to ERROR. So the setup cell
imports it right after `rec = nb.Recorder(...)` (which sets the thread variables),
then calls `setup` before the first op:

    rec = nb.Recorder(...)                      # thread env vars first
    from frameval.frameworks.tensorflow import support as fw
    import tensorflow as tf                     # already imported, now silently
    dev = fw.setup(rec, mode, device, seed)     # threads, device, seed, rec.after_import

- `setup`: both thread pools set and read back (`set_threads`), the device and the
  recorder's GPU hooks (`choose_device`), Keras' seed, `rec.after_import`.
- `placement`: where the data live.
- `SpecAdam`, `SpecAdamW`: Keras' Adam and AdamW with the spec's (PyTorch's) epsilon placement.
- `compile_step`, `compile_eval`: `tf.function` (no XLA) of the whole train step and of
  the evaluation forward in graph mode; `record_scope`: the graph scope from the step's
  own trace count (or Keras' own of `Model.fit`).
- `read_adam`, `reset_adam`: the optimizer's settings read back; a fresh Adam state put
  back in place after the check (the traced step keeps its variables).
- `autocast`: -p precision=bf16 as Keras' `mixed_bfloat16` dtype policy (#69): a `KerasAmp`
  whose `track(model)` remembers each layer's policy and whose `on` switches the layers
  between it and float32; `compile_step` / `compile_eval` given the amp keep one
  tf.function per state (`Switched`).
- `WindowCallback`: the timing windows from `Model.fit`'s own loop (api = "high").
- `export`, `load` (#70): the served model as a SavedModel (tf.saved_model.save, batch
  dimension None), loaded back with tf.saved_model.load in the serving process.

See docs/frameworks/tensorflow.md ("Defaults set explicitly", "Device, threads, ...").
"""
import contextlib
import logging
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # the frameval kernel sets it too
os.environ["KERAS_BACKEND"] = "tensorflow"          # Keras 3 could be configured for another backend


@contextlib.contextmanager
def c_stderr_silenced():
    """TensorFlow's C++ start-up lines (oneDNN notice, CUDA probe) are written to file
    descriptor 2 before its logging is configured, so TF_CPP_MIN_LOG_LEVEL cannot stop
    them. Silence descriptor 2 around the import only; Python exceptions still show."""
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved), os.close(null)


with c_stderr_silenced():
    import tensorflow as tf
    import keras
    from keras import layers  # noqa: F401  (imported under the silencer, as the notebooks use it)
import absl.logging

tf.get_logger().setLevel(logging.ERROR)
absl.logging.set_verbosity(absl.logging.ERROR)


def _spec_update_step(self, gradient, variable, learning_rate):
    """Adam's update with epsilon after the bias correction (see SpecAdam)."""
    i = self._get_variable_index(variable)
    m, v = self._momentums[i], self._velocities[i]
    t = tf.cast(self.iterations + 1, tf.float64)
    gradient = tf.cast(gradient, variable.dtype)
    self.assign_add(m, (gradient - m) * (1 - self.beta_1))
    self.assign_add(v, (tf.square(gradient) - v) * (1 - self.beta_2))
    correction1, correction2 = (tf.cast(1 - tf.pow(tf.constant(b, tf.float64), t), variable.dtype)
                                for b in (self.beta_1, self.beta_2))
    denom = tf.sqrt(v) / tf.sqrt(correction2) + self.epsilon
    self.assign_sub(variable, tf.cast(learning_rate, variable.dtype) / correction1 * m / denom)


class SpecAdam(keras.optimizers.Adam):
    """Keras' Adam with epsilon added after the bias correction, as in the Adam paper's
    Algorithm 1 and PyTorch: the spec's optimizer. Stock Keras adds epsilon to sqrt(v)
    before the correction, where 1e-8 acts like 1e-8 / sqrt(1 - 0.999**t), 32x larger
    at step 1: enough to shrink the first updates of weights whose gradients are tiny.
    Uses Keras 3 internals (`_momentums`, `_velocities`, `_get_variable_index`).
    The bias corrections 1 - beta**t are computed in float64, as the moments' 1 - beta
    are (Python floats): in float32, 0.999 rounds to 0.99900001287, so 1 - 0.999**t
    came out 1.29e-5 low at step 1 and every step 6.6e-6 short, which at seed 1 moved
    an fc2 input of LeNet across its ReLU kink (docs/notebooks.md, "The check")."""

    update_step = _spec_update_step


class SpecAdamW(keras.optimizers.AdamW):
    """Keras' AdamW (decoupled decay: w -= lr * decay * w before the update, as
    torch.optim.AdamW) with SpecAdam's update: epsilon after the bias correction."""

    update_step = _spec_update_step


def choose_device(device):
    """Before the first op: the GPU with memory growth (device == "gpu"; raises where TensorFlow
    sees none) or the CPU with every GPU hidden. Returns (device string for `tf.device`,
    keywords for `rec.after_import`: clock sync, allocator peak and GPU name, None on the CPU)."""
    gpus = tf.config.list_physical_devices("GPU")
    if device == "gpu":
        if not gpus:
            raise RuntimeError("device='gpu' but tf.config.list_physical_devices('GPU') is empty in this environment")
        for g in gpus:  # before the runtime starts, or TensorFlow reserves the whole card
            tf.config.experimental.set_memory_growth(g, True)
        dev = "/GPU:0"
    else:
        tf.config.set_visible_devices([], "GPU")  # a CPU run never touches a GPU, even where one is present
        dev = "/CPU:0"
    gpu = device == "gpu"
    return dev, dict(
        sync=tf.test.experimental.sync_devices if gpu else None,
        reset_device_peak=(lambda: tf.config.experimental.reset_memory_stats("GPU:0")) if gpu else None,
        device_peak_mb=(lambda: tf.config.experimental.get_memory_info("GPU:0")["peak"] / 1e6) if gpu else None,
        gpu_name=tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU") if gpu else None)


def set_threads(rec):
    """Both thread pools to rec.threads (before the first op: the runtime fixes them when
    it starts), then read back from tf.config.threading."""
    tf.config.threading.set_intra_op_parallelism_threads(rec.threads)
    tf.config.threading.set_inter_op_parallelism_threads(rec.threads)
    intra = tf.config.threading.get_intra_op_parallelism_threads()
    inter = tf.config.threading.get_inter_op_parallelism_threads()
    # 0 would mean "the runtime picks": not a count, so not reported as one
    rec.set_threads_effective(intra or None, inter or None,
                              "tf.config.threading.get_intra_op_parallelism_threads / "
                              "get_inter_op_parallelism_threads")
    return intra, inter


def setup(rec, mode, device, seed):
    """Everything before the data, in the order TensorFlow needs it (the environment
    variables that must precede its import were set when this module was imported):
    both thread pools set and read back (before the first op), the device (the GPU with
    memory growth, raising where there is none, or the CPU with every GPU hidden),
    Keras' seed (Python's, numpy's and TensorFlow's: dropout masks), and
    `rec.after_import` with the GPU hooks (clock sync, allocator peak, name; None on the
    CPU). TensorFlow's graph mode needs no switch here: it is `compile_step`'s
    `tf.function`. -> the device string the notebook places its tensors with (`tf.device`)."""
    intra, inter = set_threads(rec)
    dev, gpu_hooks = choose_device(device)
    keras.utils.set_random_seed(seed)
    rec.after_import(tf.__version__, **gpu_hooks)
    print(f"tensorflow {tf.__version__} (keras {keras.__version__}) on {dev}, "
          f"{intra} intra-op / {inter} inter-op threads, mode={mode}")
    return dev


def placement(dev):
    """Where the data set lives once the data cell made tensors of it (`tf.constant`
    copies the numpy array: checked, the tensor's buffer is not numpy's)."""
    return "host copy (tf.constant)" if dev.startswith("/CPU") else f"device copy ({dev})"


MIXED_POLICY = {"bf16": "mixed_bfloat16"}
# What Keras keeps in float32 under a mixed policy, by its own code (keras/src): every
# variable (the policy's variable_dtype; layers read a bfloat16 copy inside their call),
# the gradients and Adam's update (on the float32 variables), BatchNormalization's and
# LayerNormalization's statistics and normalisation (they upcast their input to float32
# and cast the output back), and keras.losses (computed at the loss' float32 dtype). The
# notebooks' own losses (tf.nn) get the model output cast to float32 first, as Keras'
# mixed-precision guide asks of a model's last output.
KERAS_FLOAT32 = ("variables", "gradients", "optimizer update", "BatchNormalization", "LayerNormalization",
                 "keras.losses", "model output cast to float32 before the loss (Keras' mixed-precision guide)")


def _amp_class():
    from frameval.nb.amp import Amp

    class KerasAmp(Amp):
        """Keras' mixed precision as the notebook holds it. Keras sets a layer's dtype
        policy when the layer is constructed (the global policy `autocast` set), so
        the switch is per layer: `track(*models)` remembers each layer's policy as
        Keras chose it, and `on = False` sets every tracked layer to float32, `on = True`
        back to Keras' own choice (Layer.dtype_policy's setter). Eager calls see the
        switch at once; a tf.function sees it only when it traces, hence `Switched`.
        A model compiled for Model.fit has its cached train/test/predict functions
        dropped at a switch, so fit retraces under the new policies."""

        def __init__(self, *args, **kw):
            self._layers, self._models = [], []
            super().__init__(*args, **kw)

        @property
        def on(self):
            return self._on

        @on.setter
        def on(self, value):
            self._on = bool(value)
            if self.precision is None:
                return
            f32 = keras.DTypePolicy("float32")
            for layer, policy in self._layers:
                want = policy if self._on else f32
                if layer.dtype_policy.name != want.name:
                    layer.dtype_policy = want
            for m in self._models:
                for attr in ("train_function", "test_function", "predict_function"):
                    if getattr(m, attr, None) is not None:
                        setattr(m, attr, None)

        def track(self, *models):
            """The models (built after `autocast`, under its global policy) whose layers
            the switch sets; returns the first. A float32 run tracks nothing."""
            if self.precision is not None:
                for m in models:
                    self._models.append(m)
                    self._layers += [(layer, layer.dtype_policy)
                                     for layer in m._flatten_layers(include_self=True, recursive=True)]
                self.on = self.on
            return models[0] if models else None

    return KerasAmp


def autocast(rec, precision, mode="graph"):
    """-p precision=bf16: Keras' mixed precision, the `mixed_bfloat16` dtype policy set
    globally (keras.mixed_precision.set_global_policy) before the models are built:
    Keras keeps the variables in float32 and computes every layer in bfloat16 (KERAS_FLOAT32:
    what it keeps in float32). The notebook builds its models after this call and hands
    them to `amp.track`; its step casts the model output to float32 before the loss. A
    float32 run (precision default/highest) gets an Amp that is off and leaves Keras'
    policy at float32. Tries one bfloat16 Dense forward and gradient on this device first:
    where it fails, NotOffered with TensorFlow's own error."""
    from frameval.frameworks.contract import NotOffered
    KerasAmp = _amp_class()
    if precision not in MIXED_POLICY:
        if precision == "fp16":
            raise NotOffered("precision=fp16: Keras' mixed_float16 needs keras.mixed_precision.LossScaleOptimizer "
                             "around the optimizer; frameval's TensorFlow notebooks do not wire it (bf16 only)")
        return rec.set_amp(KerasAmp(precision))
    policy = MIXED_POLICY[precision]
    try:  # the real thing, once: a mixed Dense layer's forward and gradient
        probe = layers.Dense(2, dtype=policy, kernel_initializer="ones", name="frameval_amp_probe")  # draws no random numbers
        probe.build((None, 3))
        with tf.GradientTape() as tape:
            out = probe(tf.ones((2, 3)))
            loss = tf.reduce_sum(tf.cast(out, tf.float32))
        grads = tape.gradient(loss, probe.trainable_variables)
        if out.dtype != tf.bfloat16 or any(g is None for g in grads):
            raise RuntimeError(f"a {policy} Dense computed {out.dtype.name}, gradients {[g is not None for g in grads]}")
    except Exception as e:
        raise NotOffered(f"keras {keras.__version__} dtype policy {policy!r} on this device: a Dense forward and "
                         f"gradient failed: {type(e).__name__}: {e}") from e
    keras.mixed_precision.set_global_policy(policy)
    graph = ("graph mode: one tf.function per AMP state (fw.Switched), the float32 pass traces its own; "
             "training's is the one the AMP pass ran" if mode == "graph" else "eager: the switch applies at the next call")
    amp = KerasAmp(precision, f"keras.mixed_precision.set_global_policy({policy!r})", "", KERAS_FLOAT32,
                   how="amp.on sets every tracked layer's dtype_policy to float32 (off) or back to the policy Keras "
                       f"gave it (on); {graph}")
    return rec.set_amp(amp)


class Switched:
    """Graph mode of a mixed run: the same Python step as two tf.functions, one per AMP
    state. A tf.function traces once per input signature and bakes the layers' dtype
    policies into its graph; the AMP switch is no argument of the step, so each state gets
    its own function. Training runs the `on` one, the one the AMP check pass ran; the
    float32 check pass runs the other. The trace count is the training one's."""

    def __init__(self, fn, amp, **kw):
        self.amp = amp
        self.fns = {True: tf.function(fn, **kw), False: tf.function(fn, **kw)}

    def __call__(self, *args, **kwargs):
        return self.fns[bool(self.amp.on)](*args, **kwargs)

    def experimental_get_tracing_count(self):
        return self.fns[True].experimental_get_tracing_count()


def compile_step(step, mode, amp=None):
    """Graph mode: the whole train step (forward, tape.gradient, apply_gradients) as
    one tf.function, no XLA (a mixed run: one per AMP state, `Switched`). Eager: the
    same Python function, op by op."""
    if mode != "graph":
        return step
    if amp is not None and amp.precision is not None:
        return Switched(step, amp, jit_compile=False)
    return tf.function(step, jit_compile=False)


def compile_eval(fn, mode, input_signature=None, amp=None):
    """Graph mode: the evaluation forward as its own tf.function, no XLA; `input_signature`
    leaves the batch (and length) free, so a last, smaller batch does not retrace
    (a mixed run: one per AMP state, `Switched`). Eager: the same Python function, op by op."""
    if mode != "graph":
        return fn
    if amp is not None and amp.precision is not None:
        return Switched(fn, amp, jit_compile=False, input_signature=input_signature)
    return tf.function(fn, jit_compile=False, input_signature=input_signature)


def record_scope(rec, mode, step, how="", why=""):
    """rec.set_graph_scope for a train step made by compile_step: everything of the
    step is in its graph (TensorFlow has no graph breaks: a function that cannot be
    traced fails); `graphs` is the step's own trace count (evaluation excluded).
    `step` a keras.Model trained by Model.fit (api = "high"): compiled (run_eagerly=False),
    Keras wraps its whole train_step (forward, gradient, optimizer.apply) in one
    tf.function, no XLA; its trace count is not exposed (a closure inside Keras), so
    `graphs` is not available. `how` replaces the default description."""
    fit = isinstance(step, keras.Model)
    if mode != "graph" or (fit and step.run_eagerly):
        rec.set_graph_scope(False, False, False)
        return
    if fit:
        rec.set_graph_scope(True, True, True, graphs=None, graph_breaks=0,
                            how=how or "Model.compile(run_eagerly=False, jit_compile=False): Keras' tf.function of "
                                       "Model.train_step (forward, loss, gradient, optimizer.apply)", why=why)
        return
    traces = step.experimental_get_tracing_count()
    how = how or "tf.function (no XLA) of the whole train step: forward, GradientTape.gradient, Adam.apply_gradients"
    if isinstance(step, Switched):
        how += ("; mixed precision: training's tf.function (the AMP check pass ran it); the float32 check pass "
                f"traced a second one of the same step ({step.fns[False].experimental_get_tracing_count()} trace(s), "
                "not counted)")
    rec.set_graph_scope(True, True, True, graphs=traces, graph_breaks=0, how=how, why=why)


def read_adam(rec, *opts):
    """Adam's lr, betas and epsilon as the optimizer objects hold them."""
    o = opts[0]
    # AdamW first: Keras' AdamW is a subclass of its Adam, and the GPT's SpecAdamW one of AdamW
    name = next((n for n in ("AdamW", "Adam") if isinstance(o, getattr(keras.optimizers, n))), type(o).__name__)
    rec.settings_read(optimizer=name,
                      lr=float(o.learning_rate), betas=[float(o.beta_1), float(o.beta_2)], adam_eps=float(o.epsilon))


def reset_adam(*opts):
    """A fresh Adam state, in place: moments zeroed, iteration counter 0. The learning
    rate variable is left alone; the traced step keeps reading the same variables."""
    for o in opts:
        for v in list(o._momentums) + list(o._velocities):
            v.assign(tf.zeros(v.shape, v.dtype))
        o.iterations.assign(0)


class WindowCallback(keras.callbacks.Callback):
    """Marks the recorder's timing windows (ep.step_windows) from Model.fit's own loop.
    Only `on_train_batch_begin` is overridden: a callback with its own
    `on_train_batch_end` turns off Keras' asynchronous batch-end dispatch and reads the
    logs back to the host after every step, work fit does not do unless asked. So step
    j's end is marked at step j+1's begin (the same moment in back-to-back windows) and
    the last step's at the epoch's end, after fit has read its epoch metrics."""

    def __init__(self, windows):
        super().__init__()
        self.windows = windows

    def on_train_batch_begin(self, batch, logs=None):
        if batch > 0:
            self.windows.end(batch - 1)
        self.windows.begin(batch)

    def on_epoch_end(self, epoch, logs=None):
        self.windows.end(len(self.windows.items) - 1)


def export(rec, model, example, path):
    """A TensorFlow SavedModel written by tf.saved_model.save: a tf.Module whose `serve` is a
    tf.function of the model's inference forward (training=False, output float32, autograph
    off as Keras' own export has it) with an input signature whose batch dimension is None,
    also the SavedModel's serving_default signature; the module tracks the weights' tf.Variables.
    The SavedModel is TensorFlow's deployment format: TF Serving, the TFLite converter and
    tf.saved_model.load take it without the model's Python code.

    Keras 3's own writer of the same SavedModel (Model.export, keras.export.ExportArchive)
    stores every weight twice, once per Keras variable and once per the tf.Variable inside it
    (defects/tensorflow/keras-export-duplicate-variables.py): the module here tracks the
    tf.Variables alone, which the function captures, so each weight is stored once."""
    spec = tf.TensorSpec([None, *example.shape[1:]], tf.as_dtype(example.dtype), name="x")
    served = tf.Module()
    served.tf_variables = [v.value for v in model.weights]  # outside an autocast scope: the tf.Variable itself
    served.serve = tf.function(lambda x: tf.cast(model(x, training=False), tf.float32), input_signature=[spec],
                               autograph=False)
    tf.saved_model.save(served, str(path), signatures={"serving_default": served.serve.get_concrete_function()})
    rec.workaround("keras-export-duplicate-variables")
    return ("TensorFlow SavedModel (tf.saved_model.save of a tf.function, batch None): the format TF Serving "
            "and tf.saved_model.load take")


def load(path, device):
    """The SavedModel loaded with tf.saved_model.load, its `serve` function called. The
    device as `setup` picks it (every GPU hidden on the CPU) and the thread pools at the
    run's count (OMP_NUM_THREADS, which the recorder set for the notebook's kernel), both
    before the runtime starts."""
    threads = int(os.environ.get("OMP_NUM_THREADS") or 0)
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    dev, _ = choose_device(device)
    with tf.device(dev):
        served = tf.saved_model.load(str(path))
    dtype = served.serve.input_signature[0].dtype

    def predict(x):  # `served` stays referenced: the loaded function's variables live with it
        with tf.device(dev):
            return served.serve(tf.constant(x, dtype=dtype)).numpy()
    return predict


# ------------------------------------------------------------------ checkpoint and resume (#70)
CHECKPOINT = "ckpt"


def _tracked(state) -> dict:
    """The objects by role for tf.train.Checkpoint: the model(s), then the optimizer(s)."""
    return {f"{'optimizer' if isinstance(s, keras.optimizers.Optimizer) else 'model'}_{i}": s for i, s in enumerate(state)}


def checkpoint(rec, path, *state):
    """tf.train.Checkpoint of the model and its optimizer (the variables: weights, Adam's
    moments and iteration count), TensorFlow's own checkpoint for resuming a training, with
    the global tf.random.Generator's state."""
    ckpt = tf.train.Checkpoint(rng=tf.random.get_global_generator(), **_tracked(state))
    ckpt.write(os.path.join(path, CHECKPOINT))
    return "tf.train.Checkpoint of the Keras model and optimizer (weights, Adam's moments and iterations), " \
           "the global tf.random.Generator's state"


def restore(rec, path, *state):
    """The checkpoint read back into the same variables (assigned in place: the traced step keeps them)."""
    ckpt = tf.train.Checkpoint(rng=tf.random.get_global_generator(), **_tracked(state))
    ckpt.read(os.path.join(path, CHECKPOINT)).assert_existing_objects_matched()
    return state
