#!/usr/bin/env python3
"""Seed parity: is frameval's graph-mode DCGAN notebook at least as fast as the
straightforward training loop a user would write by hand from the DCGAN seed
blog (shared/seeds/dcgan-mindspore-tensorflow-megengine.md)?

For PyTorch and TensorFlow, on the same data (the first --samples images of
the prepared embedded MNIST, scaled to [-1, 1]) and the same batch size:

- hand-written: a plain script in the framework's environment, written the way
  the blog writes it (Sequential models, library defaults for initialisation,
  an in-memory shuffled batch loop, noise drawn by the framework, a clock
  around each epoch). The step is the frameval DCGAN step (discriminator
  update, then the generator through the updated discriminator and the same
  fake) so that both sides do the same work; the blog's single-tape
  simultaneous update does one discriminator pass less, which would compare
  algorithms, not harnesses. TensorFlow: `tf.function` as in the blog.
  PyTorch: `torch.compile` (the same mode as frameval's graph mode), and plain
  eager PyTorch is shown beside it. Thread counts are set to frameval's
  (all cores) so only the harness differs.
- frameval: notebooks/<fw>/dcgan.ipynb in graph mode through the full path
  (papermill, kernel, recorder), as `run_all.py` runs it.

Printed: the steady epoch time (median of epochs 2..N) of each, and the ratio
frameval / hand-written (target <= 1.0), each with the 1-minute load average
(os.getloadavg) over its runs beside it.

    python3 run_all.py bench seed_parity          (or: python3 bench/seed_parity.py; either runs it in the runner env)
    python3 run_all.py bench seed_parity --frameworks torch --samples 256 --batch-size 64 --epochs 3 --repeats 2
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

if __name__ == "__main__":
    from frameval.bootstrap import bootstrap_script  # standard library only
    bootstrap_script(__file__)  # returns inside the runner environment

from frameval import data, envs, execute  # noqa: E402
from frameval.result import load as load_result  # noqa: E402
from frameval.paths import data_cache_dir  # noqa: E402
from frameval.plan import build_plan, notebook_path  # noqa: E402


def load() -> float:
    return os.getloadavg()[0]


def span(values) -> str:
    """The load averages seen over a measurement, as "load 1.2-3.4"."""
    lo, hi = min(values), max(values)
    return f"load {lo:.1f}" if abs(hi - lo) < 0.05 else f"load {lo:.1f}-{hi:.1f}"


# ----------------------------------------------------------------- hand-written loops
# Each reads its settings from argv[1] (JSON) and prints {"epochs": [seconds...]} last.
HAND_TORCH = r'''
import json, os, sys, time
import numpy as np
import torch
import torch.nn as nn

cfg = json.loads(sys.argv[1])
torch.set_num_threads(cfg["threads"])
BATCH, EPOCHS, NOISE = cfg["batch_size"], cfg["epochs"], 100

with np.load(cfg["data"]) as z:
    images = z["x_train"][:cfg["samples"]]
x_all = torch.from_numpy((images.astype(np.float32) - 127.5) / 127.5).unsqueeze(1)  # [-1, 1], N x 1 x 28 x 28

generator = nn.Sequential(
    nn.Linear(NOISE, 7 * 7 * 256, bias=False), nn.Unflatten(1, (256, 7, 7)),
    nn.BatchNorm2d(256), nn.LeakyReLU(0.2),
    nn.ConvTranspose2d(256, 128, 5, stride=1, padding=2, bias=False), nn.BatchNorm2d(128), nn.LeakyReLU(0.2),
    nn.ConvTranspose2d(128, 64, 5, stride=2, padding=2, output_padding=1, bias=False), nn.BatchNorm2d(64), nn.LeakyReLU(0.2),
    nn.ConvTranspose2d(64, 1, 5, stride=2, padding=2, output_padding=1, bias=False), nn.Tanh())
discriminator = nn.Sequential(
    nn.Conv2d(1, 64, 5, stride=2, padding=2), nn.LeakyReLU(0.2), nn.Dropout(0.3),
    nn.Conv2d(64, 128, 5, stride=2, padding=2), nn.LeakyReLU(0.2), nn.Dropout(0.3),
    nn.Flatten(), nn.Linear(128 * 7 * 7, 1))
g_opt = torch.optim.Adam(generator.parameters(), lr=1e-4)
d_opt = torch.optim.Adam(discriminator.parameters(), lr=1e-4)
bce = nn.BCEWithLogitsLoss()
G = torch.compile(generator) if cfg["compile"] else generator
D = torch.compile(discriminator) if cfg["compile"] else discriminator


def train_step(images):
    noise = torch.randn(images.shape[0], NOISE)
    fake = G(noise)
    d_opt.zero_grad()
    real_out, fake_out = D(images), D(fake.detach())
    d_loss = bce(real_out, torch.ones_like(real_out)) + bce(fake_out, torch.zeros_like(fake_out))
    d_loss.backward()
    d_opt.step()
    g_opt.zero_grad()
    out = D(fake)
    g_loss = bce(out, torch.ones_like(out))
    g_loss.backward()
    g_opt.step()
    return g_loss.detach(), d_loss.detach()


times = []
n = len(x_all)
for epoch in range(EPOCHS):
    start = time.perf_counter()
    perm = torch.randperm(n)
    for i in range(0, n - BATCH + 1, BATCH):
        g_loss, d_loss = train_step(x_all[perm[i:i + BATCH]])
    g, d = g_loss.item(), d_loss.item()
    times.append(time.perf_counter() - start)
    print(f"Time for epoch {epoch + 1} is {times[-1]:.3f} sec (g {g:.3f}, d {d:.3f})", flush=True)
print(json.dumps({"epochs": times, "threads": torch.get_num_threads()}))
'''

HAND_TF = r'''
import json, os, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

cfg = json.loads(sys.argv[1])
tf.config.threading.set_intra_op_parallelism_threads(cfg["threads"])
tf.config.threading.set_inter_op_parallelism_threads(cfg["threads"])
tf.config.set_visible_devices([], "GPU")
BATCH, EPOCHS, NOISE = cfg["batch_size"], cfg["epochs"], 100

with np.load(cfg["data"]) as z:
    images = z["x_train"][:cfg["samples"]]
train_images = ((images.astype("float32") - 127.5) / 127.5).reshape(-1, 28, 28, 1)
dataset = tf.data.Dataset.from_tensor_slices(train_images).shuffle(len(train_images)).batch(BATCH, drop_remainder=True)


def make_generator_model():
    model = tf.keras.Sequential()
    model.add(layers.Input((NOISE,)))
    model.add(layers.Dense(7 * 7 * 256, use_bias=False))
    model.add(layers.BatchNormalization())
    model.add(layers.LeakyReLU(0.2))
    model.add(layers.Reshape((7, 7, 256)))
    model.add(layers.Conv2DTranspose(128, (5, 5), strides=(1, 1), padding="same", use_bias=False))
    model.add(layers.BatchNormalization())
    model.add(layers.LeakyReLU(0.2))
    model.add(layers.Conv2DTranspose(64, (5, 5), strides=(2, 2), padding="same", use_bias=False))
    model.add(layers.BatchNormalization())
    model.add(layers.LeakyReLU(0.2))
    model.add(layers.Conv2DTranspose(1, (5, 5), strides=(2, 2), padding="same", use_bias=False, activation="tanh"))
    return model


def make_discriminator_model():
    model = tf.keras.Sequential()
    model.add(layers.Input((28, 28, 1)))
    model.add(layers.Conv2D(64, (5, 5), strides=(2, 2), padding="same"))
    model.add(layers.LeakyReLU(0.2))
    model.add(layers.Dropout(0.3))
    model.add(layers.Conv2D(128, (5, 5), strides=(2, 2), padding="same"))
    model.add(layers.LeakyReLU(0.2))
    model.add(layers.Dropout(0.3))
    model.add(layers.Flatten())
    model.add(layers.Dense(1))
    return model


generator = make_generator_model()
discriminator = make_discriminator_model()
cross_entropy = tf.keras.losses.BinaryCrossentropy(from_logits=True)
generator_optimizer = tf.keras.optimizers.Adam(1e-4)
discriminator_optimizer = tf.keras.optimizers.Adam(1e-4)


@tf.function
def train_step(images):
    noise = tf.random.normal([BATCH, NOISE])
    with tf.GradientTape() as gen_tape:
        generated_images = generator(noise, training=True)
        with tf.GradientTape() as disc_tape:
            real_output = discriminator(images, training=True)
            fake_output = discriminator(tf.stop_gradient(generated_images), training=True)
            disc_loss = (cross_entropy(tf.ones_like(real_output), real_output)
                         + cross_entropy(tf.zeros_like(fake_output), fake_output))
        grads = disc_tape.gradient(disc_loss, discriminator.trainable_variables)
        discriminator_optimizer.apply_gradients(zip(grads, discriminator.trainable_variables))
        fake_output = discriminator(generated_images, training=True)
        gen_loss = cross_entropy(tf.ones_like(fake_output), fake_output)
    grads = gen_tape.gradient(gen_loss, generator.trainable_variables)
    generator_optimizer.apply_gradients(zip(grads, generator.trainable_variables))
    return gen_loss, disc_loss


times = []
for epoch in range(EPOCHS):
    start = time.perf_counter()
    for image_batch in dataset:
        gen_loss, disc_loss = train_step(image_batch)
    g, d = float(gen_loss), float(disc_loss)
    times.append(time.perf_counter() - start)
    print(f"Time for epoch {epoch + 1} is {times[-1]:.3f} sec (g {g:.3f}, d {d:.3f})", flush=True)
print(json.dumps({"epochs": times, "threads": tf.config.threading.get_intra_op_parallelism_threads()}))
'''

HAND = {"torch": [("torch.compile", HAND_TORCH, {"compile": True}), ("eager", HAND_TORCH, {"compile": False})],
        "tensorflow": [("tf.function", HAND_TF, {})]}


def steady(secs):
    return statistics.median(secs[1:]) if len(secs) > 1 else None


def run_hand(env, fw, source, extra, a) -> list:
    cfg = dict(samples=a.samples, batch_size=a.batch_size, epochs=a.epochs, threads=os.cpu_count() or 1,
               data=str(data_cache_dir() / "mnist-embedded.npz"), **extra)
    penv = dict(os.environ, **envs.framework_kernel_env(fw))
    with tempfile.TemporaryDirectory(prefix="frameval-hand-") as d:
        penv["TORCHINDUCTOR_CACHE_DIR"] = str(Path(d) / "inductor")  # cold compile, as in a fresh kernel
        p = subprocess.run([str(env.python), "-c", source, json.dumps(cfg)], capture_output=True, text=True,
                           env=penv, cwd=d)
    if p.returncode != 0:
        raise RuntimeError(f"hand-written {fw} loop failed:\n{p.stdout[-1500:]}\n{p.stderr[-2500:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])["epochs"]


def run_frameval(env, fw, a, d: Path) -> list:
    run = build_plan(fw, "dcgan", mode="graph", overrides={None: {
        "epochs": str(a.epochs), "batch_size": str(a.batch_size), "max_train_samples": str(a.samples)}})[0]
    out = execute.execute(run, d, envs.kernel_name(fw), execute.key_parts(run, env.freeze))
    if out.status != "ok":
        raise RuntimeError(f"frameval {fw}/dcgan failed: {out.error} (see {d})")
    return [e["seconds"] for e in load_result(d / "result.json")["epochs"]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frameworks", default="torch,tensorflow")
    ap.add_argument("--samples", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=3, help="the first is the warm-up; steady = median of the rest")
    ap.add_argument("--repeats", type=int, default=1, help="alternate hand-written / frameval this many times")
    ap.add_argument("--keep", default="", help="keep frameval's run folders here")
    a = ap.parse_args(argv)
    if a.epochs < 2:
        sys.exit("--epochs must be 2 or more (a warm-up and a steady epoch)")
    try:
        import papermill  # noqa: F401
    except ImportError:
        sys.exit("bench/seed_parity.py runs in the runner environment (papermill missing); see the docstring")
    data.prepare_all()  # both sides read the prepared MNIST cache, which a fresh clone does not have yet
    root = Path(a.keep or tempfile.mkdtemp(prefix="frameval-seed-parity-"))
    print(f"bench/seed_parity.py: DCGAN, {a.samples} samples, batch {a.batch_size}, {a.epochs} epochs, "
          f"{a.repeats} repeat(s); {os.cpu_count()} cores; load {load():.1f}", flush=True)
    lines = []
    for fw in [f.strip() for f in a.frameworks.split(",") if f.strip()]:
        if not notebook_path(fw, "dcgan").exists():
            print(f"{fw}: not available (no notebooks/{fw}/dcgan.ipynb)")
            lines.append(f"{fw}: not available")
            continue
        try:
            env = envs.ensure_framework(fw)
            hand = {label: [] for label, _, _ in HAND[fw]}
            fv, loads = [], []  # loads: the 1-minute load average before and after each run
            for k in range(1, a.repeats + 1):
                for label, source, extra in HAND[fw]:
                    t0, l0 = time.perf_counter(), load()
                    secs = run_hand(env, fw, source, extra, a)
                    hand[label].append(steady(secs))
                    loads += [l0, load()]
                    print(f"  {fw} hand-written ({label}) #{k}: epochs {', '.join(f'{s:.2f}' for s in secs)} s "
                          f"(run {time.perf_counter() - t0:.0f} s; {span(loads[-2:])})", flush=True)
                t0, l0 = time.perf_counter(), load()
                secs = run_frameval(env, fw, a, root / f"{fw}-{k}")
                fv.append(steady(secs))
                loads += [l0, load()]
                print(f"  {fw} frameval graph #{k}: epochs {', '.join(f'{s:.2f}' for s in secs)} s "
                      f"(run {time.perf_counter() - t0:.0f} s; {span(loads[-2:])})", flush=True)
        except Exception as e:  # noqa: BLE001 - report and go on with the next framework
            print(f"{fw}: not available ({str(e).splitlines()[0] if str(e) else type(e).__name__})", flush=True)
            lines.append(f"{fw}: not available ({type(e).__name__})")
            continue
        f_med = statistics.median(fv)
        for i, (label, _, _) in enumerate(HAND[fw]):
            h_med = statistics.median(hand[label])
            ratio = f_med / h_med
            target = "target <= 1.0: " + ("met" if ratio <= 1.0 else "MISSED") if i == 0 else "(for reference)"
            lines.append(f"{fw}: frameval graph {f_med:.3f} s / hand-written {label} {h_med:.3f} s "
                         f"= {ratio:.3f}   {target}   ({span(loads)})")
    print()
    print("steady epoch time, frameval / hand-written:")
    for line in lines:
        print("  " + line)
    if not a.keep:  # the run folders hold inductor and Keras caches: not left in /tmp
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
