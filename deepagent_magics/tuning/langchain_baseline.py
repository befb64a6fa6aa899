"""LangChain's ``deepagents`` as a third baseline of the quality benchmark, when it is installed.

It gets what the deep agent gets, in its own shape: deepagents' file tools on the task's workspace
(``FilesystemBackend``), and one tool, ``run_python(code)``, that runs code in a namespace holding the
task's variables (deepagents has no Python REPL of its own). Its model is the same model id through
LangChain's ``init_chat_model`` (``openai/gpt-4o-mini`` -> ``openai:gpt-4o-mini``; the provider's
LangChain package, e.g. ``langchain-openai``, must be installed), or a chat model passed in.

``run_python`` captures what the code prints by redirecting stdout, which is process-wide, so the
runs of this baseline execute their code one at a time (a lock); its time per task includes the wait.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import threading
import traceback
from typing import Any

import dspy

from ..errors import UserError
from .choices import DEEPAGENTS
from .systems import Outcome, set_up_example

_STDOUT = threading.Lock()
PROMPT = ("You are a data analysis agent. The task's files are in your file system (use ls and read_file), "
          "and run_python(code) runs Python in a namespace that already holds the data as variables "
          "(`workspace` is the folder of the files). Finish with the final answer alone.")


class BaselineUnavailable(UserError, RuntimeError):
    """deepagents, or a LangChain model for the LM, cannot be had; the message is one line."""


def chat_model_for(lm: Any) -> Any:
    """A LangChain chat model for the DSPy LM ``lm`` (a model id or an LM with ``.model``)."""
    model = lm if isinstance(lm, str) else getattr(lm, "model", None)
    if not isinstance(model, str) or "/" not in model:
        raise BaselineUnavailable(f"the deepagents baseline needs a provider model id like openai/gpt-4o-mini, "
                                  f"not {type(lm).__name__}")
    provider, _, name = model.partition("/")
    try:
        from langchain.chat_models import init_chat_model

        return init_chat_model(f"{provider}:{name}")
    except Exception as exc:  # the provider's LangChain package missing, an unknown provider
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BaselineUnavailable(f"the deepagents baseline cannot make a LangChain model for {model}: {text}") from None


class DeepAgentsSystem:
    """One task with a fresh deepagents agent on the task's workspace and variables."""

    def __init__(self, chat_model: Any, recursion_limit: int = 100):
        self.chat_model = chat_model
        self.recursion_limit = recursion_limit

    def __call__(self, example: dspy.Example) -> Outcome:
        from deepagents import create_deep_agent
        from deepagents.backends import FilesystemBackend

        with tempfile.TemporaryDirectory(prefix="deepagent-langchain-") as workspace:
            namespace = set_up_example(example, workspace) | {"workspace": workspace}

            def run_python(code: str) -> str:
                """Run Python code in a namespace holding the task's variables; return what it printed."""
                buffer = io.StringIO()
                with _STDOUT, contextlib.redirect_stdout(buffer):
                    try:
                        exec(code, namespace)
                    except Exception:  # the model's code may raise anything: its traceback is what the peer reads
                        print(traceback.format_exc(limit=2))
                return buffer.getvalue() or "(nothing printed)"

            agent = create_deep_agent(model=self.chat_model, tools=[run_python], system_prompt=PROMPT,
                                      backend=FilesystemBackend(root_dir=workspace, virtual_mode=True))
            state = agent.invoke({"messages": [{"role": "user", "content": example.task}]},
                                 config={"recursion_limit": self.recursion_limit})
        messages = state.get("messages") or []
        replies = [message for message in messages if getattr(message, "type", "") == "ai"]
        answer = replies[-1].content if replies else None
        if isinstance(answer, list):  # content blocks
            answer = "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in answer)
        tokens = sum(int((getattr(message, "usage_metadata", None) or {}).get("total_tokens") or 0)
                     for message in replies)
        steps = sum(bool(getattr(message, "tool_calls", None)) for message in replies)
        return Outcome(dspy.Prediction(result=answer), steps, tokens)
