"""DCGAN on MNIST (docs/workloads.md): everything frameval knows about the
workload besides its notebooks. Standard library only (see base.py)."""
from __future__ import annotations

from .. import datasets
from ..base import COMMON_PARAMS, Figure, Layer, Network, Op, Pass, Quality, Workload, conv, dense, tconv

NETS = ("generator", "discriminator")
NOISE = 100


def _bn(prefix, c):
    return ((f"{prefix}.weight", (c,), "ones"), (f"{prefix}.bias", (c,), "zeros"),
            (f"{prefix}.running_mean", (c,), "stat0"), (f"{prefix}.running_var", (c,), "stat1"))


GENERATOR = (
    ("fc.weight", (12544, NOISE), "dense"), *_bn("bn0", 256),
    ("deconv1.weight", (256, 128, 5, 5), "deconv"), *_bn("bn1", 128),
    ("deconv2.weight", (128, 64, 5, 5), "deconv"), *_bn("bn2", 64),
    ("deconv3.weight", (64, 1, 5, 5), "deconv"),
)
DISCRIMINATOR = (
    ("conv1.weight", (64, 1, 5, 5), "conv"), ("conv1.bias", (64,), "zeros"),
    ("conv2.weight", (128, 64, 5, 5), "conv"), ("conv2.bias", (128,), "zeros"),
    ("fc.weight", (1, 6272), "dense"), ("fc.bias", (1,), "zeros"),
)
# The generator's BatchNorm running statistics, which the check compares after its steps.
BN_RUNNING = [f"generator.{bn}.{s}" for bn in ("bn0", "bn1", "bn2") for s in ("running_mean", "running_var")]


def generator_layers() -> tuple:
    return (Layer("G dense 100→12,544", dense(100, 12544), on_input=True),
            Layer("G tconv 5x5 256→128, stride 1 (7x7 in)", tconv(7, 7, 256, 128, 5)),
            Layer("G tconv 5x5 128→64, stride 2 (7x7 in)", tconv(7, 7, 128, 64, 5)),
            Layer("G tconv 5x5 64→1, stride 2 (14x14 in)", tconv(14, 14, 64, 1, 5)))


def discriminator_layers() -> tuple:
    return (Layer("D conv 5x5 1→64, stride 2 (14x14 out)", conv(14, 14, 1, 64, 5), on_input=True),
            Layer("D conv 5x5 64→128, stride 2 (7x7 out)", conv(7, 7, 64, 128, 5)),
            Layer("D dense 6,272→1", dense(6272, 1)))


def passes(params) -> tuple:
    """Per real image: fake = G(z), whose backward comes in the G step; the D
    step on D(x) and D(fake.detach()): D's weights, no gradient for either
    input; the G step on D(fake) through the updated D: the gradient runs
    through all of D down to the fake image, but D's weights are not trained there."""
    d = discriminator_layers()
    return (Pass("G(z); backward in the G step", generator_layers()),
            Pass("D step: D(x), D(fake.detach())", d, times=2),
            Pass("G step: D(fake), updated D", d, weights=False, input_grad=True))


def _g_ops() -> tuple:
    """The generator: forward once, its backward (weights, and inputs but the noise's) in the G step."""
    bn = lambda c, h: Op(f"G BatchNorm2d({c}) ({h}x{h})", "batchnorm2d", (c, h, h), (("momentum", 0.9), ("eps", 1e-5)))  # noqa: E731
    act = lambda c, h: Op(f"G LeakyReLU(0.2) ({c}x{h}x{h})", "leaky_relu", (c, h, h), (("slope", 0.2),),  # noqa: E731
                          ((1, True, False),))
    tc = lambda c, o, s, h: Op(f"G tconv 5x5 {c}→{o}, stride {s} ({h}x{h} in)", "tconv2d", (c, h, h),  # noqa: E731
                               (("out", o), ("k", 5), ("stride", s), ("pad", 2), ("output_pad", s - 1)),
                               macs=tconv(h, h, c, o, 5))
    return (Op("G dense 100→12,544", "dense", (NOISE,), (("out", 12544), ("bias", False)), ((1, False, True),),
               dense(100, 12544)),
            bn(256, 7), act(256, 7), tc(256, 128, 1, 7), bn(128, 7), act(128, 7), tc(128, 64, 2, 7), bn(64, 14),
            act(64, 14), tc(64, 1, 2, 14),
            Op("G tanh (1x28x28)", "tanh", (1, 28, 28), uses=((1, True, False),)))


