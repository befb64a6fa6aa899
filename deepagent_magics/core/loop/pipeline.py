"""The step pipeline: what wraps the model call of one agent step, in order, in one place.

RLM calls its action predictor once per iteration; `observe_steps` makes that predictor a
`StepPredict`, whose call goes through `STEP_PIPELINE`, outermost layer first. Each layer says why
it sits where it does. The sync and async paths run the same list (`compose`); a layer whose
``applies`` is false for this step is not built at all, so a run pays only for what it uses (no
caps: no admission; fewer steps than a stall takes: no stall check; no streaming wanted: no stream wrapper; no notes: no history rewrite).

When the pipeline returns, the step opens on the run (``step_started``) and RLM runs its code.
`tests/core/test_dspy_contract.py` fails loudly if RLM stops calling ``generate_action`` once per step.
(Where each LM call's usage goes is `core.model.usage_sink`.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import dspy

from ..model import caching, compaction, stop_sequences
from ..model import step_streaming as streaming
from ..policy import spend, steering
from ..run import session as _session
from ..model.replies import action_adapter
from . import attempts, ending, rlm_seam

Call = Callable[..., Any]  # call(**inputs) -> a Prediction (or, on the async path, a coroutine of one)


@dataclass
class Step:
    """One step's call as it goes through the pipeline."""

    predictor: Any  # the StepPredict
    session: Any  # the run's session (None outside a run: evaluation of the bare predictor)
    inputs: dict[str, Any]  # what RLM passed: the task, the variables, the REPL history
    lm: Any  # the LM the call will use
    is_async: bool

    @property
    def run(self) -> Any:
        return self.session.run if self.session is not None else None


@dataclass(frozen=True)
class Layer:
    name: str
    why: str
    applies: Callable[[Step], bool]
    wrap: Callable[[Step, Call], Call]


# ------------------------------------------------------------ the shapes a layer takes
def _before(action: Callable[[Step], None]) -> Callable[[Step, Call], Call]:
    """Run ``action`` once, before the call (it may raise to refuse the step)."""
    def wrap(step: Step, call: Call) -> Call:
        def run(**inputs: Any) -> Any:
            action(step)
            return call(**inputs)  # on the async path: the coroutine, awaited by the caller
        return run
    return wrap


def _inputs(change: Callable[[Step, dict[str, Any]], dict[str, Any]]) -> Callable[[Step, Call], Call]:
    """Change the call's inputs (the same for sync and async calls)."""
    def wrap(step: Step, call: Call) -> Call:
        return lambda **inputs: call(**change(step, inputs))
    return wrap


def _within(context: Callable[[Step], Any]) -> Callable[[Step, Call], Call]:
    """Make the call inside ``context(step)``, a context manager, held until the call returns."""
    def wrap(step: Step, call: Call) -> Call:
        if step.is_async:
            async def arun(**inputs: Any) -> Any:
                with context(step):
                    return await call(**inputs)
            return arun

        def run(**inputs: Any) -> Any:
            with context(step):
                return call(**inputs)
        return run
    return wrap


def _repeat(step: Step, call: Call) -> Call:
    """Ask again until a reply can run (`attempts`)."""
    if step.is_async:
        return lambda **inputs: attempts.apredict_step(call, step.session, inputs)
    return lambda **inputs: attempts.predict_step(call, step.session, inputs)


def _cache_marked(step: Step, call: Call) -> Call:
    """Mark the prompt's stable head, unmarked again if the client refuses the mark (`caching`)."""
    if step.is_async:
        return lambda **inputs: caching.acall_marked(step.lm, inputs, lambda one: call(**one))
    return lambda **inputs: caching.call_marked(step.lm, inputs, lambda one: call(**one))


def _stopped(step: Step, call: Call) -> Call:
    """End the reply at the adapter's end marker, where the provider takes a stop sequence (`stop_sequences`)."""
    if step.is_async:
        return lambda **inputs: stop_sequences.acall_stopped(step.lm, inputs, lambda one: call(**one))
    return lambda **inputs: stop_sequences.call_stopped(step.lm, inputs, lambda one: call(**one))


def _streamed(step: Step, call: Call) -> Call:
    """Stream the reply into the run's events while the model writes it (`step_streaming`)."""
    return lambda **inputs: streaming.call(step.predictor, step.lm, inputs, lambda: call(**inputs))


def _spend_admission(step: Step) -> Any:
    return spend.budget_of(step.run).calls_allowed()


def _capped(step: Step) -> bool:
    budget = spend.budget_of(step.run)
    return budget is not None and budget.capped


def _steered(step: Step) -> bool:
    return steering.steering_of(step.run) is not None


