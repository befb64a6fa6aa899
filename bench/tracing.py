"""Row 12: what OpenTelemetry tracing costs a step, off and on, against the same run untraced.

The step-time script (`bench.trajectory`: 50 steps, every tenth a tool call) played by `DeepAgent.run` with
a zero-latency scripted model, in one process, interleaved round by round:

- untraced: the standard capabilities without the tracing one (the reference), and again (the control: the
  noise between two identical runs on this machine);
- tracing off: the standard capabilities as every agent gets them, with no tracer provider configured
  (OpenTelemetry not even imported by the run): what every user who does not trace pays;
- tracing on: the OpenTelemetry SDK's `TracerProvider`, given to the agent (``Tracing(provider=...)``, as the
  global one would be), exporting each span as it ends to its in-memory exporter (`SimpleSpanProcessor`),
  or in batches to an exporter that drops them (`BatchSpanProcessor`, as an OTLP exporter is set up);
- tracing on with content: the same, prompts and replies recorded (scrubbed) on the spans.

Measured as the whole run's CPU time per step (the process's, every thread: the batch processor's too), which
waiting for the other work on a shared machine does not inflate; its best round against the untraced run's
best (the targets), and the median over rounds of each round's ratio; and the harness's wall time between
model calls (`bench.peers.Play`).
"""

from __future__ import annotations

import time
from typing import Any, Callable

from . import peers
from .common import Config, median, ms, quiet_gc, result, table, target
from .trajectory import actions

NAME = "tracing"
TITLE = "12. OpenTelemetry tracing: the cost per step, off and on"
COMMAND = "python -m bench.run --only tracing"


def _extensions(tracing: Any = None) -> Any:
    from deepagent_magics import Extensions
    from deepagent_magics.standard import STANDARD
    from deepagent_magics.tracing import TRACING

    return Extensions(*[each for each in STANDARD if each is not TRACING], *([tracing] if tracing else []))


