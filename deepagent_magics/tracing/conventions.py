"""What a span says, by OpenTelemetry's GenAI semantic conventions: the attribute names, the provider and model
of an LM, where its server is, the error a span ended with, and content as the conventions shape it.

Plain data and plain functions (no OpenTelemetry import): `tests/tracing/test_conventions.py` holds every
``gen_ai.*`` name here to ``opentelemetry-semantic-conventions``' registry. The names are the conventions'
of late 2026 (``gen_ai.provider.name``, not the older ``gen_ai.system``); ours, for what the conventions
have no name for, start with ``deepagent.``.

Content (prompts, replies, a tool's arguments and result, the task and the answer) is made here only when
the user opted in (`spans.TreeTrace.content`), scrubbed of secrets before it is cut to `CONTENT_CHARS`, so
no piece of a secret is left at the cut. What is never made here: an LM's key, headers or client settings,
its ``api_base`` beyond host and port.
"""

from __future__ import annotations

import functools
import json
from typing import Any
from urllib.parse import urlsplit

from ..core.run.secrets import scrub

# ------------------------------------------------------------ the conventions' names
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION = "gen_ai.conversation.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"  # content
TOOL_RESULT = "gen_ai.tool.call.result"  # content
INPUT_MESSAGES = "gen_ai.input.messages"  # content
OUTPUT_MESSAGES = "gen_ai.output.messages"  # content
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"  # content
ERROR_TYPE = "error.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"

# The operations (gen_ai.operation.name) and span names: "{operation} {agent, model or tool}".
INVOKE_AGENT, CHAT, EXECUTE_TOOL = "invoke_agent", "chat", "execute_tool"
STEP_SPAN = "step"  # no GenAI operation: one turn of the agent's loop (the model's reply, then its code running)

# ------------------------------------------------------------ ours
RUN_ID = "deepagent.run.id"  # the run record's id (<workspace>/.deepagent/runs/<id>.json)
RUN_DEPTH = "deepagent.run.depth"  # 0: the root agent; a sub-agent one more than its parent
RUN_STATUS = "deepagent.run.status"  # finished, failed, interrupted, stopped, budget_exhausted
STEP_INDEX = "deepagent.step.index"  # 1 for a run's first step
STEP_CODE = "deepagent.step.code"  # content: the code the step ran
STEP_OUTPUT = "deepagent.step.output"  # content: what it printed
CALL_KIND = "deepagent.call.kind"  # step (the agent's own call) or query (an llm_query prompt)

OTHER = "_OTHER"  # the conventions' error.type when nothing better names the error
CONTENT_CHARS = 65_536  # one content attribute, at most (a step's prompt holds the whole history)
CUT = "…[cut]"

# LiteLLM's provider names (the part of a model id before the "/") as the conventions name them.
PROVIDERS = {
    "openai": "openai", "text-completion-openai": "openai", "anthropic": "anthropic", "bedrock": "aws.bedrock",
    "bedrock_converse": "aws.bedrock", "azure": "azure.ai.openai", "azure_ai": "azure.ai.inference",
    "cohere": "cohere", "cohere_chat": "cohere", "deepseek": "deepseek", "gemini": "gcp.gemini",
    "vertex_ai": "gcp.vertex_ai", "vertex_ai_beta": "gcp.vertex_ai", "groq": "groq", "watsonx": "ibm.watsonx.ai",
    "mistral": "mistral_ai", "moonshot": "moonshot_ai", "perplexity": "perplexity", "xai": "x_ai",
}


