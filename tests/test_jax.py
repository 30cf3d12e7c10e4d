"""JAX (Flax + optax) notebooks in the real frameval-jax kernel, tiny sizes, both modes:
spec parameter counts, finite losses, the numerical check passes on the training step,
and graph mode records the whole step under jax.jit."""
import math

import pytest

SPEC = {"lenet": {"lenet": 61706}, "dcgan": {"generator": 2280896, "discriminator": 212865}, "lstm": {"lstm": 4385}}
LOSS_KEYS = {"lenet": ("train_loss", "test_loss"), "dcgan": ("gen_loss", "disc_loss"), "lstm": ("train_mse", "val_mse")}


@pytest.fixture(scope="module")
def jax_runs(matrix):
    """JAX is in the default matrix: its six runs come from the session's real
    pipeline run (conftest.matrix, the same tiny sizes), not a second one."""
    return {(wl, mode): r for (fw, wl, mode), r in matrix["results"].items() if fw == "jax"}


@pytest.mark.parametrize("mode", ["graph", "eager"])
@pytest.mark.parametrize("wl", ["lenet", "dcgan", "lstm"])
def test_jax_notebook(jax_runs, wl, mode):
    r = jax_runs.get((wl, mode))
    assert r is not None, f"no result for jax/{wl}-{mode}"
    assert r["status"] == "ok", (r["status"], r.get("error"))
    assert r["framework"] == "jax" and r["framework_version"]
    assert r["param_counts"] == SPEC[wl]
    assert len(r["epochs"]) == 2
    for e in r["epochs"]:
        for k in LOSS_KEYS[wl]:
            assert isinstance(e.get(k), float) and math.isfinite(e[k]), (k, e.get(k))
    assert r["check"]["ok"] is True, {k: r["check"].get(k) for k in ("problems", "diagnosis", "max_grad_err",
                                                                     "max_update_err", "max_loss_err")}
    assert r["settings"]["adam_eps"] == pytest.approx(1e-8) and r["settings_source"]["adam_eps"] == "read"
    scope = r["graph_scope"]
    if mode == "graph":
        assert scope["forward"] and scope["backward"] and scope["update"]
        assert scope["graphs"] == 1 and scope["graph_breaks"] == 0
        assert r["compiled"] is True
    else:
        assert not (scope["forward"] or scope["backward"] or scope["update"])
    if wl == "dcgan":
        assert r["settings"]["bn_momentum"] == pytest.approx(0.9) and r["settings"]["bn_eps"] == pytest.approx(1e-5)
