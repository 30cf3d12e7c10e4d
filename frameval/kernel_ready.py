"""Waiting for a kernel to start and to end, less jupyter_client's fixed waits (issue #50).

jupyter_client's `wait_for_ready` (8.x, client.py) ends by reading the kernel's
IOPub channel until 0.2 s pass with no message: 0.2 s of every run's kernel
start (22 in a first report), spent after the kernel had answered. Its other
purpose stays: the IOPub connection is proved before the first cell runs (a
message must arrive there after the kernel_info reply, or the request is sent
again). The reading stops at the kernel's "idle" status for that request, the
last message of its start; nbclient ignores any IOPub message that is not
from its own execute request, so nothing left unread reaches a notebook.

Its kill then polls the process every 0.1 s until it is gone, which took a
first poll, 0.1 s, after every run's last cell: a killed kernel is gone in a
few milliseconds, so the poll here is every 10 ms (`wait_for_exit`).

Used by the forked papermill child only (frameval/execute.py), where it
replaces the methods on jupyter_client's classes for that process alone;
FRAMEVAL_KERNEL_IDLE_WAIT=1 leaves jupyter_client's own (an A/B: with them a
trivial notebook took 0.77 s on torch's kernel, without them 0.47 s).
"""
from __future__ import annotations

import asyncio
import time
from queue import Empty

# jupyter_client's own waits: a kernel_info reply, then one IOPub message
REPLY_WAIT_S = 1.0
IOPUB_WAIT_S = 0.2
AFTER_WELCOME_S = 0.01
EXIT_POLL_S = 0.01


async def wait_for_ready(self, timeout: float | None = None) -> None:
    """AsyncKernelClient.wait_for_ready, ending at the kernel's idle status."""
    deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
    while True:
        self.kernel_info()
        try:
            reply = await self.shell_channel.get_msg(timeout=REPLY_WAIT_S)
        except Empty:
            reply = None
        if reply is not None and reply["msg_type"] == "kernel_info_reply":
            if await _iopub_until_idle(self, reply["parent_header"].get("msg_id")):
                self._handle_kernel_info_reply(reply)
                return
        if not await self._async_is_alive():
            raise RuntimeError("Kernel died before replying to kernel_info")
        if time.monotonic() > deadline:
            raise RuntimeError("Kernel didn't respond in %d seconds" % timeout)


async def _iopub_until_idle(self, request_id) -> bool:
    """Read IOPub up to the idle status of `request_id`; -> whether anything
    arrived there at all (no message: not connected yet, ask again). Once the
    kernel's welcome has come (ipykernel 7 sends it when the subscription is
    made: the channel is connected), only what is already there is read: a
    status published before the subscription never comes (ZeroMQ drops it),
    and waiting 0.2 s for it took one kernel start in six."""
    seen = welcomed = False
    while True:
        try:
            msg = await self.iopub_channel.get_msg(timeout=AFTER_WELCOME_S if welcomed else IOPUB_WAIT_S)
        except Empty:
            return seen
        seen = True
        welcomed = welcomed or msg["msg_type"] == "iopub_welcome"
        if (msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle"
                and msg["parent_header"].get("msg_id") == request_id):
            return True


async def wait_for_exit(self, pollinterval: float = 0.1) -> None:
    """KernelManager._async_wait, polling every EXIT_POLL_S at most."""
    while await self._async_is_alive():
        await asyncio.sleep(min(pollinterval, EXIT_POLL_S))


def install() -> None:
    """Put both on jupyter_client's classes (in this process)."""
    from jupyter_client.asynchronous.client import AsyncKernelClient
    from jupyter_client.manager import KernelManager
    AsyncKernelClient.wait_for_ready = wait_for_ready
    KernelManager._async_wait = wait_for_exit
