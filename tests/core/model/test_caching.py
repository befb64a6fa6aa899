"""core/model/caching.py: the stable head of a step's prompt marked for the provider's cache where it helps
(against a local provider: tests/adversarial/test_prompt_caching.py)."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils.exceptions import LMUnsupportedFeatureError

from deepagent_magics.core.model import caching
from deepagent_magics.core.model.caching import (
    cached_tokens,
    call_marked,
    marked,
    prompt_cache_for,
    stable_prefix_share,
)
from deepagent_magics.testing import ScriptedLM


def test_only_an_anthropic_model_on_dspys_client_is_marked():
    cache = prompt_cache_for(dspy.LM("anthropic/claude-sonnet-4-5"))
    assert cache is not None and cache.prefix == "stable"
    assert prompt_cache_for(dspy.LM("openai/gpt-4o-mini")) is None  # caches its prefix by itself
    assert prompt_cache_for(ScriptedLM([])) is None
    from dspy.lm15 import CacheConfig

    off = dspy.LM("anthropic/claude-sonnet-4-5", prompt_cache=CacheConfig(mode="off"))
    assert prompt_cache_for(off) is None  # the user chose


def test_a_refused_mark_is_dropped_once_and_not_asked_again():
    lm = dspy.LM("anthropic/claude-haiku-4-5")
    seen = []

    def call(kwargs):
        seen.append("prompt_cache" in (kwargs.get("config") or {}))
        if seen[-1]:
            raise LMUnsupportedFeatureError("prompt_cache is not supported here")
        return "answer"

    assert call_marked(lm, {"config": {"temperature": 0}}, call) == "answer"
    assert seen == [True, False]
    assert prompt_cache_for(lm) is None
    with pytest.raises(ValueError):  # anything else is not a refusal: it propagates
        call_marked(dspy.LM("anthropic/claude-opus-4-1"), {}, lambda kwargs: (_ for _ in ()).throw(ValueError("x")))


def test_a_config_the_caller_gave_wins():
    assert marked({"config": {"prompt_cache": "mine"}}, "ours")["config"]["prompt_cache"] == "mine"
    assert marked({}, "ours") == {"config": {"prompt_cache": "ours"}}


@pytest.mark.parametrize("usage, cached", [
    ({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 80}}, 80),
    ({"input_tokens": 100, "cache_read_input_tokens": 60}, 60),
    ({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 999}}, 10),
    ({"prompt_tokens": "x"}, 0), (None, 0),
])
def test_cached_input_tokens_are_read_from_either_provider_shape_and_bounded(usage, cached):
    assert cached_tokens(usage) == cached


def test_the_share_of_a_request_the_next_one_repeats():
    assert stable_prefix_share("abcd", "abXY") == 0.5 and stable_prefix_share("", "x") == 1.0
    assert caching.MARKED_PROVIDERS == ("anthropic",)
