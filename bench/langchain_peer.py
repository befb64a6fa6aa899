"""LangChain's ``deepagents`` playing the same trajectory with a fake chat model.

deepagents has no Python REPL of its own (its ``execute`` tool needs a sandbox
backend), so the agent gets one plain tool, ``run_python(code)``, that execs the
step's code in a dict; file steps use deepagents' own ``write_file``. The fake
model answers from a list of AI messages with tool calls and records what it was
sent, so the prompt-growth benchmark can read the history's size per call.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from typing import Any

from .trajectory import Action


def available() -> str | None:
    """None when deepagents can be imported, else why not."""
    try:
        import deepagents  # noqa: F401
        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: F401
    except Exception as exc:  # pragma: no cover - depends on the bench extra
        return f"{type(exc).__name__}: {exc}"
    return None


def _messages(script: list[Action]) -> list[Any]:
    from langchain_core.messages import AIMessage

    out = []
    for number, action in enumerate(script):
        if action.final is not None:
            out.append(AIMessage(content=action.final))
        elif action.path is not None:
            args = {"file_path": "/" + action.path, "content": action.content}
            out.append(AIMessage(content=action.reasoning, tool_calls=[{"name": "write_file", "args": args, "id": f"call_{number}"}]))
        else:
            args = {"code": action.code}
            out.append(AIMessage(content=action.reasoning, tool_calls=[{"name": "run_python", "args": args, "id": f"call_{number}"}]))
    return out


def _fake_model_class():
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.utils.function_calling import convert_to_openai_tool

    class ScriptedChatModel(GenericFakeChatModel):
        """A fake chat model with tool binding that records every request's size and the time it spent."""

        calls: list[dict[str, Any]] = []
        tool_schema_chars: int = 0
        tool_schema_text: str = ""  # the schemas as the provider would get them (what a tokenizer counts)

        def bind_tools(self, tools, **kwargs):
            schemas = [convert_to_openai_tool(tool) for tool in tools]
            self.tool_schema_text = json.dumps(schemas)
            self.tool_schema_chars = len(self.tool_schema_text)
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            started = time.perf_counter()
            chars = 0
            for message in messages:
                content = message.content
                chars += len(content) if isinstance(content, str) else len(json.dumps(content))
                for call in getattr(message, "tool_calls", None) or []:
                    chars += len(call["name"]) + len(json.dumps(call["args"]))
            result = super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
            self.calls.append({"message_chars": chars, "messages": len(messages), "tool_schema_chars": self.tool_schema_chars,
                               "started": started, "seconds": time.perf_counter() - started})
            return result

    return ScriptedChatModel


def build(script: list[Action]):
    """A fresh deepagents agent and its fake model, ready to play ``script``."""
    from deepagents import create_deep_agent

    namespace: dict[str, Any] = {}

    def run_python(code: str) -> str:
        """Run Python code in a persistent namespace and return what it printed."""
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(code, namespace)
        return buffer.getvalue()

    model = _fake_model_class()(messages=iter(_messages(script)), calls=[])
    agent = create_deep_agent(model=model, tools=[run_python], system_prompt="You are a data analysis agent.")
    return agent, model


def play(agent, task: str = "Compute the partial sums and report.") -> dict[str, Any]:
    result = agent.invoke({"messages": [{"role": "user", "content": task}]}, config={"recursion_limit": 10_000})
    return result
