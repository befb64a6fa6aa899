"""What every benchmark shares: settings, statistics, the machine, profiles, results.

A benchmark module has ``NAME``, ``TITLE``, ``COMMAND`` and ``run(config) ->
dict``. The dict it returns is what lands in the JSON and, through
`bench.report`, in docs/benchmarks.md:

    {"name", "title", "command", "status": "ok" | "not available", "reason",
     "tables": [{"title", "columns", "rows"}], "targets": [{"what", "target",
     "measured", "met"}], "notes": [...], "profile": {...}, "raw": {...}}
"""

from __future__ import annotations

import datetime as _dt
import gc
import importlib.metadata
import os
import platform
import re
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence


@dataclass
class Config:
    """How hard to push: ``smoke`` shrinks every benchmark to a few seconds."""

    smoke: bool = False
    repeat: int = 5
    profile: bool = True

    def reps(self, normal: int | None = None, smoke: int = 1) -> int:
        return smoke if self.smoke else (normal or self.repeat)


# ------------------------------------------------------------------ statistics
def median(values: Iterable[float]) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between order statistics."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def ratio(value: float, reference: float) -> float:
    return value / reference if reference else float("nan")


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def quiet_gc():
    """Collect now, so a collection left over from the previous run does not land in this one."""
    gc.collect()


# ------------------------------------------------------------------ results
def result(name: str, title: str, command: str, **fields: Any) -> dict[str, Any]:
    out = {"name": name, "title": title, "command": command, "status": "ok", "reason": None,
           "tables": [], "targets": [], "notes": [], "profile": None, "raw": {}}
    out.update(fields)
    return out


def not_available(name: str, title: str, command: str, reason: str, **fields: Any) -> dict[str, Any]:
    return result(name, title, command, status="not available", reason=reason, **fields)


def target(what: str, goal: str, measured: str, met: bool | None, over: float | None = None,
           lower_bound: bool = False) -> dict[str, Any]:
    """One target; ``over`` is measured ÷ goal for an upper bound, goal ÷ measured for a lower one."""
    missed = None
    if met is False and over:
        missed = f"{over:.1f}× short of the goal" if lower_bound else f"{over:.1f}× the goal"
    return {"what": what, "target": goal, "measured": measured, "met": met, "missed_by": missed}


def table(title: str, columns: list[str], rows: list[list[Any]]) -> dict[str, Any]:
    return {"title": title, "columns": columns, "rows": rows}


# ------------------------------------------------------------------ the machine
def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = None
    try:
        import psutil

        memory = round(psutil.virtual_memory().total / 2**30, 1)
    except Exception:
        pass
    versions = {}
    for package in ("deepagent-magics", "dspy", "ipykernel", "jupyter_client", "ipywidgets",
                    "deepagents", "langchain-core", "langgraph"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": memory,
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "versions": versions,
    }


# ------------------------------------------------------------------ profiles
# Where a sample's time goes: the deepest frame of the stack that belongs to one of
# these components names the bucket (libraries such as pydantic, json or re count
# for the component that called them).
COMPONENTS = [
    ("scripted model (stand-in for the LM)", r"deepagent_magics/testing\.py|bench/langchain_peer\.py.*_generate|fake_chat_models"),
    ("pygments: code highlighting", r"pygments/"),
    ("ipywidgets/traitlets: widget creation and state sync", r"ipywidgets/|traitlets/"),
    ("kernel messaging: serialise and send (ipykernel, jupyter_client, zmq)", r"ipykernel/|jupyter_client/|zmq/|/comm/"),
    ("deepagent_magics workspace (file tree, writes)", r"deepagent_magics/workspace\.py"),
    ("deepagent_magics harness", r"deepagent_magics/"),
    ("DSPy adapter: prompt formatting and parsing", r"dspy/adapters/"),
    ("DSPy LM client and callbacks", r"dspy/clients/|dspy/utils/callback|dspy/lm15"),
    ("DSPy signatures (pydantic model classes)", r"dspy/signatures/"),
    ("DSPy RLM loop and interpreter glue", r"dspy/predict/|dspy/primitives/"),
    ("DSPy (other)", r"dspy/"),
    ("deepagents middleware", r"deepagents/"),
    ("LangGraph runtime", r"langgraph/"),
    ("LangChain core (messages, callbacks, tools)", r"langchain_core/|langchain/"),
]
WAITING = "waiting for another process or thread"
WAITS = {"fsync": "os.fsync (durable workspace writes)", "sleep": "sleeping",
         "acquire": WAITING, "wait": WAITING,
         "select": WAITING, "poll": WAITING,
         "read": WAITING, "readline": WAITING}


def profile(function: Callable[[], Any], *, interval: float = 0.0005, top_lines: int = 60) -> dict[str, Any]:
    """Run ``function`` under pyinstrument; return the time per component and a trimmed call tree."""
    from pyinstrument import Profiler

    profiler = Profiler(interval=interval)
    profiler.start()
    try:
        function()
    finally:
        profiler.stop()
    session = profiler.last_session
    root = session.root_frame()
    buckets: dict[str, float] = {}
    if root is not None:
        _attribute(root, [], buckets)
    total = sum(buckets.values()) or 1.0
    summary = sorted(((name, seconds) for name, seconds in buckets.items()), key=lambda item: -item[1])
    text = profiler.output_text(unicode=False, color=False, show_all=False, short_mode=False)
    lines = [line for line in text.splitlines() if line.strip()]
    return {
        "duration_s": round(session.duration, 4),
        "cpu_time_s": round(session.cpu_time, 4),
        "components": [{"component": name, "seconds": round(seconds, 4), "share": round(seconds / total, 3)}
                       for name, seconds in summary],
        "tree": "\n".join(lines[:top_lines]),
    }


def _attribute(frame, stack: list[str], buckets: dict[str, float]) -> None:
    path = (frame.file_path or "").replace("\\", "/")
    here = stack + [f"{path}:{frame.function}"]
    children = [child for child in frame.children if not child.is_synthetic]  # "[self]" is this frame's own time
    self_time = frame.time - sum(child.time for child in children)
    if self_time > 0:
        buckets[_bucket(here, frame.function)] = buckets.get(_bucket(here, frame.function), 0.0) + self_time
    for child in children:
        _attribute(child, here, buckets)


def _bucket(stack: list[str], function: str) -> str:
    leaf = (function or "").split(".")[-1]
    if leaf in WAITS and ("<built-in>" in stack[-1] or "zmq/sugar/poll.py" in stack[-1]) or leaf == "fsync":
        return WAITS[leaf]
    for entry in reversed(stack):
        for name, pattern in COMPONENTS:
            if re.search(pattern, entry):
                return name
    return "other (Python, stdlib, benchmark driver)"


def timed(function: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = function()
    return time.perf_counter() - started, value
