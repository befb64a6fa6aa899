"""core/model/stop_sequences.py: which models a step's request asks to stop at the end marker, and how
a rejected ``stop`` is told from other errors. (What a run sends and reads back:
tests/adversarial/test_stop_sequences.py; replies cut at the marker: test_replies_at_the_stop.py.)"""

from __future__ import annotations

import dspy
import pytest
from dspy.utils.exceptions import (
    ContextWindowExceededError,
    LMInvalidRequestError,
    LMRateLimitError,
    LMUnsupportedFeatureError,
)

from deepagent_magics.core.model import stop_sequences
from deepagent_magics.core.model.replies import COMPLETED
from deepagent_magics.core.model.stop_sequences import REFUSE_STOP, family_refusing, stop_for, with_stop
from deepagent_magics.testing import ScriptedLM

REASONING = {"temperature": 1.0, "max_tokens": 16000}  # what DSPy requires of OpenAI's reasoning models

# Every family of `REFUSE_STOP`, with the model ids of it a user writes (checked to cover the whole list).
REFUSING = {
    "OpenAI reasoning models (o1, o3, o4-mini, gpt-5, not gpt-5-chat)": [
        "openai/o1", "openai/o1-mini", "openai/o1-preview", "openai/o3", "openai/o3-mini", "openai/o3-pro",
        "openai/o4-mini", "openai/o4-mini-2025-04-16", "openai/gpt-5", "openai/gpt-5-mini", "openai/gpt-5-nano",
        "openai/gpt-5.1", "openai/gpt-5.2-codex", "azure/o3", "azure/gpt-5", "openrouter/openai/o3", "o3"],
    "xAI reasoning models (grok-3-mini, grok-4, grok-code-fast)": [
        "xai/grok-4", "xai/grok-4-0709", "xai/grok-4-fast-reasoning", "xai/grok-3-mini", "xai/grok-3-mini-beta",
        "xai/grok-code-fast-1", "openrouter/x-ai/grok-4"],
}

# Models that take ``stop``: the local server (`local_server.LocalServer.lm`: an OpenAI-compatible one), other
# local servers, and hosted models whose APIs accept it.
TAKING = [
    ("openai/qwen2.5-coder-1.5b-instruct-q4_k_m", {"api_base": "http://127.0.0.1:8080/v1"}),
    ("hosted_vllm/meta-llama/Llama-3.1-8B-Instruct", {"api_base": "http://127.0.0.1:8000/v1"}),
    ("ollama_chat/qwen2.5-coder", {}),
    ("openai/gpt-4o-mini", {}), ("openai/gpt-4.1", {}), ("openai/gpt-5-chat-latest", {}),
    ("anthropic/claude-sonnet-4-5", {}), ("gemini/gemini-2.5-flash", {}), ("deepseek/deepseek-reasoner", {}),
    ("xai/grok-3", {}), ("openai/omni-moderation", {}), ("openai/gpt-50-turbo", {}),
]


def lm(model: str, **kwargs) -> dspy.LM:
    return dspy.LM(model, api_key="sk-none", **kwargs)


def test_the_tests_cover_every_family_that_rejects_stop():
    assert set(REFUSING) == set(REFUSE_STOP)


@pytest.mark.parametrize("family, model", [(family, model) for family, models in REFUSING.items() for model in models])
def test_a_family_that_rejects_stop_is_sent_none(family, model):
    assert family_refusing(model) == family
    assert stop_for(lm(model, **REASONING)) is None


@pytest.mark.parametrize("model, kwargs", TAKING, ids=[model for model, _ in TAKING])
def test_a_model_that_takes_stop_is_sent_the_end_marker(model, kwargs):
    assert family_refusing(model) is None
    assert stop_for(lm(model, **kwargs)) == [COMPLETED] == ["[[ ## completed ## ]]"]


def test_the_local_models_client_is_sent_the_end_marker():
    """The LM `--lm local` makes (local_server.LocalServer.lm), without starting a server."""
    from pathlib import Path

    from deepagent_magics.core.model.local_server import LocalServer

    server = LocalServer(Path("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"), "http://127.0.0.1:9", 16_384, "k", 0.0)
    assert stop_for(server.lm) == [COMPLETED]


@pytest.mark.parametrize("own, sent", [
    ("###", ["###", COMPLETED]),
    (["a", "b"], ["a", "b", COMPLETED]),
    (["a", "b", "c", "d"], ["a", "b", "c", COMPLETED]),  # OpenAI takes four at most: the marker is one of them
    ([COMPLETED, "x"], [COMPLETED, "x"]),
    (None, [COMPLETED]),
])
def test_the_users_own_stop_sequences_are_kept_first(own, sent):
    assert stop_for(lm("openai/gpt-4o-mini", stop=own)) == sent


@pytest.mark.parametrize("client", [
    dspy.utils.DummyLM([{"answer": "x"}]),  # a BaseLM of the user's: may not take `stop`
    lm("openai/gpt-4o-mini", model_type="responses"),  # the Responses API has no `stop`
    None,
], ids=["base-lm", "responses-api", "none"])
def test_clients_that_cannot_carry_a_stop_are_sent_none(client):
    assert stop_for(client) is None


def test_a_scripted_lm_is_a_dspy_client_and_gets_it_like_any_chat_model():
    assert stop_for(ScriptedLM([("a", "print(1)")])) == [COMPLETED]


def test_a_stop_the_call_gives_wins_and_other_settings_stay():
    assert with_stop({"x": 1}, ["M"]) == {"x": 1, "config": {"stop": ["M"]}}
    assert with_stop({"config": {"stop": ["own"], "n": 1}}, ["M"]) == {"config": {"stop": ["own"], "n": 1}}


@pytest.mark.parametrize("error, refusal", [
    (LMInvalidRequestError("Unsupported parameter: 'stop' is not supported with this model."), True),
    (LMInvalidRequestError("Unrecognized request argument supplied: stop"), True),
    (LMUnsupportedFeatureError("the provider does not support stop sequences"), True),
    (LMInvalidRequestError("Unsupported parameter: 'temperature'"), False),
    (LMUnsupportedFeatureError("not supported here", features=["stop"]), True),
    (LMInvalidRequestError("Unsupported parameter: 'temperature'", model="openai/stop-gap"), False),
    (ContextWindowExceededError(message="maximum context length exceeded; stop adding messages"), False),
    (LMRateLimitError("rate limit: stop sending so fast"), False),
    (RuntimeError("stop"), False),
])
def test_a_refused_stop_is_told_from_every_other_error(error, refusal):
    assert stop_sequences.is_refusal(error) is refusal


def test_an_lm_whose_provider_refused_is_sent_none_again_and_so_are_its_runs_copies():
    from deepagent_magics.core.model.retries import RetryPolicy, with_retries

    user = lm("openai/some-new-model")
    copy = with_retries(user, None, RetryPolicy())
    assert stop_for(copy) == [COMPLETED]
    stop_sequences.refuses(copy)
    assert stop_for(copy) is None and stop_for(user) is None
    assert stop_for(with_retries(user, None, RetryPolicy())) is None  # the next run's copy too
    assert stop_for(lm("openai/some-new-model")) == [COMPLETED]  # another LM of the same model: asked once itself
