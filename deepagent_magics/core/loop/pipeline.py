"""The one pipeline: what wraps every call to a model, in order, in one place.

Every model call enters `PIPELINE` where it starts, as a `calls.ModelCall` of its kind (`core.model.calls`):
an agent step (`StepPredict`: RLM calls its action predictor once per iteration, and `observe_steps` makes
that predictor one), an ``llm_query`` prompt (`rlm_seam`'s sub-LM), each request the run's LM sends
(`retries.with_retries`), a facade predictor's call (`facade_requests`) and the agent's code calling an LM
itself (``interpreters/runtime_checks/lm_calls.py``). Each layer says why it sits where it does and which
calls it wraps; the sync and async paths run the same list (`compose`), and a layer whose ``applies`` is
false for a call is not built at all, so a call pays only for what it uses (no caps: no admission; fewer
steps than a stall takes: no stall check; no streaming wanted: no stream wrapper; no notes: no history
rewrite). Approval is not a layer here: it reviews the code a step returns, in the interpreter.

A capability's own layers (`core.loop.capability`: a user's, tracing) run at one place of the list, around
every step and every query alike (``capabilities``). When a step's pipeline returns, the step opens on the
run (``step_started``) and RLM runs its code. `tests/core/test_dspy_contract.py` fails loudly if RLM stops
calling ``generate_action`` once per step, or its ``llm_query`` stops calling its sub-LM.
"""

from __future__ import annotations

from typing import Any, Callable

import dspy

from ..model import caching, compaction, stop_sequences, streaming
from ..model.calls import (DIRECT, FACADE, QUERY, REQUEST, STEP, Call, Layer, ModelCall, before, compose as _compose,
                           with_inputs, within)
from ..model.replies import action_adapter
from ..model.retries import RETRIES
from ..model.usage_sink import counted, counting
from ..policy import spend, steering
from ..run import session as _session
from . import attempts, ending, rlm_seam

Step = ModelCall  # one step's call (kind STEP), as the step's layers see it


def _repeat(step: ModelCall, call: Call) -> Call:
    """Ask again until a reply can run (`attempts`)."""
    if step.is_async:
        return lambda **inputs: attempts.apredict_step(call, step.session, inputs)
    return lambda **inputs: attempts.predict_step(call, step.session, inputs)


def _cache_marked(step: ModelCall, call: Call) -> Call:
    """Mark the prompt's stable head, unmarked again if the client refuses the mark (`caching`)."""
    if step.is_async:
        return lambda **inputs: caching.acall_marked(step.lm, inputs, lambda one: call(**one))
    return lambda **inputs: caching.call_marked(step.lm, inputs, lambda one: call(**one))


def _stopped(step: ModelCall, call: Call) -> Call:
    """End the reply at the adapter's end marker, where the provider takes a stop sequence (`stop_sequences`)."""
    if step.is_async:
        return lambda **inputs: stop_sequences.acall_stopped(step.lm, inputs, lambda one: call(**one))
    return lambda **inputs: stop_sequences.call_stopped(step.lm, inputs, lambda one: call(**one))


def _streams(call: ModelCall) -> bool:
    if call.kind == QUERY:
        return streaming.query_streams(call)
    return not call.is_async and call.run is not None and streaming.wanted(call.run) and streaming.can_stream(call.lm)


def _streamed(call: ModelCall, next_call: Call) -> Call:
    """Stream the reply into the run's events while the model writes it (`streaming`)."""
    if call.kind == QUERY:
        return streaming.streamed_query(call, next_call)
    return lambda **inputs: streaming.call(call.predictor, call.lm, inputs, lambda: next_call(**inputs))


def _admits(call: ModelCall) -> bool:
    """Whether the tree's caps admit this call here: a step always; a facade's or the agent's own call unless a
    call of this thread is in flight already (a predictor's own request, a query the tool admitted)."""
    budget = spend.budget_of(call.run)
    return budget is not None and budget.capped and (call.kind == STEP or not budget.holding())


