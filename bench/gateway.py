"""Row 8: sub-agents on a Jupyter gateway beside the local pool (same machine).

A `jupyter kernelgateway` is started on 127.0.0.1 with token auth; sub-agent kernels are started
through its REST API and driven over its websocket. Both sides run on this machine, so the figures
are the cost of the gateway's protocol (HTTP to start, a websocket hop for every message), not what a
cluster gains. Measured: a sub-agent's start (request to first code executed) with a warm pool and
cold, p50/p95; and the wall time of one ``delegate_batched`` of 16 scripted sub-agents (fanout.py's
call), through the gateway and through the local pool.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from . import fanout, kernels
from .common import Config, median, not_available, percentile, quiet_gc, result, table

NAME = "gateway"
TITLE = "8. Sub-agents on a Jupyter gateway (local Kernel Gateway) beside the local pool"
COMMAND = "python -m bench.run --only gateway"
FIRST_CODE = "rows = [i * i for i in range(10)]\nprint(sum(rows))"
TOKEN = "bench-gateway-token"
ROOT = Path(__file__).resolve().parent.parent


def available() -> str | None:
    reason = kernels.available()
    if reason:
        return reason
    try:
        import kernel_gateway  # noqa: F401

        from deepagent_magics.interpreters.pool.gateway import Gateway  # noqa: F401
    except ImportError as exc:
        return f"needs jupyter-kernel-gateway and deepagent_magics.interpreters.pool.gateway ({exc})"
    return None


def start_gateway() -> tuple[subprocess.Popen, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    home = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(home / "runtime"), JUPYTER_DATA_DIR=str(home / "data"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "kernelgateway", "--KernelGatewayApp.ip=127.0.0.1",
         f"--KernelGatewayApp.port={port}", f"--KernelGatewayApp.auth_token={TOKEN}"],
        cwd=home, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    from deepagent_magics.interpreters.pool.gateway import Gateway, GatewayError

    deadline = time.monotonic() + 60
    while True:
        try:
            Gateway(url, TOKEN).check()
            return process, url
        except GatewayError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError("the kernel gateway did not start") from None
            time.sleep(0.3)


def _start(pool_factory: Callable[[], Any], warm: bool) -> float:
    """Seconds from asking for a kernel to the first code's result (pool filled first when ``warm``)."""
    from deepagent_magics.interpreters.kernel import KernelInterpreter

    pool = pool_factory()
    try:
        if warm:
            pool.size = 1
            if not pool.wait_ready(1, timeout=120):
                raise RuntimeError(f"the pool did not fill ({pool.last_error})")
            with pool._cond:
                pool.size = 0  # no refill while timed
        quiet_gc()
        started = time.perf_counter()
        interpreter = KernelInterpreter(pool=pool)
        interpreter.execute(FIRST_CODE)
        elapsed = time.perf_counter() - started
        interpreter.shutdown()
        return elapsed
    finally:
        pool.stop()


def run(config: Config) -> dict[str, Any]:
    reason = available()
    if reason:
        return not_available(NAME, TITLE, COMMAND, f"not available in this run: {reason}")
    from deepagent_magics.interpreters.pool import KernelPool
    from deepagent_magics.interpreters.pool.gateway import Gateway

    samples = 3 if config.smoke else 20
    width = 2 if config.smoke else 16
    process, url = start_gateway()
    gateway = Gateway(url, TOKEN)
    starts: dict[str, list[float]] = {}
    fan: dict[str, list[float]] = {"gateway": [], "local": []}
    try:
        for label, factory in (("gateway", lambda: KernelPool(0, gateway=gateway)), ("local", lambda: KernelPool(0))):
            starts[f"{label}, warm pool"] = [_start(factory, True) for _ in range(samples)]
            starts[f"{label}, cold"] = [_start(factory, False) for _ in range(samples)]
        for _ in range(config.reps(normal=2)):
            for label in ("gateway", "local"):
                kernels.close()
                kernels._pool = KernelPool(0, gateway=gateway if label == "gateway" else None)
                fan[label].append(fanout.fan_out(width, parallel=True)[0])
    finally:
        kernels.close()
        left = gateway.list_kernels() if _listable(gateway) else []
        process.terminate()
        process.wait(timeout=30)
    out = result(NAME, TITLE, COMMAND)
    out["tables"].append(table(
        "Sub-agent start: request to first code executed (ms)", ["kernel", "samples", "p50", "p95"],
        [[label, len(values), f"{median(values) * 1000:.1f}", f"{percentile(values, 95) * 1000:.1f}"]
         for label, values in starts.items()]))
    g, loc = median(fan["gateway"]), median(fan["local"])
    out["tables"].append(table(
        f"One delegate_batched of {width} sub-agents × {fanout.CHILD_STEPS} steps, warm kernels (s, median)",
        ["where", "wall s", "÷ local"], [["gateway", f"{g:.2f}", f"{g / loc:.2f}×"], ["local pool", f"{loc:.2f}", "1.00×"]]))
    out["notes"].append(
        "Gateway and kernels run on this machine: the difference is the protocol (a REST call to start or stop a "
        "kernel, every message through the gateway's websocket), not the cluster's gain. A warm pool hides the "
        f"start either way.{' Kernels left on the gateway: ' + str(len(left)) if left else ''}")
    out["raw"] = {"start_seconds": starts, "fanout_seconds": fan, "width": width}
    return out


def _listable(gateway: Any) -> bool:
    try:
        gateway.list_kernels()
        return True
    except Exception:
        return False
