"""What a span says is the GenAI semantic conventions' vocabulary: names from their registry, providers by
their well-known names, a server by host and port only, content in their message shape."""

from __future__ import annotations

import json

import dspy
from opentelemetry.semconv._incubating.attributes import error_attributes, gen_ai_attributes, server_attributes

from deepagent_magics.tracing import conventions as names

REGISTRY = {value for key, value in vars(gen_ai_attributes).items() if key.startswith("GEN_AI_") and isinstance(value, str)}


def test_every_gen_ai_name_is_in_the_conventions_registry():
    ours = {value for key, value in vars(names).items() if isinstance(value, str) and value.startswith("gen_ai.")}
    assert len(ours) >= 20 and ours <= REGISTRY, sorted(ours - REGISTRY)
    assert names.ERROR_TYPE == error_attributes.ERROR_TYPE
    assert (names.SERVER_ADDRESS, names.SERVER_PORT) == (server_attributes.SERVER_ADDRESS, server_attributes.SERVER_PORT)
    values = gen_ai_attributes.GenAiOperationNameValues
    assert (names.INVOKE_AGENT, names.CHAT, names.EXECUTE_TOOL) == (
        values.INVOKE_AGENT.value, values.CHAT.value, values.EXECUTE_TOOL.value)
    newer = {"moonshot_ai"}  # listed by the conventions since this package's registry was made
    assert set(names.PROVIDERS.values()) - newer <= {value.value for value in gen_ai_attributes.GenAiProviderNameValues}


def test_a_model_id_is_the_provider_and_the_model_the_provider_knows():
    assert names.provider_and_model("openai/gpt-4o-mini") == ("openai", "gpt-4o-mini")
    assert names.provider_and_model("anthropic/claude-sonnet-4-5") == ("anthropic", "claude-sonnet-4-5")
    assert names.provider_and_model("gemini/gemini-2.5-pro") == ("gcp.gemini", "gemini-2.5-pro")
    assert names.provider_and_model("bedrock/anthropic.claude-3") == ("aws.bedrock", "anthropic.claude-3")
    assert names.provider_and_model("gpt-4o") == ("openai", "gpt-4o")  # LiteLLM places a bare OpenAI model
    assert names.provider_and_model("ollama_chat/qwen2.5") == ("ollama_chat", "qwen2.5")  # not well known: as is


def test_an_lm_is_its_provider_model_server_and_two_settings_never_its_key_or_headers():
    lm = dspy.LM("openai/gpt-4o-mini", api_key="sk-" + "k" * 40, api_base="https://user:pw@llm.example:8443/v1?key=q",
                 temperature=0.2, max_tokens=900, extra_headers={"Authorization": "Bearer abcdefghijklmnop"})
    assert names.lm_attributes(lm) == {
        "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 900, "server.address": "llm.example", "server.port": 8443}
    assert names.server("http://127.0.0.1/v1") == {"server.address": "127.0.0.1", "server.port": 80}
    assert names.server("not a url") == {} and names.server("https://[::1:8080/") == {}


def test_content_is_the_conventions_message_shape_each_part_cut_and_the_json_whole():
    system, sent = names.chat_messages([{"role": "system", "content": "Be brief."},
                                        {"role": "user", "content": [{"type": "text", "text": "x" * 70_000}]}])
    assert json.loads(system) == [{"type": "text", "content": "Be brief."}]
    message = json.loads(sent)[0]
    assert message["role"] == "user" and message["parts"][0]["content"].endswith(names.CUT)
    assert len(message["parts"][0]["content"]) == names.CONTENT_CHARS
    assert json.loads(names.messages("assistant", "done", "stop")) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "done"}], "finish_reason": "stop"}]
    assert names.chat_messages("a prompt")[1] == names.messages("user", "a prompt")
