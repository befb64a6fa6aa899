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

A run's history is bounded. Each step's prompt holds the whole REPL history, so a
200-step run's prompts grow to hundreds of KB each and keeping them all grows memory
with the square of the steps. The run's loop runs in ``dspy.context(max_history_size=
HISTORY_SIZE)`` (each LM's and module's own history) and the sink strips the heavy
fields (`HEAVY_FIELDS`) of this run's entries older than the last `KEEP_FULL`: the same
dicts DSPy keeps in ``dspy.clients.base_lm.GLOBAL_HISTORY`` (its 10,000-entry global
history), so usage, cost and time stay and ``dspy.inspect_history()`` still works.
`tests/test_dspy_contract.py` fails loudly if DSPy stops sharing the entry objects.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from typing import Any

import dspy

from . import ending, rlm_seam
from ..model.replies import action_adapter
from ..policy import spend, steering
from ..run import session as _session
from ..model import step_streaming as streaming
from .attempts import apredict_step, predict_step  # compaction, reply repair and retries (attempts.py)
from ..model.caching import acall_marked, cached_tokens, call_marked, step_lm
from ..run.run import Run


class StepPredict(dspy.Predict):
    """RLM's action predictor, reporting each step it proposes to the run active in the calling thread.

    `observe_steps` turns the RLM's own predictor into one (same object, same signature,
    demos and state): the one place this package touches RLM's structure. RLM calls
    ``generate_action`` once per iteration and runs the code it returns; a DSPy callback
    would do the same, but DSPy then inspects the arguments of every module, adapter and
    LM call (~0.1 ms a step). `tests/test_dspy_contract.py` fails loudly if RLM changes this.
    Its LM call marks the prompt's stable head for the provider's cache (`caching`) and
    streams the step into the run's events while it is written (`streaming`).
    """

    def forward(self, **kwargs: Any) -> Any:
        kwargs = rlm_seam.one_text(kwargs)  # the run's inputs as the one text the model reads
        session = _session.active()
        ending.remember(session, kwargs)  # what a final answer is made from if this step may not start
        with _admit(session):  # a spend cap reached, or the user's stop: this step's LM call never starts

            def call(**each: Any) -> Any:  # one request; `attempts` makes them until one can run
                each = steering.before_step(session, each)  # the user's notes, after the (compacted) history
                _keep_request(session, self, each)
                lm = step_lm(self, each)

                def plain(one: dict[str, Any]) -> Any:  # streamed into the run's events when it can be
                    return streaming.call(self, lm, one, lambda: super(StepPredict, self).forward(**one))

                return call_marked(lm, each, plain)

            return _report(predict_step(call, session, kwargs))

    async def aforward(self, **kwargs: Any) -> Any:
        kwargs = rlm_seam.one_text(kwargs)
        session = _session.active()
        ending.remember(session, kwargs)
        with _admit(session):

            async def call(**each: Any) -> Any:
                each = steering.before_step(session, each)
                _keep_request(session, self, each)
                return await acall_marked(step_lm(self, each), each,
                                          lambda one: super(StepPredict, self).aforward(**one))

            return _report(await apredict_step(call, session, kwargs))


def _admit(session: Any) -> Any:
    """The step's admission: the user's stop first (`steering`), then the tree's spend caps (`spend`)."""
    steering.check_stop(session)
    budget = spend.budget_of_session(session)
    return budget.calls_allowed() if budget is not None and budget.capped else contextlib.nullcontext()


def _keep_request(session: Any, predictor: Any, inputs: dict[str, Any]) -> None:
    """What the step's request is made of (references only), for ``%deepagent_prompt --last``."""
    if session is not None:
        session.run.last_action = (predictor, inputs)


def last_request(run: Any) -> list[dict[str, Any]]:
    """The messages of ``run``'s last action request, formatted again as the action adapter formats them."""
    kept = getattr(run, "last_action", None)
    if kept is None:
        return []
    predictor, inputs = kept
    signature = inputs.get("signature") or predictor.signature
    values = {name: value for name, value in inputs.items() if name in signature.input_fields}
    messages = action_adapter(dspy.settings.adapter).format(signature, predictor.demos, values)
    return [{"role": m["role"], "content": m["content"] if isinstance(m["content"], str) else str(m["content"])}
            for m in messages]


def _report(prediction: Any) -> Any:
    """Open the step on the run, with the code as it will run (its Markdown fences off: `rlm_seam.as_run`)."""
    session = _session.active()
    if prediction is not None and isinstance(getattr(prediction, "code", None), str):
        prediction.code = rlm_seam.as_run(prediction.code)
    if session is not None and prediction is not None:
        session.run.begin_step(getattr(prediction, "reasoning", "") or "", str(getattr(prediction, "code", "") or ""))
    return prediction


def observe_steps(rlm: Any) -> None:
    """Make the RLM's action predictor report its steps (idempotent)."""
    predictor = rlm.generate_action
    if type(predictor) is dspy.Predict:
        predictor.__class__ = StepPredict


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
