"""Ten common mistakes, made the same way in every framework, and what each
framework says about them: the exception's type, its message, and where its
traceback ends (at the user's line, here, or deep inside the framework).

`MISTAKES` is the framework-neutral catalogue: what the mistake is and what a
good message would name (`sizes`: regular expressions for the sizes or types
involved, each of which must appear; `op`: words naming the operation). The
scores are the runner's (frameval/mistakes.py). Each framework's spelling of
the mistakes is its folder's part (frameval/frameworks/<fw>/mistakes.py:
`spellings()`), one line each where it can be: the line that raises there is
"the user's line". numpy + standard library + the framework.
"""
from __future__ import annotations

import os
import sys
import traceback
from dataclasses import dataclass

MESSAGE_CHARS = 2000


@dataclass(frozen=True)
class Mistake:
    id: str
    sizes: tuple   # regexes: every one must appear in the message; () where no size is involved
    op: tuple      # words naming the operation (any one, case-insensitive)


def _n(n: int) -> str:
    """The number n standing alone: "3x4" names 4, "14" does not."""
    return rf"(?<!\d){n}(?!\d)"


MISTAKES = [
    Mistake("matmul_shapes", (_n(4), _n(5)), ("matmul", "mm", "dot", "gemm", "matrix", "multipl")),
    Mistake("conv_channels", (_n(4), _n(6)), ("conv",)),
    Mistake("reshape_size", (_n(6), _n(8) + r"|\[4, ?2\]|\(4, ?2\)|4 ?x ?2|\{4, ?2\}"), ("reshape", "view")),
    Mistake("concat_shapes", (_n(3), _n(4)), ("concat", "cat")),
    Mistake("index_out_of_range", (_n(7), _n(5)), ("index",)),
    Mistake("int_into_float_layer", (r"int|long", r"float"), ("linear", "dense", "matmul", "mm", "addmm", "layer")),
    Mistake("backward_twice", (), ("backward", "gradient", "grad")),
    Mistake("non_scalar_loss", (_n(3),), ("backward", "grad")),
    Mistake("negative_learning_rate", (r"-0\.1",), ("learning rate", "learning_rate", "lr")),
    Mistake("device_mismatch", (), ("device", "cuda", "gpu", "place")),
]

BY_ID = {m.id: m for m in MISTAKES}
ONE_DEVICE = "needs two devices; these environments run on the CPU only"


def _where(tb, spelled_in: str) -> dict:
    """Where the traceback ends, and its last frame in the file that spells the
    mistakes (the user's line)."""
    frames = traceback.extract_tb(tb)
    here = os.path.abspath(spelled_in)
    mine = [i for i, f in enumerate(frames) if os.path.abspath(f.filename) == here]
    last = frames[-1] if frames else None
    user = frames[mine[-1]] if mine else None
    return {"user_line": user.lineno if user else None,
            "last_frame": f"{_short(last.filename)}:{last.lineno}" if last else None,
            "frames_below_user": len(frames) - 1 - mine[-1] if mine else None,
            "last_is_user": bool(mine) and mine[-1] == len(frames) - 1}


def _short(path: str) -> str:
    """A framework file's path from its package on (site-packages/ cut off)."""
    parts = path.replace("\\", "/").split("/site-packages/")
    return parts[-1] if len(parts) > 1 else os.path.basename(path)


def _raised(e: BaseException, where: dict) -> dict:
    msg = str(e)
    return dict({"raised": True, "type": type(e).__name__, "message": msg[:MESSAGE_CHARS],
                 "lines": len(msg.splitlines()) or 1, "chars": len(msg)}, **where)


def record(fn, sync=lambda: None, spelled_in: str = __file__) -> dict:
    """What one mistake did: raised (type, message, where), raised only at the
    next synchronisation ("late": no line of the user's is named), or ran
    silently (what it returned). `spelled_in`: the file of the user's lines."""
    if isinstance(fn, str):
        return {"na": fn}
    try:
        got = fn()
    except Exception as e:  # noqa: BLE001 - the error is the finding
        return _raised(e, _where(sys.exc_info()[2], spelled_in))
    try:
        sync()
    except Exception as e:  # noqa: BLE001 - an asynchronous framework's error, surfacing late
        return _raised(e, {"user_line": None, "last_frame": None, "frames_below_user": None,
                           "last_is_user": False, "late": True})
    return {"raised": False, "returned": f"{type(got).__name__}"}


def run_all(framework: str, sync=lambda: None) -> dict:
    from frameval import frameworks
    spelled = frameworks.part(framework, "mistakes")
    spell = spelled.spellings()
    return {m.id: record(spell.get(m.id, ONE_DEVICE), sync, spelled.__file__) for m in MISTAKES}
