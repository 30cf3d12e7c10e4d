"""MXNet: after contrib.amp.init, a symbol with no inputs (mx.sym.zeros) cannot be built, so a hybridized gluon.rnn layer cannot be traced (a measurement, no workaround).

amp.init(target_dtype="bfloat16") wraps the symbol functions on its lists
(`_zeros` is on the FP32 list): the wrapper casts the new symbol's inputs,
`sym.get_children()`, which is None for an operator without inputs, and
raises "TypeError: 'NoneType' object is not iterable" (mxnet 1.9.1,
contrib/amp/amp.py _symbol_wrapper). gluon.rnn.LSTM builds its zero initial
state with symbol.zeros when hybridized without states, so frameval's LSTM
cannot trace its graph under the AMP: its graph-mode bf16 run fails with this
error (eager mode, whose nd.zeros wrapper takes no such path, trains). Exit 1
while the defect is present, 0 once fixed.
"""
import sys

import mxnet as mx
from mxnet.contrib import amp

print("version:", mx.__version__)
amp.init(target_dtype="bfloat16")
try:
    z = mx.sym.zeros(shape=(2, 3))
    layer = mx.gluon.rnn.LSTM(4, layout="NTC", input_size=1)
    layer.initialize()
    layer.hybridize()
    out = layer(mx.nd.ones((2, 5, 1)))
    out.wait_to_read()
except TypeError as e:
    print(f"mx.sym.zeros / a hybridized gluon.rnn.LSTM under amp.init raised {type(e).__name__}: {e}")
    print("defect present")
    sys.exit(1)
print("a zero-input symbol and a hybridized LSTM built under amp.init:", z.name, out.shape, out.dtype)
print("defect fixed")
sys.exit(0)