def _uncounted(call: ModelCall) -> bool:
    return call.run is not None and _admits(call) and not counted()


def _steered(step: ModelCall) -> bool:
    return steering.steering_of(step.run) is not None


def _capability_layers(call: ModelCall) -> list[Layer]:
    agent = getattr(call.session, "agent", None)
    extensions = getattr(agent, "extensions", None)
    return extensions.layers() if extensions is not None else []


def _through_capabilities(call: ModelCall, next_call: Call) -> Call:
    """The layers of the agent's capabilities, in the order it was given them (`Extensions.layers`)."""
    return _compose(call, next_call, _capability_layers(call))


# ------------------------------------------------------------ the pipeline, outermost first
PIPELINE: tuple[Layer, ...] = (
    Layer("remember inputs",
          "first: if a cap or a stop ends the run before this step runs, its final answer is made from these",
          lambda step: step.session is not None, before(lambda step: ending.remember(step.session, step.inputs)),
          frozenset({STEP})),
    Layer("stop check",
          "before anything is spent: the user's stop button ends the run at this step boundary",
          _steered, before(lambda step: steering.check_stop(step.session)), frozenset({STEP})),
    Layer("stall check",
          "before anything is spent, after the stop: an agent whose last steps were one step repeated ends now, "
          "its answer taken from what it has (`ending.Stalled`), not after every step it has left",
          lambda step: step.session is not None and len(step.session.run.steps) >= ending.STALL_STEPS,
          before(lambda step: ending.check_stall(step.session)), frozenset({STEP})),
    Layer("spend admission",
          "the tree's caps reserve the call once (an llm_query is admitted where the agent calls the tool, a batch "
          "for all its prompts: `spend.guard_tool`); the retries below re-check the caps themselves",
          _admits, within(lambda call: spend.budget_of(call.run).calls_allowed()), frozenset({STEP, FACADE, DIRECT})),
    Layer("usage",
          "inside the admission: a call the agent's code makes on an LM of its own, from a thread of its own, is "
          "counted on its run (the run's own calls are, by the sink its loop runs with: `usage_sink`)",
          _uncounted, within(lambda call: counting(call.run)), frozenset({DIRECT})),
    Layer("attempts",
          "outside everything that shapes one request: an unreadable reply or a context-length error asks "
          "again with a fresh request, each re-checking the caps",
          lambda step: True, _repeat, frozenset({STEP})),
    Layer("compaction",
          "per request, inside attempts: a context-length retry compacts harder and the next request sees it",
          lambda step: compaction.compactor_for(step.session) is not None,
          with_inputs(lambda step, inputs: compaction.compact(step.session, inputs)), frozenset({STEP})),
    Layer("user notes",
          "after compaction: the user's notes follow the (compacted) history, so compaction never drops them",
          _steered, with_inputs(lambda step, inputs: steering.before_step(step.session, inputs)), frozenset({STEP})),
    Layer("capabilities",
          "around every step and every query alike, after what the package changes of a step's inputs and before "
          "it is kept for --last: a capability's own layers (a user's, tracing) see the call as it is sent",
          lambda call: bool(_capability_layers(call)), _through_capabilities, frozenset({STEP, QUERY})),
    Layer("kept for --last",
          "after everything that changes the inputs: what is sent is what %deepagent_prompt --last shows",
          lambda step: step.session is not None, with_inputs(lambda step, inputs: _keep_request(step, inputs)),
          frozenset({STEP})),
    Layer("end marker as stop",
          "on the final request: the provider stops writing at [[ ## completed ## ]], not at the token limit; "
          "a provider that rejects the stop is asked again without it",
          lambda step: stop_sequences.stop_for(step.lm) is not None, _stopped, frozenset({STEP})),
    Layer("cache marks",
          "on the final request: the stable head of exactly what is sent is marked for the provider's cache",
          lambda step: caching.prompt_cache_for(step.lm) is not None, _cache_marked, frozenset({STEP})),
    Layer("streaming",
          "innermost of a step or a query, around the provider call itself: the reply is shown while the model "
          "writes it",
          _streams, _streamed, frozenset({STEP, QUERY})),
    RETRIES,  # around each request the run's LM sends (core.model.retries)
)
STEP_PIPELINE = PIPELINE  # the name it had when only steps went through it


