"""The behaviour cases: tensor indexing, assignment, broadcasting, type
promotion, integer semantics, reductions, NumPy interop and the defaults of
functions a model spec names (GELU: exact or tanh), each written once
against a small adapter (`xp`, frameval/envscripts/behaviour_adapters.py) so that the
same lines run on NumPy (the reference) and on every framework.

A case is `Case(id, group, fn, expect)`: `fn(xp)` returns what the case looks at
(a tensor, a dtype's name, a bool); `expect` is NumPy's answer written by hand,
which the suite checks the reference against (tests/test_behaviour.py), so a
NumPy upgrade that changes an answer is seen. `expect` is a (dtype, value)
pair for an array, a plain value otherwise, or `Raises("IndexError")` where
NumPy itself raises. `values_only`: compare values, not dtypes (gradients: the
reference differentiates in float64).

Cases use only the adapter's methods and Python's own operators and indexing
syntax, so "the same code" holds literally. numpy + standard library only:
this module runs inside every framework's environment (numpy 1.23 to 2.x).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GROUPS = ("indexing", "assignment", "promotion", "integers", "reductions", "interop", "defaults")


@dataclass(frozen=True)
class Raises:
    type: str


@dataclass(frozen=True)
class Case:
    id: str
    group: str
    fn: object
    expect: object
    values_only: bool = False


def v6(xp):  # 0..5, float32
    return xp.t(np.arange(6, dtype=np.float32))


def m23(xp):  # 2x3, float32
    return xp.t(np.arange(6, dtype=np.float32).reshape(2, 3))


def c234(xp):  # 2x3x4, float32
    return xp.t(np.arange(24, dtype=np.float32).reshape(2, 3, 4))


def ints(xp, values, dtype="int64"):
    return xp.t(np.array(values, dtype=dtype))


def _view_sees_setitem(xp):
    x = v6(xp)
    view = x[1:3]
    xp.write(x, 1, 100.0)
    return xp.np(view)


def _view_write_reaches_base(xp):
    x = v6(xp)
    view = x[1:3]
    xp.iadd(view, 10.0)
    return xp.np(x)


def _alias_sees_iadd(xp):
    x = v6(xp)
    alias = x
    xp.iadd(x, 1.0)
    return xp.np(alias)


def _shares_from_numpy(xp):
    a = np.arange(4, dtype=np.float32)
    t = xp.from_numpy(a)
    a[0] = 100.0
    return float(xp.np(t)[0]) == 100.0


def _shares_to_numpy(xp):
    t = xp.t(np.arange(4, dtype=np.float32))
    n = xp.to_numpy(t)
    try:
        n[0] = 100.0
    except ValueError as e:  # a read-only array: it cannot share writes
        return f"read-only ({e})".split(":")[0]
    return float(xp.np(t)[0]) == 100.0


def _grad_through_setitem(xp):
    def loss(t):
        y = t * 2.0
        y = xp.setitem(y, 0, 0.0)  # y[0] = 0: no gradient may reach t[0]
        return xp.sum(y * y)
    return xp.grad(loss, xp.t(np.array([1.0, 2.0, 3.0], dtype=np.float32)))


def _grad_through_gather(xp):
    def loss(t):
        return xp.sum(t[ints(xp, [0, 0, 2])] ** 2)  # index 0 twice: its gradient adds up
    return xp.grad(loss, xp.t(np.array([1.0, 2.0, 3.0], dtype=np.float32)))


F32, F64, I64, I32, B = "float32", "float64", "int64", "int32", "bool"

# GELU at points where the exact x*Phi(x) and the tanh approximation differ by 1e-4 to 5e-4,
# far above float32's error (about 1e-7 here): which formula a framework's default computes.
GELU_X = np.array([-3.0, -2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 3.0])
GELU_EXACT = "exact (erf)"
GELU_TANH = "tanh approximation"


def gelu_exact(x):
    from math import erf, sqrt
    return np.array([0.5 * v * (1.0 + erf(v / sqrt(2.0))) for v in np.asarray(x, np.float64)])


def gelu_tanh(x):
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def gelu_kind(values) -> str:
    """Which GELU the values are: the spec's exact one, the tanh approximation, or neither."""
    v = np.asarray(values, np.float64)
    for name, f in ((GELU_EXACT, gelu_exact), (GELU_TANH, gelu_tanh)):
        if v.shape == GELU_X.shape and np.abs(v - f(GELU_X)).max() < 1e-5:
            return name
    return "neither"


