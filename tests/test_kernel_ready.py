"""frameval/kernel_ready.py: a kernel's start and end without jupyter_client's
fixed waits, on real kernels (the runner environment's python3 kernel)."""
import asyncio
import subprocess

from jupyter_client.manager import AsyncKernelManager

from frameval import kernel_ready



def _start_run_stop(code: str):
    """A real kernel started and waited for by the installed methods, `code`
    run in it, then killed: -> (its stdout, whether its process was gone
    when shutdown_kernel returned, the kernel's pid)."""
    async def go():
        km = AsyncKernelManager(kernel_name="python3")
        await km.start_kernel()
        kc = km.client()
        kc.start_channels()
        try:
            await kc.wait_for_ready(timeout=60)
            out = []
            reply = await kc.execute_interactive(code, timeout=60,
                                                 output_hook=lambda m: out.append(m["content"].get("text", "")))
            assert reply["content"]["status"] == "ok", reply["content"]
        finally:
            kc.stop_channels()
            pid = km.provisioner.pid
            await km.shutdown_kernel(now=True)
        gone = subprocess.run(["ps", "-p", str(pid)], capture_output=True).returncode != 0
        return "".join(out), gone, pid
    return asyncio.run(go())


def test_a_started_kernel_is_ready_and_its_first_output_arrives(monkeypatch):
    """For real, five kernels in a row: the wait returns once the kernel has
    answered and IOPub is connected, so the first cell's output is never lost
    (one start in six met ZeroMQ's late subscription here), and the kernel's
    process is gone when the kill returns, with the poll at 10 ms."""
    from jupyter_client.asynchronous.client import AsyncKernelClient
    from jupyter_client.manager import KernelManager
    monkeypatch.setattr(AsyncKernelClient, "wait_for_ready", AsyncKernelClient.wait_for_ready)
    monkeypatch.setattr(KernelManager, "_async_wait", KernelManager._async_wait)
    kernel_ready.install()
    assert AsyncKernelClient.wait_for_ready is kernel_ready.wait_for_ready
    for i in range(5):
        out, gone, pid = _start_run_stop(f"print('first output {i}')")
        assert out == f"first output {i}\n", (i, out)
        assert gone, pid


def test_the_iopub_read_ends_at_the_idle_status_or_after_the_welcome():
    """The reading of IOPub after the kernel_info reply, on a scripted channel:
    it stops at the idle status of the request; after the kernel's welcome it
    waits only AFTER_WELCOME_S for more; with nothing at all it says so (the
    request is sent again)."""
    from queue import Empty

    class Channel:
        def __init__(self, msgs):
            self.msgs, self.timeouts = list(msgs), []

        async def get_msg(self, timeout=None):
            self.timeouts.append(timeout)
            if not self.msgs:
                raise Empty
            return self.msgs.pop(0)

    def msg(kind, state=None, parent=None):
        return {"msg_type": kind, "content": {"execution_state": state} if state else {},
                "parent_header": {"msg_id": parent} if parent else {}}

    class Client:
        def __init__(self, msgs):
            self.iopub_channel = Channel(msgs)

    idle = [msg("iopub_welcome"), msg("status", "busy", "k1"), msg("status", "idle", "k1"), msg("stream")]
    c = Client(idle)
    assert asyncio.run(kernel_ready._iopub_until_idle(c, "k1")) is True
    assert len(c.iopub_channel.msgs) == 1  # the message after the idle status is left for nbclient to ignore
    c = Client([msg("iopub_welcome")])  # busy and idle were published before the subscription
    assert asyncio.run(kernel_ready._iopub_until_idle(c, "k1")) is True
    assert c.iopub_channel.timeouts == [kernel_ready.IOPUB_WAIT_S, kernel_ready.AFTER_WELCOME_S]
    c = Client([])
    assert asyncio.run(kernel_ready._iopub_until_idle(c, "k1")) is False
    assert c.iopub_channel.timeouts == [kernel_ready.IOPUB_WAIT_S]
    c = Client([msg("status", "idle", "other"), msg("status", "idle", "k1")])  # an older kernel: no welcome
    assert asyncio.run(kernel_ready._iopub_until_idle(c, "k1")) is True
