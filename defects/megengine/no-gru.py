"""MegEngine: no GRU layer (megengine.module has RNN and LSTM only).

MegEngine 1.13.0 offers no GRU: megengine.module has RNN, RNNCell, LSTM and
LSTMCell, megengine.functional has no recurrent function, and the fused RNN
operator (core.ops.builtin.RNN) has the nonlinearities identity, ReLU and
tanh, no GRU mode. frameval's LSTM notebook writes the GRU (-p lstm.cell=gru:
gates r, z, n, the reset after the hidden product) in MegEngine ops. Exit 1
while there is none, 0 once megengine.module.GRU exists and computes that
function (forward and weight gradient against the GRU written in MegEngine
ops on the same flat weight, laid out as M.LSTM's; 3, no verdict, where
the forward differs).
"""
import sys

import numpy as np
import megengine
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager
from megengine.core.ops import builtin

print("version:", megengine.__version__)
modules = sorted(n for n in dir(M) if "gru" in n.lower())
functions = sorted(n for n in dir(F) if "gru" in n.lower())
modes = sorted(n for n in dir(builtin.RNN.NonlineMode) if not n.startswith("_") and n != "dump")
print("megengine.module, names with GRU:", modules or "none")
print("megengine.functional, names with GRU:", functions or "none")
print("the RNN operator's modes:", ", ".join(modes))
if not hasattr(M, "GRU"):
    print("defect present (no megengine.module.GRU)")
    sys.exit(1)

# A GRU exists: does it compute the spec's function? (Its flat weight read as M.LSTM's:
# (3H, I + H + 2) = W_ih, W_hh, b_ih, b_hh raveled one after another, gates r, z, n.)
np.random.seed(0)
T, B, I, H = 5, 4, 1, 8
gru = M.GRU(I, H)
flat = gru._flatten_weights
x = megengine.tensor(np.random.randn(T, B, I).astype(np.float32))
target = megengine.tensor(np.random.randn(B, H).astype(np.float32))


def by_hand(w):
    flat1 = w.reshape(-1)
    w_ih = flat1[:3 * H * I].reshape(3 * H, I)
    w_hh = flat1[3 * H * I:3 * H * (I + H)].reshape(3 * H, H)
    b_ih, b_hh = flat1[3 * H * (I + H):3 * H * (I + H + 1)], flat1[3 * H * (I + H + 1):]
    h = F.zeros((B, H))
    for t in range(T):
        gx = F.matmul(x[t], F.transpose(w_ih, (1, 0))) + b_ih
        gh = F.matmul(h, F.transpose(w_hh, (1, 0))) + b_hh
        r, z = F.sigmoid(gx[:, :H] + gh[:, :H]), F.sigmoid(gx[:, H:2 * H] + gh[:, H:2 * H])
        n = F.tanh(gx[:, 2 * H:] + r * gh[:, 2 * H:])
        h = (1 - z) * n + z * h
    return h


out = {}
for name, fn in (("M.GRU", lambda: gru(x)[0][-1]), ("by hand", lambda: by_hand(flat))):
    gm = GradManager().attach([flat])
    with gm:
        h = fn()
        gm.backward(((h - target) ** 2).mean())
    out[name] = (h.numpy(), flat.grad.numpy().copy())
    flat.grad = None
fwd = float(np.abs(out["M.GRU"][0] - out["by hand"][0]).max())
ref, got = out["by hand"][1], out["M.GRU"][1]
err = float(np.abs(got - ref).max() / np.abs(ref).max())
print(f"forward difference {fwd:.2e}; weight gradient max relative difference {err:.2e}")
if fwd > 1e-4:  # another function, or its weights not laid out as M.LSTM's: a person must look
    print("no verdict: M.GRU's forward is not the GRU by hand on M.LSTM's weight layout")
    sys.exit(3)
present = err > 1e-3
print("defect", "present (M.GRU's weight gradient is wrong)" if present else "fixed", "(tolerance 1e-3)")
sys.exit(1 if present else 0)
