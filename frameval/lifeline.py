"""Children that die with their parent (#72): a runner killed by SIGKILL or the OOM
killer must leave no papermill child, no kernel and no stopped GEMM or layer
child behind, training or waiting beside the next command's runs. Linux's
parent-death signal (prctl PR_SET_PDEATHSIG) does it; elsewhere the kernel's own
parent poll (ipykernel's JPY_PARENT_PID) stays the only guard. Standard library only.
"""
from __future__ import annotations

import os
import signal
import sys
import threading

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _prctl():
    """libc's prctl, looked up before any fork (a child of a threaded process must not import), or None."""
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


PRCTL = _prctl() if sys.platform.startswith("linux") else None


def die_with_parent(parent: int) -> None:
    """In a child just started (a fork, or Popen's preexec_fn): SIGKILL it when its parent dies.
    A parent already gone by now: exit at once."""
    if PRCTL is None:
        return
    PRCTL(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # it died between the fork and the prctl
        os._exit(1)


def preexec():
    """Popen's preexec_fn for a child of this process, or None. The signal follows the thread that
    started the child: only the main thread's children get it (a worker thread's end would kill them)."""
    if PRCTL is None or threading.current_thread() is not threading.main_thread():
        return None
    me = os.getpid()
    return lambda: die_with_parent(me)