def _d_ops() -> tuple:
    """The discriminator: twice in the D step (D(x), D(fake.detach()): weights,
    no gradient for its input), once in the G step through the updated D (the
    gradient runs down to the fake image, none for D's weights)."""
    d2, g1 = (2, True, True), (1, True, False)  # D step, G step
    act = lambda c, h: (Op(f"D LeakyReLU(0.2) ({c}x{h}x{h})", "leaky_relu", (c, h, h), (("slope", 0.2),),  # noqa: E731
                           ((2, True, False), g1)),
                        Op(f"D dropout 0.3 ({c}x{h}x{h})", "dropout", (c, h, h), (("rate", 0.3),), ((2, True, False), g1)))
    return (Op("D conv 5x5 1→64, stride 2 (14x14 out)", "conv2d", (1, 28, 28),
               (("out", 64), ("k", 5), ("stride", 2), ("pad", 2)), ((2, False, True), g1), conv(14, 14, 1, 64, 5)),
            *act(64, 14),
            Op("D conv 5x5 64→128, stride 2 (7x7 out)", "conv2d", (64, 14, 14),
               (("out", 128), ("k", 5), ("stride", 2), ("pad", 2)), (d2, g1), conv(7, 7, 64, 128, 5)),
            *act(128, 7),
            Op("D dense 6,272→1", "dense", (6272,), (("out", 1),), (d2, g1), dense(6272, 1)),
            Op("BCE on logits", "bce_logits", (1,), uses=((2, True, False), g1)))


def ops(params=None) -> tuple:
    return _g_ops() + _d_ops()


def _batch(kit, x, y, seed, k):
    """The noise is drawn with numpy from the seed, the same in every framework."""
    np = kit.np
    z = np.random.RandomState([seed, 3, 1, k]).standard_normal((len(x), NOISE)).astype(np.float32)
    return {"x": x, "z": z}


def _ref():
    """Its float64 reference (numpy), loaded when the check asks: the record stays standard library only."""
    from . import reference
    return reference


def _initial(kit, seed):
    return {n: kit.R.as64(kit.init(n, seed)) for n in NETS}


def _flat(w0):
    return {f"{n}.{k}": v for n in NETS for k, v in w0[n].items()}


def _forward(kit, w0, batch):
    np = kit.np
    fake = _ref().generator_forward(w0["generator"], np.asarray(batch["z"], np.float64), train=True)[0]
    return {"fake": fake, "d_logits": _ref().discriminator_forward(w0["discriminator"], np.asarray(batch["x"], np.float64))[0]}


def _train(kit, w0, batches, lr, kink=None):
    return _ref().dcgan_train(w0["generator"], w0["discriminator"], batches, lr, kink=kink)


def _expected(w0):
    tables = {"generator": GENERATOR, "discriminator": DISCRIMINATOR}
    names = [f"{n}.{name}" for n in NETS for name, _, kind in tables[n] if kind not in ("stat0", "stat1")]
    return names, list(BN_RUNNING)


def _trained(wrows) -> list:
    """The distinct totals of images the runs trained (0: not recorded)."""
    return sorted({sum(e.get("samples") or 0 for e in w.result.epochs if isinstance(e, dict))
                   for w in wrows} - {0})


def _quick_total() -> int:
    q = PROFILES["quick"]
    return q["epochs"] * q["max_train_samples"]


