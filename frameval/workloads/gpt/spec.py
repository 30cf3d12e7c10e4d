"""The small GPT's shape, its weight table, parameter count and FLOPs
(docs/workloads.md, "GPT: adding integers"). Standard library only, like the
other workload records, so the record (a later `__init__.py` here), the runner
and every notebook kernel can read it; the numpy maths is in `reference.py`,
the data in `problems.py`.

Canonical layouts, as the other workloads': dense (out, in). The attention's
input projection is one (3C, C) matrix, rows in the order query, key, value,
and each of those C rows split into `heads` consecutive blocks of C/heads
(PyTorch's nn.MultiheadAttention `in_proj_weight` and GPT-2's `c_attn` both
read it so).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

VOCAB = "0123456789+=;"      # token id = index: the ten digits, then '+', '=', ';'
STREAM = 4                   # the weights' random stream: RandomState([seed, 100 + STREAM])
INIT_STD = 0.02


@dataclass(frozen=True)
class Config:
    blocks: int = 2
    heads: int = 4
    width: int = 128
    mlp: int = 512
    context: int = 64
    vocab: int = len(VOCAB)
    ln_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.width // self.heads


SPEC = Config()

# AdamW as specified: decoupled decay on the weight matrices of the blocks and
# on the positional embedding (a matrix); none on biases, LayerNorm parameters
# or the tied token embedding.
ADAMW = {"lr": 1e-3, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1, "clip_norm": 1.0}
BATCH_SIZE = 32


def weight_table(cfg: Config = SPEC) -> tuple:
    """[(name, shape, kind)] in the order the weights are drawn. Kinds:
    "normal" (std 0.02), "residual" (std 0.02/sqrt(2 x blocks): the two
    projections that add into the residual stream), "zeros", "ones"."""
    c, m = cfg.width, cfg.mlp
    rows = [("wte", (cfg.vocab, c), "normal"), ("wpe", (cfg.context, c), "normal")]
    for i in range(cfg.blocks):
        b = f"h{i}."
        rows += [(b + "ln1.weight", (c,), "ones"), (b + "ln1.bias", (c,), "zeros"),
                 (b + "attn.qkv.weight", (3 * c, c), "normal"), (b + "attn.qkv.bias", (3 * c,), "zeros"),
                 (b + "attn.proj.weight", (c, c), "residual"), (b + "attn.proj.bias", (c,), "zeros"),
                 (b + "ln2.weight", (c,), "ones"), (b + "ln2.bias", (c,), "zeros"),
                 (b + "mlp.fc.weight", (m, c), "normal"), (b + "mlp.fc.bias", (m,), "zeros"),
                 (b + "mlp.proj.weight", (c, m), "residual"), (b + "mlp.proj.bias", (c,), "zeros")]
    rows += [("lnf.weight", (c,), "ones"), ("lnf.bias", (c,), "zeros")]
    return tuple(rows)


def init_std(kind: str, cfg: Config = SPEC) -> float:
    return INIT_STD / math.sqrt(2 * cfg.blocks) if kind == "residual" else INIT_STD


def decayed(name: str) -> bool:
    """Whether AdamW's decoupled weight decay applies to the weight `name`."""
    return name == "wpe" or name.endswith((".qkv.weight", ".proj.weight", ".fc.weight"))


def param_count(cfg: Config = SPEC) -> int:
    """Trainable parameters; the output layer is the token embedding (tied), so
    it adds none. The spec's model: 406,656."""
    return sum(math.prod(shape) for _, shape, _ in weight_table(cfg))


def layer_macs(cfg: Config = SPEC) -> tuple:
    """Per token, one forward pass: [(name, multiply-adds, input-gradient
    factor, weight-gradient factor)]. A linear layer's input and weight
    gradients each cost its forward products again. The attention's two
    products (Q K^T and the weighted sum of V) have no weights, but both of
    their operands want gradients: twice the forward, as input gradient. They
    are counted over the full context (`context` keys per query), as a causal
    kernel that skips the masked half still is by PyTorch's counter and by
    most kernels' own accounting. The embedding lookups are no products."""
    c, m, t = cfg.width, cfg.mlp, cfg.context
    per_block = (("attention q, k, v projection", 3 * c * c, 1, 1),
                 ("attention scores Q K^T", t * c, 2, 0),
                 ("attention weighted sum of V", t * c, 2, 0),
                 ("attention output projection", c * c, 1, 1),
                 ("MLP up", c * m, 1, 1), ("MLP down", m * c, 1, 1))
    rows = []
    for i in range(cfg.blocks):
        rows += [(f"block {i + 1}: {name}", macs, gi, gw) for name, macs, gi, gw in per_block]
    return tuple(rows) + (("output (tied embedding)", cfg.vocab * c, 1, 1),)


def training_flops_per_token(cfg: Config = SPEC) -> int:
    """FLOPs (2 per multiply-add) of one training step, per token: forward,
    input gradients and weight gradients of every product. The spec's model:
    2,565,888 a token, 164,216,832 a 64-token window."""
    return 2 * sum(macs * (1 + gi + gw) for _, macs, gi, gw in layer_macs(cfg))