# ------------------------------------------------------------ the pipeline, outermost first
STEP_PIPELINE: tuple[Layer, ...] = (
    Layer("remember inputs",
          "first: if a cap or a stop ends the run before this step runs, its final answer is made from these",
          lambda step: step.session is not None, _before(lambda step: ending.remember(step.session, step.inputs))),
    Layer("stop check",
          "before anything is spent: the user's stop button ends the run at this step boundary",
          _steered, _before(lambda step: steering.check_stop(step.session))),
    Layer("stall check",
          "before anything is spent, after the stop: an agent whose last steps were one step repeated ends now, "
          "its answer taken from what it has (`ending.Stalled`), not after every step it has left",
          lambda step: step.session is not None and len(step.session.run.steps) >= ending.STALL_STEPS,
          _before(lambda step: ending.check_stall(step.session))),
    Layer("spend admission",
          "the tree's caps reserve this step's call once; the retries below re-check the caps themselves",
          _capped, _within(_spend_admission)),
    Layer("attempts",
          "outside everything that shapes one request: an unreadable reply or a context-length error asks "
          "again with a fresh request, each re-checking the caps",
          lambda step: True, _repeat),
    Layer("compaction",
          "per request, inside attempts: a context-length retry compacts harder and the next request sees it",
          lambda step: compaction.compactor_for(step.session) is not None,
          _inputs(lambda step, inputs: compaction.compact(step.session, inputs))),
    Layer("user notes",
          "after compaction: the user's notes follow the (compacted) history, so compaction never drops them",
          _steered, _inputs(lambda step, inputs: steering.before_step(step.session, inputs))),
    Layer("kept for --last",
          "after everything that changes the inputs: what is sent is what %deepagent_prompt --last shows",
          lambda step: step.session is not None, _inputs(lambda step, inputs: _keep_request(step, inputs))),
    Layer("end marker as stop",
          "on the final request: the provider stops writing at [[ ## completed ## ]], not at the token limit; "
          "a provider that rejects the stop is asked again without it",
          lambda step: stop_sequences.stop_for(step.lm) is not None, _stopped),
    Layer("cache marks",
          "on the final request: the stable head of exactly what is sent is marked for the provider's cache",
          lambda step: caching.prompt_cache_for(step.lm) is not None, _cache_marked),
    Layer("streaming",
          "innermost, around the provider call itself: the reply is shown while the model writes it",
          lambda step: not step.is_async and step.run is not None and streaming.wanted(step.run)
          and streaming.can_stream(step.lm), _streamed),
)


def compose(step: Step, call: Call, layers: tuple[Layer, ...] | None = None) -> Call:
    """``call`` wrapped in every layer (of `STEP_PIPELINE`) that applies to ``step``, the first outermost."""
    for layer in reversed(STEP_PIPELINE if layers is None else layers):
        if layer.applies(step):
            call = layer.wrap(step, call)
    return call


class StepPredict(dspy.Predict):
    """RLM's action predictor, its call made through `STEP_PIPELINE`, each step reported to the run active
    in the calling thread (one predictor serves every run of a shared agent: sub-agents share built templates).

    `observe_steps` turns the RLM's own predictor into one (same object, same signature, demos and state):
    the one place this package touches RLM's structure (a DSPy callback would see the same calls, but DSPy
    then inspects the arguments of every module, adapter and LM call: ~0.1 ms a step).
    """

    def forward(self, **kwargs: Any) -> Any:
        kwargs = rlm_seam.one_text(kwargs)  # the run's inputs as the one text the model reads
        step = self._step(kwargs, is_async=False)
        plain = compose(step, lambda **inputs: super(StepPredict, self).forward(**inputs))
        return _report(step, plain(**kwargs))

    async def aforward(self, **kwargs: Any) -> Any:
        kwargs = rlm_seam.one_text(kwargs)
        step = self._step(kwargs, is_async=True)
        plain = compose(step, lambda **inputs: super(StepPredict, self).aforward(**inputs))
        return _report(step, await plain(**kwargs))

    def _step(self, kwargs: dict[str, Any], is_async: bool) -> Step:
        return Step(self, _session.active(), kwargs, caching.step_lm(self, kwargs), is_async)


def _report(step: Step, prediction: Any) -> Any:
    """The step opens on the run (``step_started``) with the reasoning and code RLM is about to run: the code
    without its Markdown fences, exactly as it will run (`rlm_seam.as_run`)."""
    if prediction is not None and isinstance(getattr(prediction, "code", None), str):
        prediction.code = rlm_seam.as_run(prediction.code)
    if step.session is not None and prediction is not None:
        step.session.run.begin_step(getattr(prediction, "reasoning", "") or "", str(getattr(prediction, "code", "") or ""))
    return prediction


def _keep_request(step: Step, inputs: dict[str, Any]) -> dict[str, Any]:
    """Keep what the step's request is made of (references only), for ``%deepagent_prompt --last``."""
    step.session.run.last_action = (step.predictor, inputs)
    return inputs


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


def observe_steps(rlm: Any) -> None:
    """Make the RLM's action predictor a `StepPredict` (idempotent)."""
    predictor = rlm.generate_action
    if type(predictor) is dspy.Predict:
        predictor.__class__ = StepPredict


def describe() -> str:
    """The pipeline as a reader sees it: one line per layer, outermost first (docs/architecture.md)."""
    return "\n".join(f"{i}. {layer.name}: {layer.why}" for i, layer in enumerate(STEP_PIPELINE, 1))