def _gelu(method):
    return lambda xp: gelu_kind(xp.np(getattr(xp, method)(xp.t(GELU_X.astype(np.float32)))))


CASES = [
    # ---- indexing: reading through an index
    Case("idx_negative_step", "indexing", lambda xp: v6(xp)[::-1], (F32, [5, 4, 3, 2, 1, 0])),
    Case("idx_negative_step_range", "indexing", lambda xp: v6(xp)[4:0:-2], (F32, [4, 2])),
    Case("idx_negative_int", "indexing", lambda xp: v6(xp)[-1], (F32, 5.0)),
    Case("idx_slice_past_end", "indexing", lambda xp: v6(xp)[4:100], (F32, [4, 5])),
    Case("idx_empty_slice", "indexing", lambda xp: v6(xp)[3:1], (F32, [])),
    Case("idx_step", "indexing", lambda xp: m23(xp)[:, ::2], (F32, [[0, 2], [3, 5]])),
    Case("idx_ellipsis", "indexing", lambda xp: c234(xp)[..., 1], (F32, [[1, 5, 9], [13, 17, 21]])),
    Case("idx_none", "indexing", lambda xp: xp.shape(c234(xp)[:, None, 1]), [2, 1, 4]),
    Case("idx_0d_result", "indexing", lambda xp: xp.shape(v6(xp)[2]), []),
    Case("idx_int_list", "indexing", lambda xp: v6(xp)[[3, 0, 3]], (F32, [3, 0, 3])),
    Case("idx_int_tensor", "indexing", lambda xp: v6(xp)[ints(xp, [3, 0, 3])], (F32, [3, 0, 3])),
    Case("idx_int_pairs", "indexing", lambda xp: m23(xp)[ints(xp, [0, 1]), ints(xp, [1, 2])], (F32, [1, 5])),
    Case("idx_bool_mask", "indexing", lambda xp: (lambda x: x[x > 2])(v6(xp)), (F32, [3, 4, 5])),
    Case("idx_bool_rows", "indexing", lambda xp: m23(xp)[xp.t(np.array([False, True]))], (F32, [[3, 4, 5]])),
    Case("idx_mixed_adjacent", "indexing", lambda xp: c234(xp)[1, ints(xp, [0, 2]), 1:3],
         (F32, [[13, 14], [21, 22]])),
    Case("idx_mixed_separated", "indexing", lambda xp: xp.shape(c234(xp)[ints(xp, [0, 1]), :, ints(xp, [0, 1])]),
         [2, 3]),
    Case("idx_out_of_range", "indexing", lambda xp: v6(xp)[10], Raises("IndexError")),
    # ---- assignment through an index
    Case("set_slice", "assignment", lambda xp: xp.np(xp.setitem(v6(xp), slice(1, 3), 0.0)), (F32, [0, 0, 0, 3, 4, 5])),
    Case("set_mask", "assignment", lambda xp: (lambda x: xp.np(xp.setitem(x, x > 2, -1.0)))(v6(xp)),
         (F32, [0, 1, 2, -1, -1, -1])),
    Case("set_int_array", "assignment", lambda xp: xp.np(xp.setitem(v6(xp), ints(xp, [0, 2]), 9.0)),
         (F32, [9, 1, 9, 3, 4, 5])),
    Case("set_duplicate_index", "assignment",
         lambda xp: xp.np(xp.setitem(v6(xp), ints(xp, [1, 1]), xp.t(np.array([5.0, 7.0], dtype=np.float32)))),
         (F32, [0, 7, 2, 3, 4, 5])),
    Case("set_row_broadcast", "assignment", lambda xp: xp.np(xp.setitem(m23(xp), 0, xp.t(np.array([7.0], np.float32)))),
         (F32, [[7, 7, 7], [3, 4, 5]])),
    Case("inplace_alias", "assignment", _alias_sees_iadd, (F32, [1, 2, 3, 4, 5, 6])),
    Case("view_sees_base_write", "assignment", _view_sees_setitem, (F32, [100, 2])),
    Case("view_write_reaches_base", "assignment", _view_write_reaches_base, (F32, [0, 11, 12, 3, 4, 5])),
    Case("grad_through_setitem", "assignment", _grad_through_setitem, (F64, [0, 16, 24]), values_only=True),
    Case("grad_duplicate_gather", "assignment", _grad_through_gather, (F64, [4, 0, 6]), values_only=True),
    # ---- broadcasting and type promotion
    Case("bcast_row", "promotion", lambda xp: m23(xp) + xp.t(np.array([10, 20, 30], np.float32)),
         (F32, [[10, 21, 32], [13, 24, 35]])),
    Case("bcast_outer", "promotion", lambda xp: xp.shape(xp.t(np.zeros((2, 1), np.float32)) + xp.t(np.zeros((1, 3), np.float32))),
         [2, 3]),
    Case("bcast_mismatch", "promotion", lambda xp: m23(xp) + xp.t(np.zeros(2, np.float32)), Raises("ValueError")),
    Case("promo_int32_float32", "promotion", lambda xp: xp.dtype(ints(xp, [1], I32) + xp.t(np.ones(1, np.float32))), F64),
    Case("promo_int64_float32", "promotion", lambda xp: xp.dtype(ints(xp, [1]) + xp.t(np.ones(1, np.float32))), F64),
    Case("promo_int32_int64", "promotion", lambda xp: xp.dtype(ints(xp, [1], I32) + ints(xp, [1])), I64),
    Case("promo_float16_float32", "promotion",
         lambda xp: xp.dtype(xp.t(np.ones(1, np.float16)) + xp.t(np.ones(1, np.float32))), F32),
    Case("promo_bool_add", "promotion", lambda xp: (lambda b: b + b)(xp.t(np.array([True, False]))), (B, [True, False])),
    Case("promo_bool_sum", "promotion", lambda xp: xp.dtype(xp.sum(xp.t(np.array([True, True, False])))), I64),
    Case("promo_int_times_pyfloat", "promotion", lambda xp: ints(xp, [1, 2], I32) * 1.5, (F64, [1.5, 3.0])),
    Case("promo_int_true_divide", "promotion", lambda xp: ints(xp, [1, 2]) / ints(xp, [2, 2]), (F64, [0.5, 1.0])),
    Case("default_float", "promotion", lambda xp: xp.dtype(xp.lit(1.5)), F64),
    Case("default_int", "promotion", lambda xp: xp.dtype(xp.lit([1, 2])), I64),
    # ---- integer semantics
    Case("int_floordiv_sign", "integers", lambda xp: ints(xp, [-7, 7]) // ints(xp, [2, -2]), (I64, [-4, -4])),
    Case("int_mod_sign", "integers", lambda xp: ints(xp, [-7, 7]) % ints(xp, [2, -2]), (I64, [1, -1])),
    # ---- reductions
    Case("red_keepdims", "reductions", lambda xp: xp.sum(m23(xp), axis=1, keepdims=True), (F32, [[3], [12]])),
    Case("red_argmax_ties", "reductions", lambda xp: xp.argmax(xp.t(np.array([1, 3, 3, 2], np.float32))), (I64, 1)),
    Case("red_sort_stable", "reductions", lambda xp: xp.argsort(xp.t(np.array([2, 1, 2, 1, 2] * 4, np.float32))),
         (I64, [1, 3, 6, 8, 11, 13, 16, 18, 0, 2, 4, 5, 7, 9, 10, 12, 14, 15, 17, 19])),
    Case("red_mean_int", "reductions", lambda xp: xp.mean(ints(xp, [1, 2])), (F64, 1.5)),
    # ---- NumPy interop
    Case("np_asarray", "interop", lambda xp: np.asarray(m23(xp)), (F32, [[0, 1, 2], [3, 4, 5]])),
    Case("shares_from_numpy", "interop", _shares_from_numpy, True),
    Case("shares_to_numpy", "interop", _shares_to_numpy, True),
    Case("ufunc_returns", "interop", lambda xp: type(np.exp(v6(xp))).__name__, "ndarray"),
    Case("ufunc_value", "interop", lambda xp: np.asarray(np.add(v6(xp), 1)), (F32, [1, 2, 3, 4, 5, 6])),
    # ---- defaults a model spec names: the reference is GELU's definition, x * Phi(x) (NumPy has none)
    Case("gelu_function_default", "defaults", _gelu("gelu"), GELU_EXACT),
    Case("gelu_layer_default", "defaults", _gelu("gelu_layer"), GELU_EXACT),
]

BY_ID = {c.id: c for c in CASES}
