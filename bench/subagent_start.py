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
    delegated: list[float] = []
    try:
        pooled = _samples(_pooled, samples)
        if _delegation() is None:
            delegated = _samples(_delegated, samples)
        cold = _samples(_cold, samples)
        bare = _samples(lambda: _cold(sandboxed=False), samples)
    finally:
        kernels.close()
    rows = []
    measured = [("pooled kernel (KernelPool, warm)", pooled)]
    if delegated:
        measured.append(("through `delegate`, pooled kernel: call to the sub-agent's first step done", delegated))
    measured.append((f"cold kernel start (no pool), {_confinement()}", cold))
    measured.append(("cold kernel start (no pool), not sandboxed", bare))
    for label, values in measured:
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
    out["tables"].append(table(
        "What the sandbox adds to a cold start (ms)", ["", "p50", "p95"],
        [[f"{_confinement()} − not sandboxed", f"{(median(cold) - median(bare)) * 1000:+.1f}",
          f"{(percentile(cold, 95) - percentile(bare, 95)) * 1000:+.1f}"]],
    ))
    out["targets"].append(target("pooled p50 (interpreter: take a kernel, first code)", "≤ 25 ms", f"{p50 * 1000:.1f} ms", p50 <= 0.025, p50 / 0.025))
    out["targets"].append(target("pooled p95 (interpreter: take a kernel, first code)", "≤ 60 ms", f"{p95 * 1000:.1f} ms", p95 <= 0.060, p95 / 0.060))
    if delegated:
        d50, d95 = median(delegated), percentile(delegated, 95)
        out["targets"].append(target("pooled p50 through `delegate`", "≤ 25 ms", f"{d50 * 1000:.1f} ms", d50 <= 0.025, d50 / 0.025))
        out["targets"].append(target("pooled p95 through `delegate`", "≤ 60 ms", f"{d95 * 1000:.1f} ms", d95 <= 0.060, d95 / 0.060))
        out["tables"].append(table(
            "Where a start through `delegate` goes, from the run's own events (ms, median)",
            ["segment", "p50"],
            [[label, f"{median(_segments[key][-len(delegated):]) * 1000:.1f}"] for key, label in SEGMENTS],
        ))
        out["notes"].append(
            "Through `delegate` the clock starts in the parent's code, just before the call, and stops when the "
            "sub-agent's first step has run in its kernel (its step_finished event): on top of the kernel it builds "
            "the sub-agent (a DeepAgent with its dspy.RLM), starts its thread, installs DSPy's sandbox facade in the "
            "kernel (one execute), and formats and parses its first LM call (zero latency here)."
        )
    else:
        out["targets"].append(target("through `delegate`", "≤ 25 ms", f"not available in this run ({_delegation()})", None))
    out["notes"].append(
        "A pooled kernel was started, connected and given the kernel-side runtime before it was asked for, so a "
        "sub-agent's wait is taking it from the queue, wiring its channels to a poller and one execute round trip. "
        "A cold start is launching ipykernel, waiting for it to answer and installing the runtime, then the same."
    )
    out["notes"].append(
        "A local kernel starts in bubblewrap (docs/safety.md): its mounts, namespaces and a private /tmp and home "
        "are set up before Python starts; the pooled rows use sandboxed kernels too, started ahead of need."
    )
    out["raw"] = {"pooled_s": pooled, "delegated_s": delegated, "cold_s": cold, "cold_unsandboxed_s": bare,
                  "first_code": FIRST_CODE}
    return out


def _samples(measure: Callable[[], float], count: int) -> list[float]:
    measure()  # warm up: imports, the first pool
    values = []
    for _ in range(count):
        quiet_gc()
        values.append(measure())
    return values


def _pooled() -> float:
    from deepagent_magics.interpreters.kernel import KernelInterpreter

    pool = kernels.pool(1)  # full (and paused) before the clock starts
    started = time.perf_counter()
    interpreter = KernelInterpreter(pool=pool, output_fields=[{"name": "result"}])
    interpreter.start()
    interpreter.execute(FIRST_CODE)
    elapsed = time.perf_counter() - started
    interpreter.shutdown()
    return elapsed