def _samples(wrows, S):
    """How many images the runs trained, what it takes to see digits, and what
    the distance is: said plainly, so a grid of noise and a large distance
    after a short run are not a surprise. A time to a target distance needs
    distances during training: where the runs trained no more than the quick
    profile, there is no target at this size."""
    totals = _trained(wrows)
    ns = sorted({n for n in (w.result.metric("fid_samples") for w in wrows)
                 if isinstance(n, (int, float)) and not isinstance(n, bool)})  # a wrong type reads as n/a
    text = S("dcgan_fid", n=" / ".join(f"{int(n):,}" for n in ns) if ns else S("na"))
    small = bool(totals) and max(totals) <= _quick_total()
    text += " " + S("dcgan_no_target" if small else "dcgan_target_not_measured")
    if not totals:
        return S("dcgan_digits") + " " + text
    shown = " / ".join(f"{t:,}" for t in totals)
    return S("dcgan_trained", samples=shown) + " " + S("dcgan_digits") + " " + text


def _media(*args):
    """Its report media (media.py: the report's code, loaded when the report asks)."""
    from .media import grids
    return grids(*args)


def _finding(S, fmt, name, best, worst, show):
    """One seed: the lowest and the highest distance, never a ranking."""
    return S("finding_dcgan_fid", workload=name, run=best[0].label, fid=show(best[1]),
             run2=worst[0].label, fid2=show(worst[1]))


PROFILES = {"quick": {"epochs": 2, "batch_size": 32, "max_train_samples": 160}, "full": {"dataset": "full"}}

WORKLOAD = Workload(
    key="dcgan", order=2, display="DCGAN", params=COMMON_PARAMS + ("dataset",),
    param_counts={"generator": 2280896, "discriminator": 212865},
    # The Fréchet distance to real digits in a fixed classifier's features (fid.py in this folder): lower is better.
    # One distance an epoch: each draws 1,000 images through the generator (about 170 GFLOP, seconds on a
    # 2-core CPU), and with no target reachable at the CPU's sizes the curve needs no finer steps.
    # No target for the data set: only the last epoch's, which is also the final figure (issue #50:
    # at quick sizes every framework scores 704-706, and the draws cost 55 s of the first report).
    eval_per_epoch=1, eval_without_target="last",
    quality=Quality("fid", "col_fid", "axis_fid", False, False, format="fixed1"),
    data_name=datasets.mnist_name, train_samples=datasets.mnist_train, data_problem=datasets.no_problem,
    too_few=datasets.mnist_too_few,
    param_values={"dataset": tuple(datasets.MNIST_SIZES)},
    default_lr=1e-4, forward_outputs=("fake", "d_logits"), losses=("d_loss", "g_loss"),
    # the generator's gradient passes G's 4 product layers and D's 3; tconv 256→128 sums 256 x 25 (nb/amp.py)
    amp_depth=7, amp_reduction=6400,
    networks=(Network("generator", 1, GENERATOR, ("generator", "gen", "g", "netg")),
              Network("discriminator", 2, DISCRIMINATOR, ("discriminator", "disc", "d", "netd"))),
    sample=datasets.mnist_sample, batch=_batch, initial=_initial, forward=_forward, train=_train,
    expected=_expected, flat=_flat, kink_sensitive=True,
    passes=passes, ops=ops,
    profiles=PROFILES,
    spec_settings={"batch_size": 256, "lr": 1e-4, "optimizer": "Adam", "betas": [0.9, 0.999], "adam_eps": 1e-8,
                   "dtype": "float32", "epochs": 50, "leaky_relu": 0.2, "bn_momentum": 0.9, "bn_eps": 1e-5,
                   "dropout": 0.3, "noise_dim": NOISE},
    curves=(("gen_loss", "axis_loss"), ("disc_loss", "axis_loss")),
    # The losses stay beside the distance: they rank nothing, but show the training ran.
    figures=(Figure("col_gen_loss", "gen_loss", "sig4", None), Figure("col_disc_loss", "disc_loss", "sig4", None)),
    media=_media, intro_extra=_samples, quality_finding=_finding,
    nb_names={"fid": "fid"},  # nb.fid: the distance, loaded by the DCGAN notebooks only
)
