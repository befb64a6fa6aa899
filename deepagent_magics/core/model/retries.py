"""Provider faults: a rate limit, a server error, a timeout, a dropped connection are retried, boundedly.

DSPy's own client retries transient errors ``num_retries`` times, but it sleeps as long as a
``Retry-After`` header says (an hour, if the provider says so) and the run cannot say what it
is waiting for. So for a run, a ``dspy.LM`` is used through a copy with DSPy's retries off (`with_retries`,
a `RunLM`) whose every request goes through the pipeline's layers for a request
(`core.loop.pipeline`), among them `RETRIES`: every LM call of the run (each step, ``llm_query``,
the compaction summary, sub-agents) waits ``Retry-After`` when the provider gives one and it is at
most `RetryPolicy.max_wait`, else an exponential backoff; a rate limit that asks for longer fails
at once, saying so. Each wait is a ``provider_retry`` event on the run (data: attempt, wait,
cause, retries: the most there will be), so the status line can say what the run is waiting for.

A retry waits and asks within the run tree's spend caps (`spend`): the wait looks at the caps
every `spend.WAIT_SLICE` seconds and once more before the request (`spend.check_retry`), so a provider
that keeps failing cannot carry a run past a cap (`CapReached`, the reason a step would get).

Tune it per agent (``agent.retry_policy = RetryPolicy(retries=5, max_wait=120)``) or for every
agent (``DeepAgent.retry_policy = ...``). Other LMs (a `ScriptedLM`, a custom engine or ``BaseLM``)
are used as they are, with DSPy's own retries.

The dashboard shows them with display/retries.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import dspy
from dspy.utils.exceptions import LMError, is_retryable_lm_error

from ..policy.spend import WAIT_SLICE, budget_of, check_retry
from ..run.event_kinds import PROVIDER_RETRY
from .calls import REQUEST, Call, Layer, ModelCall, compose


@dataclass(frozen=True)
class RetryPolicy:
    """How a run retries provider faults.

    Args:
        retries: extra attempts per LM call after a transient fault (429, 5xx, timeout, reset);
            None: the LM's own ``num_retries`` (``dspy.LM(..., num_retries=3)``).
        base_delay: the first backoff in seconds when the provider gives no ``Retry-After``; doubles each time.
        max_wait: the longest single wait in seconds; a ``Retry-After`` above it fails the call at once.
    """

    retries: int | None = None
    base_delay: float = 1.0
    max_wait: float = 60.0

    def delay(self, exc: BaseException, attempt: int) -> float | None:
        """Seconds to wait before retry ``attempt`` (1-based), or None: do not retry."""
        if attempt > (self.retries or 0) or not is_retryable_lm_error(exc):
            return None
        hint = getattr(exc, "retry_after", None)
        if isinstance(hint, (int, float)) and hint >= 0:
            return float(hint) if hint <= self.max_wait else None
        return min(self.base_delay * 2 ** (attempt - 1), self.max_wait)


def _retry_wait(lm: Any, exc: BaseException, attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` of a call on the run's LM ``lm``, announced on its run; the
    fault itself when it is not to be retried."""
    policy = lm._deepagent_policy
    wait = policy.delay(exc, attempt)
    if wait is None:
        if is_retryable_lm_error(exc):  # for the run's one-line reason (failures.py)
            exc.deepagent_attempts = attempt
            exc.deepagent_policy = policy
        raise exc
    run = lm._deepagent_run
    if run is not None:
        run.emit(PROVIDER_RETRY, attempt=attempt, wait=wait, cause=cause(exc), retries=policy.retries)
    return wait


def retried(call: ModelCall, next_call: Call) -> Call:
    """The request ``next_call``, made again after a transient fault by the policy of the run's LM: never after a
    streamed reply was shown, each retry within the tree's caps, each wait sliced to look at them."""
    lm, run = call.lm, call.lm._deepagent_run
    if call.is_async:
        async def aretry(*args: Any, **kwargs: Any) -> Any:
            attempt = 0
            while True:
                emitted = _progress()
                try:
                    if attempt:  # the first request was admitted by its caller (a step, ``llm_query``)
                        check_retry(run)
                    with emitted as progress:
                        return await next_call(*args, **kwargs)
                except LMError as exc:
                    if getattr(progress, "emitted", False):
                        raise
                    attempt += 1
                    for pause in _pauses(run, _retry_wait(lm, exc, attempt)):
                        await asyncio.sleep(pause)
        return aretry

    def retry(*args: Any, **kwargs: Any) -> Any:
        attempt = 0
        while True:
            emitted = _progress()
            try:
                if attempt:  # the first request was admitted by its caller (a step, ``llm_query``)
                    check_retry(run)
                with emitted as progress:
                    return next_call(*args, **kwargs)
            except LMError as exc:
                if getattr(progress, "emitted", False):
                    raise  # never replay after a streamed reply was shown
                attempt += 1
                for pause in _pauses(run, _retry_wait(lm, exc, attempt)):
                    time.sleep(pause)
    return retry


