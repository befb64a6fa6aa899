"""Where a step's reply ends: the adapter's end marker is sent as a stop sequence, to the models that accept one.

A step's reply ends with ``[[ ## completed ## ]]`` (`replies.COMPLETED`). A small model often writes
on after it (the bundled 1.5B one, ``--lm local``, until the 2,000-token limit: minutes of a step
on text nobody reads), and every provider bills what was written. So each step's request carries
the marker as ``stop`` (`stop_for`): the server ends the reply there and leaves the marker out of
it, and the adapter reads the reply without it (its sections end at the end of the text).

Sent to DSPy's own client for a chat model (the local server, OpenAI-compatible servers, OpenAI,
Anthropic, Gemini, ...), added to a ``stop`` the user's LM already has; not sent:

- to the families in `REFUSE_STOP`, the one list of models known to reject the parameter (a test per family);
- to an LM that is not DSPy's client (a ``BaseLM`` of the user's may not take ``stop``) or not a chat model
  (the Responses API has no ``stop``);
- to an LM whose provider refused it once (`refuses`): a request the provider rejects naming ``stop``
  (`is_refusal`) is made again without it, and that LM is not sent one again in this process.

Only the agent's own steps carry it (`core.loop.pipeline`): ``llm_query`` prompts are the model's
free text, where the marker means nothing.
"""

from __future__ import annotations

import re
import threading
import weakref
from typing import Any

import dspy

from .replies import COMPLETED

MAX_STOPS = 4  # OpenAI's limit on stop sequences (the strictest provider's)

# The one list of model families that reject ``stop`` (matched against the model id's last part):
# OpenAI's reasoning models (DSPy's own pattern for them, `dspy.clients.lm._is_openai_reasoning_model`, and
# o1-preview), which answer 400 "Unsupported parameter: 'stop'", though LiteLLM's parameter table lists it
# for the o-series; and xAI's reasoning models, which LiteLLM's table leaves it out for.
REFUSE_STOP: dict[str, re.Pattern[str]] = {
    "OpenAI reasoning models (o1, o3, o4-mini, gpt-5, not gpt-5-chat)":
        re.compile(r"o[1-9](?:-[\w.-]+)?|gpt-5(?:\.\d+)*(?!-chat)(?:-[\w.-]+)?", re.IGNORECASE),
    "xAI reasoning models (grok-3-mini, grok-4, grok-code-fast)":
        re.compile(r"grok-(?:3-mini|4|code-fast)(?:[\w.-]*)", re.IGNORECASE),
}

_refused: "weakref.WeakSet[Any]" = weakref.WeakSet()  # LMs whose provider rejected a stop sequence
_lock = threading.Lock()


def family_refusing(model: str) -> str | None:
    """The `REFUSE_STOP` family ``model`` (``openai/o3``, ``azure/gpt-5-mini``) belongs to, or None."""
    name = str(model).strip().rsplit("/", 1)[-1]
    return next((family for family, pattern in REFUSE_STOP.items() if pattern.fullmatch(name)), None)


def stop_for(lm: Any) -> list[str] | None:
    """The ``stop`` to send with a step's request to ``lm`` (the user's own first, then the marker), or None."""
    if not isinstance(lm, dspy.LM) or getattr(lm, "model_type", "chat") != "chat":
        return None
    if family_refusing(getattr(lm, "model", "")) is not None:
        return None
    with _lock:
        if _origin(lm) in _refused:
            return None
    own = (getattr(lm, "kwargs", None) or {}).get("stop")
    own = [own] if isinstance(own, str) else list(own or [])
    if COMPLETED in own:
        return own
    return [*own[: MAX_STOPS - 1], COMPLETED]


def with_stop(kwargs: dict[str, Any], stop: list[str]) -> dict[str, Any]:
    """A step's call ``kwargs`` with ``stop`` in its ``config`` (a ``stop`` the caller gave wins)."""
    config = dict(kwargs.get("config") or {})
    config.setdefault("stop", stop)
    return {**kwargs, "config": config}


def is_refusal(exc: BaseException) -> bool:
    """Whether ``exc`` is a provider (or DSPy) rejecting the request because of its ``stop``."""
    from dspy.utils.exceptions import ContextWindowExceededError, LMInvalidRequestError, LMUnsupportedFeatureError

    if not isinstance(exc, (LMInvalidRequestError, LMUnsupportedFeatureError)) or isinstance(
            exc, ContextWindowExceededError):
        return False
    named = [str(feature) for feature in getattr(exc, "features", None) or ()]
    text = " ".join([str(getattr(exc, "message", None) or exc), *named])  # not the model's name DSPy puts first
    return re.search(r"\bstop\b", text, re.IGNORECASE) is not None


def refuses(lm: Any) -> None:
    """``lm``'s provider rejected a stop sequence: send it none from now on."""
    with _lock:
        try:
            _refused.add(_origin(lm))
        except TypeError:
            pass


def _origin(lm: Any) -> Any:
    """The user's LM behind a run's copy of it (`retries.with_retries`): a refusal outlives the run."""
    return getattr(lm, "_deepagent_origin", lm)


def call_stopped(lm: Any, kwargs: dict[str, Any], call: Any) -> Any:
    """``call(kwargs)`` with the end marker as a stop sequence where ``lm`` takes one; without it if refused."""
    stop = stop_for(lm)
    if stop is None:
        return call(kwargs)
    try:
        return call(with_stop(kwargs, stop))
    except Exception as exc:
        if not is_refusal(exc):
            raise
        refuses(lm)
        return call(kwargs)


async def acall_stopped(lm: Any, kwargs: dict[str, Any], call: Any) -> Any:
    """`call_stopped` for an async ``call``."""
    stop = stop_for(lm)
    if stop is None:
        return await call(kwargs)
    try:
        return await call(with_stop(kwargs, stop))
    except Exception as exc:
        if not is_refusal(exc):
            raise
        refuses(lm)
        return await call(kwargs)
