"""MegEngine: its record (standard library only; frameval/frameworks/__init__.py)."""
from ..record import Framework

FRAMEWORK = Framework(
    "megengine", "MegEngine", order=5, aliases=("mge",), packages=("megengine",), notes="megengine.md",
    # float32 as the framework computes by default, or strictly (nb/precision.py); both modes (#68)
    offers={"precision": {"cpu": ("default", "highest", "bf16"), "gpu": ("default", "highest")},
            "mode": {"cpu": ("graph", "eager"), "gpu": ("graph", "eager")}},
    colour="#9467bd",
    cpu_kernel_env={"MGE_DEFAULT_DEVICE": "cpu0"},  # CPU kernel only; the GPU one picks gpu0
    workarounds={
        "lstm-weight-grad": {
            "pattern": r"class LSTM\(M\.Module\)",
            "summary": "megengine.module.LSTM computes wrong weight gradients (3.5x too large; all zero under jit.trace); the LSTM is written in MegEngine ops (matmul, split, sigmoid/tanh per step)",
            "versions": "1.13.0",
            "found_by": "training went to NaN; the check and a comparison with PyTorch's gradients",
            "cost": "an op-by-op recurrence instead of the fused kernel",
            "substitute": "LSTM in MegEngine ops",
        },
        "max-pool-tied-grad": {
            "pattern": r"F\.indexing_one_hot\(",
            "summary": "F.max_pool2d's backward gives the gradient to every tied maximum; pooling is argmax + indexing_one_hot (the first maximum, as PyTorch)",
            "versions": "1.13.0",
            "found_by": "the check (conv1.weight's first update 73% off the reference)",
            "cost": "pooling forward + backward about 1.2x (traced) to 2x (eager) the built-in op's time (rough, loaded machine)",
            "substitute": "max pooling by argmax + indexing_one_hot",
        },
        "batchnorm-backward-precision": {
            "pattern": r"fw\.BatchNorm2d\(",
            "summary": "M.BatchNorm2d's fused backward is imprecise (the generator's gradients 1.6e-3 off at batch 64, tolerance 1e-3); BatchNorm written in MegEngine ops (fw.BatchNorm2d)",
            "versions": "1.13.0",
            "found_by": "the check at batch 64",
            "cost": "an op-by-op batch norm instead of the fused kernel",
            "substitute": "BatchNorm2d in MegEngine ops",
        },
        "mha-is-causal-cpu": {
            "pattern": r"fw\.causal_mask\(",
            "summary": "F.nn.multi_head_attention(..., is_causal=True) fails on the CPU (a dtype assertion in an elementwise op); the same fused op runs with the causal mask passed as attn_mask (fw.causal_mask)",
            "versions": "1.13.0",
            "found_by": "the first call of the notebook's attention on the CPU",
            "cost": "none measured: the same fused op, a (t, t) mask tensor more",
        },
        "no-gru": {
            "pattern": r"class GRU\(M\.Module\)",
            "summary": "MegEngine has no GRU layer (megengine.module has RNN and LSTM only, the RNN operator's modes are identity, ReLU and tanh); the GRU (-p lstm.cell=gru) is written in MegEngine ops (matmul, split, sigmoid/tanh per step)",
            "versions": "1.13.0",
            "found_by": "the GRU in the LSTM's place (-p lstm.cell=gru, #70): megengine.module has no GRU",
            "cost": "an op-by-op recurrence; there is no fused GRU kernel to set it against",
            "substitute": "GRU in MegEngine ops",
        },
        "elemwise-broadcast-strided": {
            "pattern": r"F\.zeros\(\(x\.shape\[0\], self\.hidden_size\)\)",
            "summary": "an elementwise op on a column slice (rows strided) and a vector broadcast over its rows reads the slice as if its rows were packed (wrong from the second row on; eager and jit.trace); the GRU starts from a zero state tensor, so its first step adds two (N, h) slices of one shape instead of bias_hh's slices broadcast",
            "versions": "1.13.0",
            "found_by": "the GRU's check (forward 8e-5 off the reference, its first step's gates 0.25 off)",
            "cost": "one product of the zero state with W_hh more per sequence (the first of 20 steps)",
        },
        "lite-mha-static-memory": {
            "pattern": r"\"force_dynamic_alloc\": True",
            "summary": "MegEngine Lite runs a dumped graph with two fused attention ops (F.nn.multi_head_attention, the GPT's two blocks) right once: from its second forward on, with Lite's default static memory plan, the output is wrong (5.8e-2 relative in the reproduction; the GPT's logits 1e-2 to 5e-2 off) and changes between networks; fw.export writes lite_options.json with force_dynamic_alloc = True beside such a graph and fw.load applies it: the same graph and ops, every forward right",
            "versions": "1.13.0",
            "found_by": "the serving measurement (#70): the GPT's reloaded logits off by 1e-2 and different on every run, the first batch alone right",
            "cost": "not measurable on a loaded 2-core machine (the GPT's batch-1 and batch-250 medians within its run-to-run noise)",
        },
    })