# ------------------------------------------------------------ the LM
@functools.lru_cache(maxsize=256)
def provider_and_model(model_id: str) -> tuple[str, str]:
    """``openai/gpt-4o-mini`` -> (``openai``, ``gpt-4o-mini``): the provider as the conventions name it and the
    model as the provider knows it. A model id without a provider is LiteLLM's to place (``gpt-4o`` is
    OpenAI's); one LiteLLM cannot place keeps what it says (a `ScriptedLM`'s ``scripted/demo``)."""
    prefix, _, name = model_id.partition("/")
    if not name:
        try:
            from litellm import get_llm_provider

            name, prefix, _, _ = get_llm_provider(model_id)
        except Exception:  # noqa: BLE001 - a model LiteLLM does not know: say so
            return OTHER, model_id
    return PROVIDERS.get(prefix, prefix or OTHER), name


def lm_attributes(lm: Any) -> dict[str, Any]:
    """What a span may say of ``lm``: its provider, model, server (host and port only) and the two request
    settings the conventions name; never a key, a header or any other client setting."""
    model = str(getattr(lm, "model", "") or type(lm).__name__)
    provider, name = provider_and_model(model)
    out: dict[str, Any] = {PROVIDER: provider, REQUEST_MODEL: name}
    kwargs = getattr(lm, "kwargs", None)
    kwargs = kwargs if isinstance(kwargs, dict) else {}
    for key, attribute in (("temperature", REQUEST_TEMPERATURE), ("max_tokens", REQUEST_MAX_TOKENS)):
        value = kwargs.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[attribute] = value
    base = kwargs.get("api_base") or kwargs.get("base_url")
    if isinstance(base, str):
        out.update(server(base))
    return out


def server(url: str) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of an API base URL: its host and port, never its user, password,
    path or query (where keys hide)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return {}
    if not host:
        return {}
    out: dict[str, Any] = {SERVER_ADDRESS: scrub(host)}
    if port is None and parts.scheme in ("http", "https"):
        port = 443 if parts.scheme == "https" else 80
    if port is not None:
        out[SERVER_PORT] = port
    return out


def agent_name(profile: str) -> str:
    """The agent's name: its profile (a sub-agent type's name), the default one called ``deepagent``."""
    return "deepagent" if not profile or profile == "default" else profile


def error_type(exc: BaseException | None) -> str:
    """``error.type``: the exception's class name (``LMRateLimitError``, ``CapReached``), else ``_OTHER``."""
    return type(exc).__name__ if exc is not None else OTHER


# ------------------------------------------------------------ content (only when the user opted in)
def text(value: Any, limit: int = CONTENT_CHARS) -> str:
    """``value`` as text for a content attribute (JSON when it is not text): scrubbed of secrets, then cut."""
    shown = scrub(value if isinstance(value, str) else _json(value))
    return shown if len(shown) <= limit else shown[: limit - len(CUT)] + CUT


def messages(role: str, content: Any, finish_reason: str | None = None) -> str:
    """One message as the conventions' JSON for ``gen_ai.input.messages`` or ``gen_ai.output.messages``."""
    message: dict[str, Any] = {"role": role, "parts": [_part(content)]}
    if finish_reason is not None:
        message["finish_reason"] = finish_reason
    return _json([message])


def chat_messages(sent: Any) -> tuple[str | None, str | None]:
    """What a request sent (OpenAI-shaped messages, or a prompt): (``gen_ai.system_instructions``,
    ``gen_ai.input.messages``), each the conventions' JSON, or None."""
    if isinstance(sent, str):
        return None, messages("user", sent)
    if not isinstance(sent, list):
        return None, None
    shaped = [m for m in sent if isinstance(m, dict)]
    system = [_part(m.get("content")) for m in shaped if m.get("role") == "system"]
    rest = [{"role": str(m.get("role") or "user"), "parts": [_part(m.get("content"))]}
            for m in shaped if m.get("role") != "system"]
    return (_json(system) if system else None), (_json(rest) if rest else None)


def _part(content: Any) -> dict[str, str]:
    """A message's content (text, or a list of parts: their texts joined) as one text part, scrubbed and cut:
    each part is bounded, so the JSON around them stays whole."""
    if isinstance(content, list):
        content = "".join(str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content)
    return {"type": "text", "content": text("" if content is None else str(content))}


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(value)
