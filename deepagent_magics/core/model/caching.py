"""Prompt caching: the stable head of every step's prompt is marked for the provider's cache.

Each step of a run sends the same system message (the instructions, the tool docs and the
field descriptions), then the inputs, then the REPL history, which only grows. Providers
cache a prompt's prefix: OpenAI and most OpenAI-compatible servers do it by themselves for a
long enough prefix that is byte-identical from call to call; Anthropic caches up to a block
marked ``cache_control``. So:

- nothing in the head of the prompt changes from step to step: step N+1's request is step N's
  with the newest step added, byte for byte, except for its tail (the iteration counter
  after the history; at step 1, the line saying there is no history yet),
  and except where the history itself is rewritten (compaction, the user's notes, a retry's
  format note) (``tests/adversarial/test_prompt_caching.py`` checks it; ``bench/prompt_cache.py``
  measures the share, and ``bench/local_model.py`` what the local server reads);
- for an Anthropic model the action predictor asks DSPy's client for
  ``prompt_cache=CacheConfig(prefix="stable")`` (`prompt_cache_for`), which puts the mark on
  the system block; an LM the user gave its own ``prompt_cache`` keeps it, and an LM whose
  request cannot carry it (DSPy refuses ``prompt_cache`` on its LiteLLM path) is asked again
  without it, once, and not marked again;
- the cached input tokens the provider reports reach the run's usage (`cached_tokens`) and
  its cost (DSPy prices cached tokens at the provider's cache-read rate).
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

import dspy

MARKED_PROVIDERS = ("anthropic",)  # model-id prefixes whose requests carry cache_control marks
_refused: weakref.WeakSet[Any] = weakref.WeakSet()  # LMs that could not carry a mark
_lock = threading.Lock()


def prompt_cache_for(lm: Any) -> Any:
    """The ``prompt_cache`` setting to send with a step's LM call, or None to send none."""
    if not isinstance(lm, dspy.LM) or "prompt_cache" in (getattr(lm, "kwargs", None) or {}):
        return None  # not DSPy's client, or the user chose (``CacheConfig(mode="off")`` sends nothing)
    if getattr(lm, "_engine_spec", "auto") not in ("auto", "lm15") or getattr(lm, "model_type", "chat") != "chat":
        return None  # a custom engine (ScriptedLM), LiteLLM, a text model: no prompt_cache bridge
    if str(getattr(lm, "model", "")).split("/", 1)[0].lower() not in MARKED_PROVIDERS:
        return None  # caches long stable prefixes by itself
    with _lock:
        if _origin(lm) in _refused:
            return None
    from dspy.lm15 import CacheConfig

    return CacheConfig(prefix="stable")


def refused(lm: Any) -> None:
    """``lm`` could not carry the mark: do not ask it again."""
    with _lock:
        try:
            _refused.add(_origin(lm))
        except TypeError:
            pass


def _origin(lm: Any) -> Any:
    """The user's LM behind a run's copy of it (`retries.with_retries`): a refusal outlives the run."""
    return getattr(lm, "_deepagent_origin", lm)


def is_refusal(exc: BaseException) -> bool:
    """Whether DSPy refused to build the marked request (before sending anything; not a provider error).

    A request that only LiteLLM can send (a setting lm15 cannot carry) is refused once it has a
    ``prompt_cache``, under several messages; the same request unmarked goes through LiteLLM.
    """
    from dspy.utils.exceptions import LMUnsupportedFeatureError

    return isinstance(exc, LMUnsupportedFeatureError)


def _count(value: Any) -> int:
    try:
        count = int(value or 0)
    except (TypeError, ValueError):
        return 0
    return max(0, count)


def cached_tokens(usage: Any) -> int:
    """The input tokens a provider says it read from its cache, from a DSPy usage dict (0 if none).

    OpenAI-style ``prompt_tokens_details.cached_tokens`` (what DSPy's client reports for every
    provider) or Anthropic's own ``cache_read_input_tokens``; never more than the input tokens.
    """
    if not isinstance(usage, dict):
        return 0
    details = usage.get("prompt_tokens_details")
    found = _count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    found = found or _count(usage.get("cache_read_input_tokens"))
    inputs = _count(usage.get("prompt_tokens") or usage.get("input_tokens"))
    return min(found, inputs) if inputs else found


def stable_prefix_share(request: str, following: str) -> float:
    """The share of ``request`` that ``following`` starts with (what a prefix cache can reuse)."""
    if not request:
        return 1.0
    return len(os.path.commonprefix([request, following])) / len(request)


def step_lm(predict: Any, kwargs: dict[str, Any]) -> Any:
    """The LM a predictor call will use (as ``dspy.Predict`` picks it)."""
    return kwargs.get("lm") or getattr(predict, "lm", None) or dspy.settings.lm


def marked(kwargs: dict[str, Any], cache: Any) -> dict[str, Any]:
    """``kwargs`` with ``prompt_cache`` in the call's ``config`` (a config the caller gave wins)."""
    config = dict(kwargs.get("config") or {})
    config.setdefault("prompt_cache", cache)
    return {**kwargs, "config": config}


def call_marked(lm: Any, kwargs: dict[str, Any], call: Any) -> Any:
    """``call(kwargs)`` with the stable prefix marked for ``lm``'s cache, unmarked if DSPy refuses the mark."""
    cache = prompt_cache_for(lm)
    if cache is None:
        return call(kwargs)
    try:
        return call(marked(kwargs, cache))
    except Exception as exc:
        if not is_refusal(exc):
            raise
        refused(lm)
        return call(kwargs)


async def acall_marked(lm: Any, kwargs: dict[str, Any], call: Any) -> Any:
    """`call_marked` for an async ``call``."""
    cache = prompt_cache_for(lm)
    if cache is None:
        return await call(kwargs)
    try:
        return await call(marked(kwargs, cache))
    except Exception as exc:
        if not is_refusal(exc):
            raise
        refused(lm)
        return await call(kwargs)