def _players() -> tuple[dict[str, Callable[[list], peers.Play]], Any, Callable[[], None]]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from deepagent_magics.tracing import Tracing

    class Dropped(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    memory = InMemorySpanExporter()
    simple = TracerProvider()
    simple.add_span_processor(SimpleSpanProcessor(memory))
    batched = TracerProvider()
    batched.add_span_processor(BatchSpanProcessor(Dropped()))
    untraced, simple_on, batched_on = _extensions(), _extensions(Tracing(provider=simple)), _extensions(Tracing(provider=batched))

    def play(extensions: Any = None, **settings: Any) -> Callable[[list], peers.Play]:
        return lambda script: peers.deepagent(script, extensions=extensions, **settings)

    found = {
        "untraced": play(untraced),
        "untraced again": play(_extensions()),  # the control: how far two identical runs differ here
        "off": play(),  # the standard capabilities, tracing among them, no provider configured
        "on, in-memory exporter": play(simple_on),
        "on, batch processor": play(batched_on),
        "on, in-memory, content recorded": play(simple_on, trace_content=True),
    }
    return found, memory, lambda: batched.force_flush()


LABELS = {
    "untraced": "untraced: the standard capabilities without tracing (reference)",
    "untraced again": "untraced again (the control: the noise between two identical runs)",
    "off": "tracing off: standard capabilities, no tracer provider configured",
    "on, in-memory exporter": "tracing on: SDK, SimpleSpanProcessor, in-memory exporter",
    "on, batch processor": "tracing on: SDK, BatchSpanProcessor, exporter that drops",
    "on, in-memory, content recorded": "tracing on with content (prompts, replies, tool arguments; scrubbed)",
}


def run(config: Config) -> dict[str, Any]:
    steps = 6 if config.smoke else 50
    rounds = config.reps(normal=max(config.repeat, 10))
    script = actions(steps)
    playing, memory, flush = _players()
    for play in playing.values():  # warm up imports and caches
        play(script)
    plays: dict[str, list[peers.Play]] = {peer: [] for peer in playing}
    cpu: dict[str, list[float]] = {peer: [] for peer in playing}
    spans = {}
    names = list(playing)
    for round_ in range(rounds):
        for peer in names[round_ % len(names):] + names[:round_ % len(names)]:  # each round starts with another
            play = playing[peer]
            memory.clear()
            flush()
            quiet_gc()
            started = time.process_time()
            outcome = play(script)
            cpu[peer].append((time.process_time() - started) / len(script))
            if outcome.calls != len(script) or outcome.extra.get("status") != "finished":
                raise RuntimeError(f"{peer}: {outcome.calls} model calls for {len(script)} steps, {outcome.extra}")
            spans[peer] = len(memory.get_finished_spans())  # the in-memory exporter's: 0 for the other runs
            plays[peer].append(outcome)
    per_step = {peer: median(p.step_seconds for p in runs) for peer, runs in plays.items()}
    best = {peer: min(samples) for peer, samples in cpu.items()}
    cpu_step = {peer: median(samples) for peer, samples in cpu.items()}
    # Each round's run against the untraced run of the same round, then the median: a machine that slows down
    # for a while slows both.
    paired = {peer: median(mine / base for mine, base in zip(cpu[peer], cpu["untraced"])) for peer in cpu}
    fastest = {peer: best[peer] / best["untraced"] for peer in best}

    out = result(NAME, TITLE, COMMAND)
    out["tables"].append(table(
        f"Per step, {steps}-step script, zero-latency scripted LM, {rounds} interleaved rounds: CPU time of the "
        "whole run (the process's, every thread; its best round, and the median of each round's ratio to that "
        "round's untraced run) and the harness's wall time between model calls (median)",
        ["run", "CPU ms / step, best", "× untraced, best", "× untraced, median of rounds", "wall ms / step"],
        [[LABELS[peer], f"{ms(best[peer]):.3f}", f"{fastest[peer]:.2f}×", f"{paired[peer]:.2f}×",
          f"{ms(per_step[peer]):.3f}"] for peer in plays],
    ))
    off, on, control = fastest["off"], fastest["on, in-memory exporter"], fastest["untraced again"]
    out["targets"].append(target("tracing off (no provider configured) vs untraced, CPU per step (best round)",
                                 "≤ 1.03×", f"{off:.2f}× (the control: {control:.2f}×)", off <= 1.03, off / 1.03))
    out["targets"].append(target("tracing on (SDK, in-memory exporter) vs untraced, CPU per step (best round)",
                                 "≤ 1.25×", f"{on:.2f}×", on <= 1.25, on / 1.25))
    made = spans.get("on, in-memory exporter", 0)
    extra = best["on, in-memory exporter"] - best["untraced"]
    out["notes"].append(
        f"A traced run of this script makes {made} spans: one invoke_agent, and per step a step and a chat, and an "
        f"execute_tool per tool call; the untraced and off runs make none and import no OpenTelemetry. On, "
        f"tracing costs about {ms(extra):.3f} ms of CPU a step ({ms(extra * steps / max(made, 1)):.3f} ms a span, "
        "the SDK's own work included).")
    out["notes"].append(
        "What tracing off adds to a run is one look at OpenTelemetry's global provider as the run starts "
        "(a dictionary lookup when nothing imported OpenTelemetry) and to a step one property read: nothing a "
        "timer sees: its row differs from the untraced one as the control row does. The targets read each run's "
        "best round (as timeit does: other work on the machine only ever adds time); the median of the rounds' "
        "ratios moves by a few percent from run to run on a shared machine.")
    out["notes"].append(
        "CPU time is the measure of the targets: on a shared machine a run's wall time waits for the other "
        "processes' work, its CPU time does not. With a real model a step takes seconds, so even tracing on is "
        "a fraction of a percent of it.")
    out["raw"] = {"steps": steps, "rounds": rounds, "per_step_s": per_step, "cpu_per_step_s": cpu_step,
                  "best_cpu_per_step_s": best, "paired_cpu_ratio": paired, "spans_per_run": spans,
                  "samples_cpu_s": cpu, "samples_step_s": {peer: [p.step_seconds for p in runs]
                                                           for peer, runs in plays.items()}}
    return out
