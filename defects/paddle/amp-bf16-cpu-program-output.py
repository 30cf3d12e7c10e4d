"""Paddle: a converted forward whose output is bfloat16 (under auto_cast) crashes on the CPU (a measurement, no workaround: the GPT's bf16 runs are recorded as not offered).

Inside paddle.jit.to_static, paddle.amp.auto_cast(dtype="bfloat16", level="O1")
runs a matmul (on its white list) in bfloat16; when that product is the
converted forward's output, as the GPT's logits are (matmul with the tied
embedding), calling the program on the CPU dies in run_program
(CreateOutputTensorsFromValue: a segmentation fault; a plain function gives
"(InvalidArgument) dst_tensor `output_0` shall be defined") in Paddle 3.3.1.
The same forward with a float32 op last (a bias add, as LeNet's and the LSTM's)
runs. The crash takes the process down, so the call runs in a child process
here. Exit 1 while the defect is present, 0 once fixed.
"""
import os
import subprocess
import sys
import tempfile

os.environ["GLOG_v"] = "0"
os.environ["GLOG_minloglevel"] = "2"
import paddle

print("version:", paddle.__version__, "on", paddle.get_device())
CHILD = """
import paddle
class M(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.w = paddle.nn.Embedding(10, 8)
    def forward(self, idx):
        with paddle.amp.auto_cast(enable=True, dtype="bfloat16", level="O1"):
            return paddle.matmul(self.w(idx), self.w.weight, transpose_y=True)
y = paddle.jit.to_static(M(), full_graph=True, backend=None)(paddle.to_tensor([[1, 2, 3]]))
print("child ran:", y.dtype, tuple(y.shape))
"""
with tempfile.TemporaryDirectory() as tmp:  # a file: to_static's AST translator reads the forward's source
    script = os.path.join(tmp, "child.py")
    with open(script, "w") as f:
        f.write(CHILD)
    r = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=300, cwd=tmp)
said = [l.strip() for l in (r.stderr + r.stdout).splitlines() if l.strip() and ("Error" in l or "Signal" in l or "ran" in l)]
print("child exit status:", r.returncode, "(negative: killed by that signal number)")
for l in said[-3:]:
    print("child said:", l[:300])
present = not (r.returncode == 0 and "child ran: paddle.bfloat16" in r.stdout)
print("defect", "present (the converted forward's bfloat16 output fails)" if present else "fixed")
sys.exit(1 if present else 0)