def _confinement() -> str:
    """How this machine's sub-agent kernels are confined by default."""
    from deepagent_magics.interpreters.pool.sandbox import SandboxPolicy

    isolation = SandboxPolicy().isolation()
    return "sandboxed (bubblewrap)" if isolation["sandbox"] == "bubblewrap" else f"not sandboxed: {isolation['reason']}"


def _cold(sandboxed: bool = True) -> float:
    """A kernel started for the sub-agent (a pool of size 0), in the default sandbox or in none."""
    from deepagent_magics.interpreters.kernel import KernelInterpreter
    from deepagent_magics.interpreters.pool import KernelPool
    from deepagent_magics.interpreters.pool.sandbox import SandboxPolicy

    on_demand = KernelPool(size=0, sandbox=SandboxPolicy() if sandboxed else None)
    started = time.perf_counter()
    interpreter = KernelInterpreter(pool=on_demand, output_fields=[{"name": "result"}])
    interpreter.start()
    interpreter.execute(FIRST_CODE)
    elapsed = time.perf_counter() - started
    interpreter.shutdown()
    on_demand.stop()
    return elapsed


def _delegation() -> str | None:
    try:
        import deepagent_magics.tools.delegation  # noqa: F401
    except ImportError as exc:
        return f"deepagent_magics.tools.delegation is not in this tree ({exc})"
    return None


def _delegated() -> float:
    """From just before the parent's ``delegate`` call to the sub-agent's first step finishing in its kernel."""
    import tempfile

    from deepagent_magics import DeepAgent
    from deepagent_magics.core.run.run import RUN_STARTED, STEP_FINISHED, STEP_STARTED, SUBAGENT_STARTED
    from deepagent_magics.testing import ScriptedLM

    child_task = "Start-up probe: sum some squares"
    lm = ScriptedLM(scripts={
        "": [("Delegate.", "import time as _bench_time\n_bench_t0 = _bench_time.perf_counter()\n"
                           f"answer = delegate({child_task!r})\nprint(answer)"),
             ("Report.", "SUBMIT(result=answer)")],
        "Start-up probe": [("First step.", FIRST_CODE), ("Done.", "SUBMIT(result='ok')")],
    })
    global _workspace
    _workspace = _workspace or tempfile.mkdtemp(prefix="bench-start-")  # one: a sandboxed kernel serves one workspace
    pool = kernels.pool(1, workspace=_workspace)  # full (and paused) before the clock starts
    marks: dict[str, float] = {}

    def on_event(event) -> None:
        child = event.run.parent is not None
        key = {(SUBAGENT_STARTED, False): "built", (RUN_STARTED, True): "running",
               (STEP_STARTED, True): "first LM reply", (STEP_FINISHED, True): "first code done"}.get((event.kind, child))
        if key is not None and key not in marks:
            marks[key] = time.perf_counter()

    agent = DeepAgent(lm=lm, workspace=_workspace, max_iters=4, pool=pool)
    namespace: dict[str, Any] = {}
    quiet_gc()
    run = agent.run("Delegate one probe.", namespace=namespace, listeners=[on_event])
    if run.status != "finished" or namespace.get("answer") != "ok" or len(marks) != len(SEGMENTS):
        raise RuntimeError(f"the delegate probe went wrong: {run.status} {run.error} {namespace.get('answer')!r}")
    previous = namespace["_bench_t0"]
    for key, _ in SEGMENTS:
        _segments.setdefault(key, []).append(marks[key] - previous)
        previous = marks[key]
    return marks["first code done"] - namespace["_bench_t0"]


# Where a delegated start's time goes, read off the run's own events.
SEGMENTS = [
    ("built", "build the sub-agent (its DeepAgent and dspy.RLM) and announce it"),
    ("running", "start its thread; DeepAgent.run set-up"),
    ("first LM reply", "take a pooled kernel, install DSPy's sandbox facade (one execute), first LM call"),
    ("first code done", "run the first code in the kernel"),
]
_segments: dict[str, list[float]] = {}
_workspace: str | None = None
