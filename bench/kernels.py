"""The sub-agent kernels (KernelInterpreter on a KernelPool), when this tree has them.

Benchmarks that need kernels ask `available()` first: None when they can run,
else the reason, which the report prints as "not available in this run".

A pool refills in the background as kernels are taken, and starting a kernel
costs about a CPU-second: on two cores that would land in whatever is being
timed next. So the benchmarks fill a pool, then `pause` it (no refill) while
they measure, and wait for it to be full again between measurements.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

from . import peers
from .trajectory import Action

_pool: Any = None


def available() -> str | None:
    for module in ("deepagent_magics.interpreters.kernel", "deepagent_magics.interpreters.pool"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            return f"{module} is not in this tree ({exc})"
    return None


def pool(size: int = 2, workspace: str | None = None):
    """The benchmarks' own pool, full and paused (refill with `refill`), with kernels for ``workspace``
    (a sandboxed kernel can write only the workspace it was started for)."""
    global _pool
    from deepagent_magics.interpreters.pool import KernelPool

    if _pool is None or _pool.closed:
        _pool = KernelPool(size=size)
    if workspace:
        _pool.retarget(workspace)
    refill(size)
    return _pool


def refill(size: int | None = None, timeout: float = 120.0) -> None:
    """Fill the pool to ``size`` kernels, wait until they are ready, then stop it refilling."""
    assert _pool is not None
    size = size or max(_pool.size, _pool.ready, 1)
    _pool.size = size
    if not _pool.wait_ready(size, timeout=timeout):
        raise RuntimeError(f"the kernel pool did not fill ({_pool.last_error})")
    pause()


def pause() -> None:
    """Keep the ready kernels but start no more (the filler waits while ready + starting >= size)."""
    if _pool is not None:
        with _pool._cond:
            _pool.size = 0


def close() -> None:
    """Shut down every kernel the benchmarks started."""
    global _pool
    if _pool is not None:
        _pool.stop()
        _pool = None


def factory():
    from deepagent_magics.interpreters.kernel import KernelInterpreterFactory

    return KernelInterpreterFactory(None, pool())


def rlm_kernel(script: list[Action]) -> "peers.Play":
    """dspy.RLM on a KernelInterpreter with a kernel from the (full, paused) pool."""
    made = factory()
    try:
        return peers.plain_rlm("rlm_kernel", script, made)
    finally:
        refill()


def bare_interpreter(workspace: str):
    from deepagent_magics.interpreters.kernel import KernelInterpreter

    pool(1)
    return _Refilling(KernelInterpreter(pool=_pool, tools={"write_file": peers._plain_write_file(workspace)},
                                        output_fields=[{"name": "result"}]))


class _Refilling:
    """A KernelInterpreter whose shutdown waits for the pool to be full again (outside the timed part)."""

    def __init__(self, interpreter: Any):
        self.interpreter = interpreter

    def start(self) -> None:
        self.interpreter.start()

    def execute(self, code: str, variables: dict | None = None) -> Any:
        return self.interpreter.execute(code, variables)

    def shutdown(self) -> None:
        self.interpreter.shutdown()
        refill(1)


def raw_roundtrip(samples: int = 50) -> float:
    """Median seconds of a bare jupyter_client ``execute("pass")`` round trip (request to idle) on a pooled kernel."""
    import statistics
    import time

    kernel = pool(1).take()
    try:
        client = kernel.client
        times = []
        for _ in range(samples + 5):
            started = time.perf_counter()
            msg_id = client.execute("pass", store_history=False)
            while True:
                msg = client.iopub_channel.get_msg(timeout=10)
                if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                        and msg["content"]["execution_state"] == "idle"):
                    break
            times.append(time.perf_counter() - started)
            while client.shell_channel.msg_ready():
                client.shell_channel.get_msg(timeout=0)
        return statistics.median(times[5:])
    finally:
        _pool.release(kernel)
        refill(1)


def deepagent_kernel(script: list[Action]) -> "peers.Play":
    """A sub-agent as delegation runs it (a DeepAgent on a KernelInterpreter), played on this thread."""
    import tempfile

    from deepagent_magics.tools.delegation import Budget, SubAgent, Tree
    from deepagent_magics.core.run.run import Run

    from .trajectory import dspy_steps

    play = peers.Play("deepagent_kernel")
    lm = peers._timed_lm(dspy_steps(script), play)
    tree = Tree(Run("root"), Budget(1), pool(1))
    agent = SubAgent(tree=tree, lm=lm, workspace=tempfile.mkdtemp(prefix="bench-ws-"), max_iters=len(script) + 5, depth=1)
    try:
        started = time.perf_counter()
        run = agent.run(peers.TASK)
        play.wall = time.perf_counter() - started
    finally:
        refill()
    play.result = run.result
    play.extra["status"] = run.status
    return play