def compose(call: ModelCall, next_call: Call, layers: tuple[Layer, ...] | None = None) -> Call:
    """``next_call`` wrapped in every layer (of `PIPELINE`) that applies to ``call``, the first outermost."""
    return _compose(call, next_call, PIPELINE if layers is None else layers)


def through(call: ModelCall, next_call: Call) -> Call:
    """``call`` made through `PIPELINE` (a `calls.Through`, handed to the rooms below that start calls)."""
    return _compose(call, next_call, PIPELINE)


def layers_for(kind: str) -> tuple[Layer, ...]:
    """The layers of `PIPELINE` that may wrap a call of ``kind`` (a run's LM keeps those of a `REQUEST`)."""
    return tuple(layer for layer in PIPELINE if kind in layer.kinds)


class StepPredict(dspy.Predict):
    """RLM's action predictor, its call made through `PIPELINE`, each step reported to the run active
    in the calling thread (one predictor serves every run of a shared agent: sub-agents share built templates).

    `observe_steps` turns the RLM's own predictor into one (same object, same signature, demos and state):
    the one place this package touches RLM's structure (a DSPy callback would see the same calls, but DSPy
    then inspects the arguments of every module, adapter and LM call: ~0.1 ms a step).
    """

    def forward(self, **kwargs: Any) -> Any:
        kwargs = _as_read(kwargs)
        step = self._step(kwargs, is_async=False)
        plain = compose(step, lambda **inputs: super(StepPredict, self).forward(**inputs))
        return _report(step, plain(**kwargs))

    async def aforward(self, **kwargs: Any) -> Any:
        kwargs = _as_read(kwargs)
        step = self._step(kwargs, is_async=True)
        plain = compose(step, lambda **inputs: super(StepPredict, self).aforward(**inputs))
        return _report(step, await plain(**kwargs))

    def _step(self, kwargs: dict[str, Any], is_async: bool) -> ModelCall:
        return ModelCall(self, _session.active(), kwargs, caching.step_lm(self, kwargs), is_async, STEP)


def _as_read(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The run's inputs as the one text the model reads, and its REPL history as `compaction.Steps` (each step
    said once, no labels restated), before any layer sees them."""
    kwargs = rlm_seam.one_text(kwargs)
    if "repl_history" in kwargs:
        kwargs = {**kwargs, "repl_history": compaction.as_steps(kwargs["repl_history"])}
    return kwargs


def _report(step: ModelCall, prediction: Any) -> Any:
    """The step opens on the run (``step_started``) with the reasoning and code RLM is about to run: the code
    without its Markdown fences, exactly as it will run (`rlm_seam.as_run`)."""
    if prediction is not None and isinstance(getattr(prediction, "code", None), str):
        prediction.code = rlm_seam.as_run(prediction.code)
    if step.session is not None and prediction is not None:
        step.session.run.begin_step(getattr(prediction, "reasoning", "") or "", str(getattr(prediction, "code", "") or ""))
    return prediction


def _keep_request(step: ModelCall, inputs: dict[str, Any]) -> dict[str, Any]:
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
    """The pipeline as a reader sees it: one line per layer, outermost first, with the calls it wraps
    (docs/architecture.md)."""
    def kinds(layer: Layer) -> str:
        return ", ".join(kind for kind in (STEP, QUERY, REQUEST, FACADE, DIRECT) if kind in layer.kinds)

    return "\n".join(f"{i}. {layer.name} ({kinds(layer)}): {layer.why}" for i, layer in enumerate(PIPELINE, 1))

