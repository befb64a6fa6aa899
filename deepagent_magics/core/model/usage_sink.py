"""How every LM call's usage (tokens and cost) reaches the run that made it, without DSPy callbacks.

`UsageSink` sits in ``dspy.settings.caller_modules`` for the run. DSPy appends every LM call's
history entry (model, usage, cost) to each caller module's ``history``; the sink's ``history``
records it on the run (and on the tree's spend budget) and keeps nothing, so a long run does not
hold its prompts. Each run (a sub-agent's too) gets a sink of its own in its own context: usage is
exact per run even when sub-agents share one LM in parallel. (With a DSPy callback active, DSPy
would inspect the arguments of every module, adapter and LM call.)

A run's history is bounded. Each step's prompt holds the whole REPL history, so a 200-step run's
prompts grow to hundreds of KB each and keeping them all grows memory with the square of the
steps. The run's loop runs in ``dspy.context(max_history_size=HISTORY_SIZE)`` (each LM's and
module's own history) and the sink strips the heavy fields (`HEAVY_FIELDS`) of this run's entries
older than the last `KEEP_FULL`: the same dicts DSPy keeps in
``dspy.clients.base_lm.GLOBAL_HISTORY`` (its 10,000-entry global history), so usage, cost and time
stay and ``dspy.inspect_history()`` still works. `tests/core/test_dspy_contract.py` fails loudly if DSPy
stops sharing the entry objects.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Iterator
from typing import Any

import dspy

from ..policy import spend
from ..run.run import Run
from .caching import cached_tokens


HISTORY_SIZE = 3  # entries each LM and module keeps during a run (>= 1: DSPy skips caller modules at 0)
KEEP_FULL = 3  # this run's newest history entries kept whole
HEAVY_FIELDS = ("messages", "prompt", "response", "outputs", "request")
TRIMMED = "[trimmed by deepagent-magics to bound a long run's memory]"


def strip_entry(entry: dict[str, Any]) -> None:
    """Drop an entry's prompt and response in place (the dict DSPy's histories hold)."""
    for name in HEAVY_FIELDS:
        if name in entry:
            entry[name] = None
    entry["prompt"] = TRIMMED
    entry["outputs"] = [TRIMMED]


class _Sink:
    """A ``history`` list that records each appended entry on the run and keeps none."""

    def __init__(self, run: Run):
        self.run = run
        self._recent: deque[dict[str, Any]] = deque()
        self._lock = threading.Lock()  # llm_query_batched calls from several threads

    def append(self, entry: dict[str, Any]) -> None:
        usage = entry.get("usage") or {}
        model = str(entry.get("model") or "lm")
        input_tokens = int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0)
        output_tokens = int(usage.get("completion_tokens") or usage.get("output_tokens") or 0)
        cost = spend.reported_cost(entry.get("cost"))  # None unless a number of USD >= 0 (not NaN, not "lots")
        self.run.record_usage(model, input_tokens, output_tokens, cost, cached_tokens(usage))
        budget = spend.budget_of(self.run)
        if budget is not None:  # the tree's spend caps count every call of every run in it
            budget.add(input_tokens + output_tokens, cost, model)
        if isinstance(entry, dict):
            with self._lock:
                self._recent.append(entry)
                old = [self._recent.popleft() for _ in range(len(self._recent) - KEEP_FULL)]
            for each in old:
                strip_entry(each)

    def pop(self, index: int = -1) -> None:
        return None

    def __len__(self) -> int:
        return 0

    def __iter__(self):
        return iter(())


class UsageSink:
    """A stand-in caller module whose history is the run's usage (see the module docstring)."""

    def __init__(self, run: Run):
        self.history = _Sink(run)


def counted() -> bool:
    """Whether this thread's DSPy settings already count LM calls on a run (a run's loop, a query of it)."""
    return any(isinstance(module, UsageSink) for module in dspy.settings.caller_modules or [])


@contextlib.contextmanager
def counting(run: Run) -> Iterator[None]:
    """Around an LM call made where no run's sink is in the settings (the agent's code in a thread of its own):
    its usage counted on ``run`` too (the pipeline's ``usage`` layer)."""
    with dspy.context(caller_modules=[*(dspy.settings.caller_modules or []), UsageSink(run)]):
        yield
