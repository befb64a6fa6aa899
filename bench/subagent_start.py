"""Row 2: how long a sub-agent waits for its kernel: request to first code executed.

Each sample times, from nothing, what a sub-agent's first step needs: make its
`KernelInterpreter`, get a kernel (taken from a warm pool, or started cold), and
run its first code there until the result is back. The pool is filled before
each pooled sample and does not refill while one is timed (a refill is a kernel
start, about a CPU-second, that would land on the measurement on two cores).
When delegation exists, the same is timed through the ``delegate`` tool: from
the call to the sub-agent's first step finishing in its kernel.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from . import kernels
from .common import Config, median, not_available, percentile, quiet_gc, result, table, target

NAME = "subagent_start"
TITLE = "2. Sub-agent start: request to first code executed"
COMMAND = "python -m bench.run --only subagent_start"
FIRST_CODE = "rows = [i * i for i in range(10)]\nprint(sum(rows))"


def run(config: Config) -> dict[str, Any]:
    reason = kernels.available()
    if reason:
        return not_available(NAME, TITLE, COMMAND, f"not available in this run: {reason}")
    samples = 4 if config.smoke else 30
    try:
        pooled = _samples(_pooled, samples)
        cold = _samples(_cold, samples)
    finally:
        kernels.close()
    rows = []
    for label, values in (("pooled kernel (KernelPool, warm)", pooled), ("cold kernel start (no pool)", cold)):
        rows.append([label, len(values), f"{median(values) * 1000:.1f}", f"{percentile(values, 95) * 1000:.1f}",
                     f"{min(values) * 1000:.1f}", f"{max(values) * 1000:.1f}"])
    p50, p95 = median(pooled), percentile(pooled, 95)
    out = result(NAME, TITLE, COMMAND)
    out["tables"].append(table(
        "Request to first code executed in the sub-agent's kernel (ms)",
        ["kernel", "samples", "p50", "p95", "min", "max"], rows,
    ))
    out["tables"].append(table(
        "Pooled against cold", ["", "p50", "p95"],
        [["cold ÷ pooled", f"{median(cold) / p50:.0f}×", f"{percentile(cold, 95) / p95:.0f}×"]],
    ))
    out["targets"].append(target("pooled p50", "≤ 25 ms", f"{p50 * 1000:.1f} ms", p50 <= 0.025))
    out["targets"].append(target("pooled p95", "≤ 60 ms", f"{p95 * 1000:.1f} ms", p95 <= 0.060))
    out["notes"].append(
        "A pooled kernel was started, connected and given the kernel-side runtime before it was asked for, so a "
        "sub-agent's wait is taking it from the queue, wiring its channels to a poller and one execute round trip. "
        "A cold start is launching ipykernel, waiting for it to answer and installing the runtime, then the same."
    )
    out["raw"] = {"pooled_s": pooled, "cold_s": cold, "first_code": FIRST_CODE}
    return out


def _samples(measure: Callable[[], float], count: int) -> list[float]:
    measure()  # warm up: imports, the first pool
    values = []
    for _ in range(count):
        quiet_gc()
        values.append(measure())
    return values


def _pooled() -> float:
    from deepagent_magics.kernel_interpreter import KernelInterpreter

    pool = kernels.pool(1)  # full (and paused) before the clock starts
    started = time.perf_counter()
    interpreter = KernelInterpreter(pool=pool, output_fields=[{"name": "result"}])
    interpreter.start()
    interpreter.execute(FIRST_CODE)
    elapsed = time.perf_counter() - started
    interpreter.shutdown()
    return elapsed


def _cold() -> float:
    from deepagent_magics.kernel_interpreter import KernelInterpreter

    started = time.perf_counter()
    interpreter = KernelInterpreter(output_fields=[{"name": "result"}])
    interpreter.start()
    interpreter.execute(FIRST_CODE)
    elapsed = time.perf_counter() - started
    interpreter.shutdown()
    return elapsed
