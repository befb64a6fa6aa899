"""How a run learns what DSPy did: a step begins when the LM has proposed its reasoning and
code; every LM call's usage (tokens and cost) is added to the run that made it.

Neither pays for DSPy callbacks (with a callback active, DSPy inspects the arguments of
every module, adapter and LM call):

- `StepPredict` is the agent's action predictor, reporting each step it returns. The run
  it reports to is the session active in the calling thread, so one predictor serves
  every run of a shared agent (sub-agents share built templates).
- `UsageSink` sits in ``dspy.settings.caller_modules`` for the run. DSPy appends every
  LM call's history entry (model, usage, cost) to each caller module's ``history``; the
  sink's ``history`` records it on the run and keeps nothing, so a long run does not
  hold its prompts. Each run (a sub-agent's too) gets a sink of its own in its own
  context: usage is exact per run even when sub-agents share one LM in parallel.
"""

from __future__ import annotations

from typing import Any

import dspy

from . import session as _session
from .compaction import compact  # a long history is shown compacted (compaction.py)
from .run import Run


class StepPredict(dspy.Predict):
    """RLM's action predictor, reporting each step it proposes to the run active in the calling thread.

    `observe_steps` turns the RLM's own predictor into one (same object, same signature,
    demos and state): the one place this package touches RLM's structure. RLM calls
    ``generate_action`` once per iteration and runs the code it returns; a DSPy callback
    would do the same, but DSPy then inspects the arguments of every module, adapter and
    LM call (~0.1 ms a step). `tests/test_dspy_contract.py` fails loudly if RLM changes this.
    """

    def forward(self, **kwargs: Any) -> Any:
        return _report(super().forward(**compact(_session.active(), kwargs)))

    async def aforward(self, **kwargs: Any) -> Any:
        return _report(await super().aforward(**compact(_session.active(), kwargs)))


def _report(prediction: Any) -> Any:
    session = _session.active()
    if session is not None and prediction is not None:
        session.run.begin_step(getattr(prediction, "reasoning", "") or "", getattr(prediction, "code", "") or "")
    return prediction


def observe_steps(rlm: Any) -> None:
    """Make the RLM's action predictor report its steps (idempotent)."""
    predictor = rlm.generate_action
    if type(predictor) is dspy.Predict:
        predictor.__class__ = StepPredict


class _Sink:
    """A ``history`` list that records each appended entry on the run and keeps none."""

    def __init__(self, run: Run):
        self.run = run

    def append(self, entry: dict[str, Any]) -> None:
        usage = entry.get("usage") or {}
        self.run.record_usage(
            str(entry.get("model") or "lm"),
            int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0),
            int(usage.get("completion_tokens") or usage.get("output_tokens") or 0),
            entry.get("cost"),
        )

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
