"""FLOPs per training sample equal a hand count of the spec's layer shapes
(docs/workloads.md), and the docs' table is the module's own."""
import pytest

from conftest import REPO
from frameval import flops

pytestmark = pytest.mark.fast


def test_lenet_equals_the_hand_count():
    # conv1 28*28 outputs x 6 maps x 25 taps; conv2 10*10 x 16 x (6*25); dense 400*120, 120*84, 84*10
    macs = 28 * 28 * 6 * 25 + 10 * 10 * 16 * 150 + 400 * 120 + 120 * 84 + 84 * 10
    assert macs == 416_520
    assert flops.training_flops("lenet") == 3 * 2 * macs == 2_499_120  # the "about 2.5 MFLOP"


def test_dcgan_equals_the_hand_count():
    g = 100 * 12544 + 49 * 256 * 128 * 25 + 49 * 128 * 64 * 25 + 196 * 64 * 25
    d = 196 * 64 * 25 + 49 * 64 * 128 * 25 + 6272
    assert (g, d) == (51_744_000, 10_355_072)
    # G forward once, D step 2 x (fwd + bwd), G step through D (fwd + bwd) and G's backward
    assert flops.training_flops("dcgan") == 2 * (g + 2 * 3 * d + 3 * d + 2 * g)


def test_lstm_equals_the_hand_count_and_follows_the_window():
    per_step = 4 * 32 * 1 + 4 * 32 * 32  # W_ih x + W_hh h
    assert flops.training_flops("lstm") == 3 * 2 * (20 * per_step + 32) == 507_072
    assert flops.training_flops("lstm", {"window": 10}) == 3 * 2 * (10 * per_step + 32)
    assert flops.training_flops("resnet") is None


def test_the_docs_table_is_the_modules():
    text = (REPO / "docs" / "workloads.md").read_text(encoding="utf-8")
    assert flops.markdown_table() in text
    for wl in ("lenet", "dcgan", "lstm"):
        assert f"{flops.training_flops(wl):,}" in text
