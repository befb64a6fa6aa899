"""One model call as the pipeline sees it, and what a layer around it is (the one list is core/loop/pipeline.py).

Every call the package makes to a model goes through one list of layers, `core.loop.pipeline.PIPELINE`,
outermost first; a `Layer` says which kinds of call it wraps and, for each call, whether it applies.
A call enters the list where it starts, as a `ModelCall` of its kind:

- `STEP`: one agent step, the action predictor's call (`core.loop.pipeline.StepPredict`);
- `QUERY`: one ``llm_query`` prompt, each prompt of ``llm_query_batched`` too (`core.loop.rlm_seam`);
- `REQUEST`: one request a run's LM sends, whoever made it: a step's, a query's, compaction's summary, a
  facade predictor's (the run's LM, `core.model.retries.with_retries`);
- `FACADE`: one call a predictor built with DSPy's sandbox facade makes to the host LM
  (`core.model.facade_requests`);
- `DIRECT`: one call the agent's code makes to an LM object itself (``interpreters/runtime_checks/lm_calls.py``).

This module holds only the shapes, so that the rooms below the loop can make a call through the list
they are handed (a ``Through``) without importing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

STEP = "step"
QUERY = "query"
REQUEST = "request"
FACADE = "facade"
DIRECT = "direct"
KINDS = (STEP, QUERY, REQUEST, FACADE, DIRECT)
Call = Callable[..., Any]  # the call itself: a step's call(**inputs), a request's call(*args, **kwargs)


@dataclass
class ModelCall:
    """One call to a model as it goes through the pipeline."""

    predictor: Any  # a step's: the StepPredict (None for other kinds)
    session: Any  # the run's session (None outside a run, or where the call does not know it)
    inputs: dict[str, Any]  # a step's: what RLM passed; a query's: {"prompt": text}; others: {}
    lm: Any  # the LM the call will use (a layer may replace it: the innermost call reads it then)
    is_async: bool
    kind: str = STEP
    owner: Any = None  # the run the call counts for, when it has no session (a request's, a direct call's)

    @property
    def run(self) -> Any:
        if self.owner is not None:
            return self.owner
        return self.session.run if self.session is not None else None


@dataclass(frozen=True)
class Layer:
    """One layer: its name, why it sits where it does, which calls it wraps, and how.

    ``wrap(call, next)`` returns the call made through it: ``next`` takes the same arguments (and, on the
    async path, returns a coroutine). ``applies(call)`` is asked once per call, before anything runs: a
    layer that does not apply is not built."""

    name: str
    why: str
    applies: Callable[[ModelCall], bool]
    wrap: Callable[[ModelCall, Call], Call]
    kinds: frozenset[str] = frozenset(KINDS)

    def applies_to(self, call: ModelCall) -> bool:
        return call.kind in self.kinds and self.applies(call)


Through = Callable[[ModelCall, Call], Call]  # a call made through a list of layers (the pipeline's `through`)


def compose(call: ModelCall, next_call: Call, layers: Iterable[Layer]) -> Call:
    """``next_call`` wrapped in every layer of ``layers`` that applies to ``call``, the first outermost."""
    for layer in reversed(list(layers)):
        if layer.applies_to(call):
            next_call = layer.wrap(call, next_call)
    return next_call


def plain(call: ModelCall, next_call: Call) -> Call:
    """The call through no layer (a ``Through`` for code used outside a run)."""
    return next_call


# ------------------------------------------------------------ the shapes a layer takes
def before(action: Callable[[ModelCall], None]) -> Callable[[ModelCall, Call], Call]:
    """Run ``action`` once, before the call (it may raise to refuse it)."""
    def wrap(call: ModelCall, next_call: Call) -> Call:
        def run(*args: Any, **kwargs: Any) -> Any:
            action(call)
            return next_call(*args, **kwargs)  # on the async path: the coroutine, awaited by the caller
        return run
    return wrap


def with_inputs(change: Callable[[ModelCall, dict[str, Any]], dict[str, Any]]) -> Callable[[ModelCall, Call], Call]:
    """Change a step's inputs (the same for sync and async calls)."""
    def wrap(call: ModelCall, next_call: Call) -> Call:
        return lambda **inputs: next_call(**change(call, inputs))
    return wrap


def within(context: Callable[[ModelCall], Any]) -> Callable[[ModelCall, Call], Call]:
    """Make the call inside ``context(call)``, a context manager, held until the call returns."""
    def wrap(call: ModelCall, next_call: Call) -> Call:
        if call.is_async:
            async def arun(*args: Any, **kwargs: Any) -> Any:
                with context(call):
                    return await next_call(*args, **kwargs)
            return arun

        def run(*args: Any, **kwargs: Any) -> Any:
            with context(call):
                return next_call(*args, **kwargs)
        return run
    return wrap
