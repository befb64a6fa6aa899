"""Row 7: memory of the notebook process, of one pooled kernel, and of a pool of 4.

The notebook process is a real ipykernel measured three times: bare, after
``%load_ext deepagent_magics``, and after one scripted ``%%deepagent`` run (DSPy,
the dashboard and the run loaded). The pooled kernels are what `KernelPool`
keeps ready for sub-agents. RSS counts pages shared with other processes (the
Python binary, shared libraries) in every process; USS counts only a process's
own, so a pool's USS sum is what it really adds.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from . import kernels
from .common import Config, not_available, result, table, target

NAME = "memory"
TITLE = "7. Memory: notebook process and pooled kernels"
COMMAND = "python -m bench.run --only memory"
ROOT = Path(__file__).resolve().parent.parent
MB = 2**20

RUN_CELL = """\
%%deepagent --lm _bench_lm --quiet --workspace {workspace}
Count to three and report.
"""
SETUP = """\
from deepagent_magics.testing import ScriptedLM
_bench_lm = ScriptedLM([("Count.", "numbers = [1, 2, 3]\\nprint(numbers)"), ("Report.", "SUBMIT(result=str(numbers))")])
"""


def available() -> str | None:
    try:
        import psutil  # noqa: F401
    except ImportError:
        return "psutil is not installed (the bench extra)"
    return None


def run(config: Config) -> dict[str, Any]:
    reason = available()
    if reason:
        return not_available(NAME, TITLE, COMMAND, f"not available in this run: {reason}")
    out = result(NAME, TITLE, COMMAND)
    notebook = _notebook()
    rows = [[f"notebook kernel: {stage}", f"{rss / MB:.0f}", f"{uss / MB:.0f}"] for stage, (rss, uss) in notebook.items()]
    pool_figures: dict[str, Any] = {}
    reason = kernels.available()
    if reason is None:
        try:
            pool_figures = _pool(4)
        finally:
            kernels.close()
        one = pool_figures["kernels"][0]
        rows.append(["one pooled kernel (ready, runtime installed)", f"{one[0] / MB:.0f}", f"{one[1] / MB:.0f}"])
        rss4 = sum(rss for rss, _ in pool_figures["kernels"])
        uss4 = sum(uss for _, uss in pool_figures["kernels"])
        rows.append(["pool of 4 ready kernels (sum)", f"{rss4 / MB:.0f}", f"{uss4 / MB:.0f}"])
        out["targets"].append(target("one pooled kernel RSS", "≤ 80 MB", f"{one[0] / MB:.0f} MB", one[0] <= 80 * MB, one[0] / (80 * MB)))
    else:
        out["targets"].append(target("one pooled kernel RSS", "≤ 80 MB", f"not available in this run ({reason})", None))
    out["tables"].append(table("Resident memory (MB)", ["process", "RSS", "USS (own pages)"], rows))
    out["notes"].append(
        "The pooled kernels run the host's own Python (`python -m ipykernel_launcher`) with only the kernel-side "
        "runtime installed (standard library and IPython): no DSPy, no widgets, no deepagent_magics."
    )
    out["raw"] = {"notebook_bytes": notebook, "pool_bytes": pool_figures}
    return out


def _memory(pid: int) -> tuple[int, int]:
    import psutil

    info = psutil.Process(pid).memory_full_info()
    return info.rss, info.uss


def _notebook() -> dict[str, tuple[int, int]]:
    """RSS/USS of a real ipykernel: bare, with the extension loaded, after one scripted run."""
    import tempfile

    from jupyter_client.manager import start_new_kernel

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(ROOT), env=env)
    stages: dict[str, tuple[int, int]] = {}
    try:
        pid = manager.provisioner.pid
        _settle()
        stages["bare ipykernel"] = _memory(pid)
        _execute(client, "%load_ext deepagent_magics")
        _settle()
        stages["after %load_ext deepagent_magics"] = _memory(pid)
        _execute(client, SETUP)
        _execute(client, RUN_CELL.format(workspace=tempfile.mkdtemp(prefix="bench-mem-")))
        _settle()
        stages["after one scripted %%deepagent run"] = _memory(pid)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return stages


def _execute(client: Any, code: str) -> None:
    errors: list[str] = []

    def on_message(message: dict[str, Any]) -> None:
        if message["header"]["msg_type"] == "error":
            errors.append("\n".join(message["content"].get("traceback", [])))

    reply = client.execute_interactive(code, timeout=120, output_hook=on_message)
    if errors or reply["content"]["status"] != "ok":
        raise RuntimeError(f"the notebook kernel failed on {code.splitlines()[0]!r}: {errors or reply['content']}")


def _pool(size: int) -> dict[str, Any]:
    pool = kernels.pool(size)
    _settle()
    pids = pool.pids()
    if len(pids) < size:
        raise RuntimeError(f"the pool has {len(pids)} live kernels, expected {size}")
    return {"pids": pids, "kernels": [_memory(pid) for pid in pids]}


def _settle(seconds: float = 0.5) -> None:
    """Let a process that just answered finish what it does after replying (history, GC) before reading it."""
    time.sleep(seconds)
