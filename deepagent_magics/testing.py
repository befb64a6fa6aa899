"""ScriptedLM: an LM that plays scripted agent steps.

For the project's tests, for users' own tests of their notebooks, and for the
demo when no real LM is configured. It is a real ``dspy.LM`` with a custom
engine, so everything between DSPy and the provider (adapters, history,
callbacks, usage) runs as it would with a model.

    lm = ScriptedLM([
        ("Look at the data", "print(sales.shape)"),
        ("Done", "SUBMIT(result='ok')"),
    ])

Several agents (a parent and its sub-agents) each get their own script: key
the scripts by a fragment of each agent's task, and the longest fragment found
in the task wins::

    ScriptedLM(scripts={"": parent_steps, "count the words": child_steps})

Requests that are not agent steps (``llm_query``, other DSPy modules) are
answered by ``replies``: a function of the prompt text, a dict of
{fragment: reply}, or one string.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any, Callable, Iterable, Mapping

import dspy
from dspy.adapters.chat_adapter import ChatAdapter, FieldInfoWithName
from dspy.lm15 import Message, Response, TextPart, Usage
from dspy.signatures.field import OutputField

Step = Mapping[str, str] | tuple[str, str] | str
ACTION_FIELDS = {"reasoning", "code"}
_OUTPUT_FIELDS = re.compile(r"Your output fields are:\n(.*?)(?:\n\n|All interactions)", re.S)
_FIELD_NAME = re.compile(r"^\d+\. `(\w+)`", re.M)
_TASK = re.compile(r"\[\[ ## task ## \]\]\n(.*?)(?:\n\n\[\[ ## |\Z)", re.S)
EXHAUSTED = 'SUBMIT(result="[ScriptedLM: the script has no more steps]")'


def _normalize(step: Step) -> dict[str, str]:
    if isinstance(step, str):
        return {"reasoning": "Run the next scripted step.", "code": step}
    if isinstance(step, tuple):
        reasoning, code = step
        return {"reasoning": reasoning, "code": code}
    return {"reasoning": step.get("reasoning", ""), "code": step["code"]}


class ScriptedEngine:
    """The engine behind `ScriptedLM`: reads each request, answers from the scripts."""

    def __init__(self, scripts: Mapping[str, Iterable[Step]], replies: Any, latency: float = 0.0):
        self.scripts = {key: [_normalize(step) for step in steps] for key, steps in scripts.items()}
        self.cursors = {key: 0 for key in self.scripts}
        self.replies = replies
        self.latency = latency
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def complete(self, request) -> Response:
        if self.latency:
            time.sleep(self.latency)
        system = _text(request.system)
        user = "\n".join(_text(message.text) for message in request.messages if message.role == "user")
        fields = _FIELD_NAME.findall(_OUTPUT_FIELDS.search(system).group(1)) if _OUTPUT_FIELDS.search(system) else []
        if ACTION_FIELDS <= set(fields):
            text = self._format(self._next_step(user))
        elif fields:
            reply = self._reply(user)
            text = self._format({name: reply if name != "reasoning" else "Scripted." for name in fields})
        else:
            text = self._reply(user)
        with self._lock:
            self.requests.append({"system": system, "user": user, "response": text})
        return Response(
            id=None,
            model="scripted",
            message=Message.assistant([TextPart(text)]),
            finish_reason="stop",
            usage=Usage(input_tokens=(len(system) + len(user)) // 4, output_tokens=len(text) // 4,
                        total_tokens=(len(system) + len(user) + len(text)) // 4),
        )

    def _next_step(self, user: str) -> dict[str, str]:
        match = _TASK.search(user)
        task = match.group(1) if match else user
        keys = [key for key in self.scripts if key in task]
        if not keys:
            return {"reasoning": "No script matches this task.", "code": EXHAUSTED}
        key = max(keys, key=len)
        with self._lock:
            position = self.cursors[key]
            self.cursors[key] = position + 1
        steps = self.scripts[key]
        return steps[position] if position < len(steps) else {"reasoning": "Out of steps.", "code": EXHAUSTED}

    def _reply(self, prompt: str) -> str:
        replies = self.replies
        if callable(replies):
            return str(replies(prompt))
        if isinstance(replies, Mapping):
            keys = [key for key in replies if key in prompt]
            return str(replies[max(keys, key=len)]) if keys else "(scripted reply)"
        return str(replies)

    @staticmethod
    def _format(values: Mapping[str, str]) -> str:
        fields = {FieldInfoWithName(name=name, info=OutputField()): value for name, value in values.items()}
        return ChatAdapter().format_field_with_value(fields)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return "".join(getattr(part, "text", "") or "" for part in value)


class ScriptedLM(dspy.LM):
    """A ``dspy.LM`` whose answers are scripted agent steps (see the module docstring).

    Args:
        steps: the steps of the one agent: ``(reasoning, code)`` pairs, dicts with
            those keys, or code strings.
        scripts: {task fragment: steps} for several agents.
        replies: answers to non-step requests (``llm_query``, other modules).
        latency: seconds to sleep per call, to stand in for a model's latency.
    """

    def __init__(
        self,
        steps: Iterable[Step] | None = None,
        *,
        scripts: Mapping[str, Iterable[Step]] | None = None,
        replies: str | Mapping[str, str] | Callable[[str], str] = "(scripted reply)",
        latency: float = 0.0,
        model: str = "scripted/demo",
    ):
        scripts = dict(scripts or {})
        if steps is not None:
            scripts.setdefault("", list(steps))
        super().__init__(model, engine=ScriptedEngine(scripts, replies, latency), cache=False)

    @property
    def script_engine(self) -> ScriptedEngine:
        return self._engine_spec

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request answered so far: its system text, user text and response."""
        return self.script_engine.requests
