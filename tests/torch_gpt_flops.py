"""An independent count of the small GPT's training FLOPs per token, as
PyTorch's own counter (torch.utils.flop_counter.FlopCounterMode) sees one
real training step. Run by tests/test_gpt_reference.py with the torch
environment's python; prints one JSON object. Plain torch, no frameval code:
the spec's shape (docs/workloads.md, "GPT: adding integers"), attention
written out as two batched products over the full context, as the count has it.

    python tests/torch_gpt_flops.py [--batch 2] [--context 64]
"""
import argparse
import json

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode


class Block(nn.Module):
    def __init__(self, c, m, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.qkv, self.proj, self.fc, self.down = nn.Linear(c, 3 * c), nn.Linear(c, c), nn.Linear(c, m), nn.Linear(m, c)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for z in self.qkv(self.ln1(x)).split(c, dim=2))
        s = (q @ k.transpose(-2, -1)) / (c // self.heads) ** 0.5
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        x = x + self.proj((s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c))
        return x + self.down(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab=13, context=64, width=128, mlp=512, heads=4, blocks=2):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, mlp, heads) for _ in range(blocks))
        self.lnf = nn.LayerNorm(width)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe.weight[: idx.shape[1]]
        for block in self.blocks:
            x = block(x)
        return F.linear(self.lnf(x), self.wte.weight)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--context", type=int, default=64)
    a = ap.parse_args()
    torch.manual_seed(0)
    model = GPT(context=a.context)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    x, y = torch.randint(0, 13, (a.batch, a.context)), torch.randint(0, 13, (a.batch, a.context))
    with FlopCounterMode(display=False) as counter:
        opt.zero_grad()
        F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    total, tokens = counter.get_total_flops(), a.batch * a.context
    assert total % tokens == 0, (total, tokens)
    print(json.dumps({"torch": torch.__version__, "tokens": tokens,
                      "params": sum(p.numel() for p in model.parameters()), "per_token": total // tokens}))


if __name__ == "__main__":
    main()