RETRIES = Layer("retries",
                "innermost, around each request the run's LM sends (a step's, an llm_query's, compaction's, a facade "
                "predictor's): a provider fault is asked again, waiting as the provider says, within the caps",
                lambda call: policy_of(call.lm) is not None, retried, frozenset({REQUEST}))


def policy_of(lm: Any) -> RetryPolicy | None:
    """The retry policy of a run's LM (None: not a run's copy, DSPy's own retries apply)."""
    return getattr(lm, "_deepagent_policy", None) if isinstance(lm, RunLM) else None


class RunLM:
    """Mixed in front of a ``dspy.LM`` subclass (`with_retries`): each request goes through the layers the run
    gives it (the pipeline's for `REQUEST`: `RETRIES` by default)."""

    _deepagent_policy: RetryPolicy
    _deepagent_run: Any
    _deepagent_layers: tuple[Layer, ...] = (RETRIES,)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = ModelCall(None, None, {}, self, False, REQUEST, self._deepagent_run)
        return compose(call, super().__call__, self._deepagent_layers)(*args, **kwargs)  # type: ignore[misc]

    async def acall(self, *args: Any, **kwargs: Any) -> Any:
        call = ModelCall(None, None, {}, self, True, REQUEST, self._deepagent_run)
        return await compose(call, super().acall, self._deepagent_layers)(*args, **kwargs)  # type: ignore[misc]


def _pauses(run: Any, wait: float) -> Iterator[float]:
    """The sleeps that make up a retry's ``wait``: one, or with spend caps slices between which the caps are
    looked at (`CapReached` as soon as one is reached: no one waits for a retry that may not start)."""
    budget = budget_of(run)
    capped = budget is not None and budget.capped
    deadline = time.monotonic() + wait
    while True:
        if capped:
            budget.check()
        left = deadline - time.monotonic()
        if left <= 0:
            return
        yield min(left, WAIT_SLICE) if capped else left


def _progress() -> Any:
    """DSPy's record of whether a streamed reply has shown anything (a no-op when this DSPy has none)."""
    try:
        from dspy.clients.call_context import adapter_fallback_scope
    except ImportError:  # pragma: no cover - an older or newer DSPy
        return contextlib.nullcontext()
    return adapter_fallback_scope()


_classes: dict[type, type] = {}


def with_retries(lm: Any, run: Any, policy: RetryPolicy | None, layers: Iterable[Layer] = (RETRIES,)) -> Any:
    """For a run: ``lm`` (a ``dspy.LM``) as a copy whose requests go through ``layers`` (the pipeline's for a
    `REQUEST`; `RETRIES` among them retries by ``policy``, its waits heard of by ``run``)."""
    if policy is None or not isinstance(lm, dspy.LM) or not isinstance(getattr(lm, "_engine_spec", "auto"), str):
        return lm  # a custom engine (a ScriptedLM's) owns its connection: DSPy's own retries apply
    base = type(lm)
    if issubclass(base, RunLM):
        base = base.__mro__[2]  # a sub-agent gets its parent's copy: wrap what it wraps
    cls = _classes.get(base)
    if cls is None:
        cls = _classes[base] = type(base.__name__, (RunLM, base), {"__module__": base.__module__})
    if policy.retries is None:
        own = lm._deepagent_policy.retries if isinstance(lm, RunLM) else getattr(lm, "num_retries", 3)
        policy = replace(policy, retries=own)
    try:
        copy = lm.copy(num_retries=0)
    except (TypeError, ValueError):  # an LM that refuses to be copied is used as it is
        return lm
    copy.__class__ = cls
    copy._deepagent_policy = policy
    copy._deepagent_run = run
    copy._deepagent_layers = tuple(layers)
    copy._deepagent_origin = getattr(lm, "_deepagent_origin", lm)  # the user's LM (what `caching` remembers)
    return copy


def cause(exc: BaseException) -> str:
    """A provider fault in a few words: ``rate limited (429)``, ``server error (500)``, ``connection reset``."""
    status = getattr(exc, "status", None)
    kind = type(exc).__name__
    first = str(getattr(exc, "message", "") or exc).strip().splitlines()
    detail = first[0].removeprefix(f"{kind}: ") if first else ""
    detail = detail if len(detail) <= 200 else detail[:199] + "…"
    if kind == "LMRateLimitError":
        hint = getattr(exc, "retry_after", None)
        after = f", Retry-After {hint:g} s" if isinstance(hint, (int, float)) else ""
        return f"rate limited ({status or 429}{after})"
    if kind == "LMServerError":
        return f"server error ({status or '5xx'}): {detail}"
    if kind == "LMTimeoutError" or "timed out" in detail or "timeout" in detail.lower():
        return "the provider did not answer in time (timeout)"
    if kind == "LMTransportError":
        return f"connection failed: {detail}"
    return f"{kind}: {detail}"
