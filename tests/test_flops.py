"""The FLOPs a training sample requires (frameval/flops.py) equal a hand count,
layer by layer, of the spec's shapes (docs/workloads.md), and equal what
PyTorch's own counter sees in one real training step (tests/torch_flops.py);
the docs' table is the module's own."""
import json
import subprocess

import pytest

from conftest import REPO
from frameval import envs, flops

# Each product below is written out as (forward F, input gradient I, weight
# gradient W) in multiply-adds; each present part is the layer's forward
# multiply-adds, and a part is 0 where the step does not need it.


@pytest.mark.fast
def test_lenet_equals_the_hand_count():
    conv1 = 28 * 28 * 6 * 25  # 28x28 outputs x 6 maps x 5x5 taps on 1 channel
    conv2 = 10 * 10 * 16 * (6 * 25)
    fc1, fc2, fc3 = 400 * 120, 120 * 84, 84 * 10
    layers = [(conv1, 0, conv1),  # its input is the image: no input gradient
              (conv2, conv2, conv2), (fc1, fc1, fc1), (fc2, fc2, fc2), (fc3, fc3, fc3)]
    macs = sum(sum(layer) for layer in layers)
    assert macs == 1_131_960
    assert flops.training_flops("lenet") == 2 * macs == 2_263_920


@pytest.mark.fast
def test_dcgan_equals_the_hand_count():
    g_fc, g_t1, g_t2, g_t3 = 100 * 12544, 49 * 256 * 128 * 25, 49 * 128 * 64 * 25, 196 * 64 * 25
    d_c1, d_c2, d_fc = 196 * 1 * 64 * 25, 49 * 64 * 128 * 25, 6272 * 1
    g_pass = [(g_fc, 0, g_fc),  # noise in: no input gradient
              (g_t1, g_t1, g_t1), (g_t2, g_t2, g_t2), (g_t3, g_t3, g_t3)]
    d_step = [(d_c1, 0, d_c1),  # a real image, or the detached fake: no input gradient
              (d_c2, d_c2, d_c2), (d_fc, d_fc, d_fc)]
    g_step = [(d_c1, d_c1, 0),  # the gradient reaches the fake image; D's weights are not trained here
              (d_c2, d_c2, 0), (d_fc, d_fc, 0)]
    macs = sum(map(sum, g_pass)) + 2 * sum(map(sum, d_step)) + sum(map(sum, g_step))  # D(x) and D(fake) in the D step
    assert macs == 236_190_976
    assert flops.training_flops("dcgan") == 2 * macs == 472_381_952


def _lstm_hand_count(window):
    w_ih, w_hh, fc = 4 * 32 * 1, 4 * 32 * 32, 32 * 1  # per step: x -> 4 gates, h -> 4 gates
    layers = [(window * w_ih, 0, window * w_ih),  # x is data
              (w_hh, 0, w_hh),  # step 1 reads h0, the zero initial state: a constant
              ((window - 1) * w_hh, (window - 1) * w_hh, (window - 1) * w_hh),
              (fc, fc, fc)]
    return 2 * sum(map(sum, layers))


@pytest.mark.fast
def test_lstm_equals_the_hand_count_and_follows_the_window():
    assert flops.training_flops("lstm") == _lstm_hand_count(20) == 493_760
    assert flops.training_flops("lstm", {"window": 10}) == _lstm_hand_count(10) == 242_880
    assert flops.training_flops("resnet") is None


@pytest.mark.fast
def test_the_breakdown_adds_up_to_the_total():
    for wl in flops.WORKLOADS:
        rows = flops.breakdown(wl)
        assert sum(r.forward + r.input_grad + r.weight_grad for r in rows) == flops.training_flops(wl)


@pytest.mark.fast
def test_the_docs_table_is_the_modules():
    text = (REPO / "docs" / "workloads.md").read_text(encoding="utf-8")
    assert flops.markdown_table() in text
    for wl in flops.WORKLOADS:
        assert f"**{flops.training_flops(wl):,}**" in text


def test_torch_flop_counter_agrees():
    """PyTorch's FlopCounterMode over one real training step of each workload,
    in the torch environment (built here if missing): the same FLOPs per sample."""
    python = envs.ensure_framework("torch", echo=lambda m: None).python
    out = subprocess.run([str(python), str(REPO / "tests" / "torch_flops.py"), "--batch", "4", "--windows", "20,7"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    torch_count = json.loads(out.stdout.strip().splitlines()[-1])
    assert torch_count["lenet"] == flops.training_flops("lenet")
    assert torch_count["dcgan"] == flops.training_flops("dcgan")
    for window, counted in torch_count["lstm"].items():
        assert counted == flops.training_flops("lstm", {"window": int(window)}), window
