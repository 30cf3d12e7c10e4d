"""The numerical check must catch wrong maths in a real notebook, in its real
kernel: each case rewrites one line of a framework's notebook (loss doubled,
Adam's betas swapped, no bias correction, BatchNorm momentum in the other
convention, a generator step through the stale discriminator), runs it through
papermill at tiny sizes, and asserts that the check fails and says where.
The unmutated notebooks pass the check in tests/test_pipeline.py."""
import json
import os

import papermill
import pytest

from conftest import REPO
from frameval import envs

NO_BIAS_CORRECTION = '''
class NoBiasCorrection(torch.optim.Adam):
    """Adam without the bias correction: the mutation under test."""

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state[p]
                if not st:
                    st["m"], st["v"] = torch.zeros_like(p), torch.zeros_like(p)
                st["m"].mul_(0.9).add_(p.grad, alpha=0.1)
                st["v"].mul_(0.999).addcmul_(p.grad, p.grad, value=0.001)
                p.addcdiv_(st["m"], st["v"].sqrt().add_(1e-8), value=-group["lr"])


'''

# framework -> case -> (workload, [(text in the model cell, replacement)], the check section that must fail)
MUTATIONS = {
    "torch": {
        "loss x2": ("lenet", [("loss = F.cross_entropy(logits, y)", "loss = 2 * F.cross_entropy(logits, y)")], "grads"),
        "betas swapped": ("lstm", [("betas=(0.9, 0.999)", "betas=(0.999, 0.9)")], "update"),
        "no bias correction": ("lenet", [("model = LeNet().to(dev)", NO_BIAS_CORRECTION + "model = LeNet().to(dev)"),
                                         ("opt = torch.optim.Adam(params, lr=lr, betas=(0.9, 0.999), eps=1e-8)",
                                          "opt = NoBiasCorrection(params, lr=lr, betas=(0.9, 0.999), eps=1e-8)")],
                               "update"),
        "BatchNorm momentum convention": ("dcgan", [("momentum=1 - BN_MOMENTUM", "momentum=BN_MOMENTUM")], "running"),
        "stale discriminator": ("dcgan", [
            ("    d_out = d_loss.detach()\n",
             "    d_out = d_loss.detach()\n    d_old = {k: v.detach().clone() for k, v in D.named_parameters()}\n"),
            ("g_loss = bce(D(fake), 1.0)", "g_loss = bce(torch.func.functional_call(D, d_old, (fake,)), 1.0)")],
            "grads"),
    },
    "tensorflow": {
        "loss x2": ("lenet", [("        loss = tf.reduce_mean(tf.nn.sparse", "        loss = 2 * tf.reduce_mean(tf.nn.sparse")],
                    "grads"),
        "betas swapped": ("lstm", [("beta_1=0.9, beta_2=0.999", "beta_1=0.999, beta_2=0.9")], "update"),
    },
}
TINY = {"lenet": dict(epochs=1, max_train_samples=64, batch_size=16),
        "dcgan": dict(epochs=1, max_train_samples=32, batch_size=16),
        "lstm": dict(epochs=1, max_train_samples=64, batch_size=16)}
CASES = [(fw, case) for fw, cases in MUTATIONS.items() for case in cases]


def mutate(fw, workload, edits, dest):
    nb = json.loads((REPO / "notebooks" / fw / f"{workload}.ipynb").read_text())
    cell = next(c for c in nb["cells"] if "model" in c.get("metadata", {}).get("tags", []))
    src = "".join(cell["source"])
    for old, new in edits:
        assert src.count(old) == 1, f"the mutation's target text is not (once) in {fw}/{workload}: {old!r}"
        src = src.replace(old, new)
    cell["source"] = src
    dest.write_text(json.dumps(nb))
    return dest


@pytest.fixture(scope="module")
def kernels():
    """The frameworks' environments and kernels, built or reused as run_all.py does."""
    for fw in MUTATIONS:
        envs.ensure_framework(fw)


@pytest.mark.parametrize("fw, case", CASES)
def test_check_catches_mutation(fw, case, tmp_path, kernels):
    workload, edits, section = MUTATIONS[fw][case]
    nb = mutate(fw, workload, edits, tmp_path / "mutated.ipynb")
    os.environ.update(envs.jupyter_env())
    # eager: the maths is the same in both modes, and eager skips the compile time
    papermill.execute_notebook(str(nb), str(tmp_path / "out.ipynb"), kernel_name=envs.kernel_name(fw),
                               parameters=dict(TINY[workload], mode="eager", out_dir=str(tmp_path / "run")),
                               progress_bar=False, cwd=str(tmp_path))
    r = json.loads((tmp_path / "run" / "result.json").read_text())
    chk = r["check"]
    assert chk["ok"] is False and chk[f"{section}_ok"] is False, (case, {k: chk.get(k) for k in chk if k.endswith("_ok")})
    assert r["status"] == "check_failed" and "numerical check failed" in r["error"]["message"]
