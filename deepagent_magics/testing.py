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
{fragment: reply}, or one string. A reply that is itself a dict gives each
output field its own value (``{"next_tool_name": "finish", ...}``).

A script may also be a function of the whole request (a `ScriptedRequest`:
the system prompt with the instructions, the current inputs, the few-shot demos)
returning the next step, for a model whose behaviour depends on its prompt::

    def policy(request):
        if "Answer in French" in request.system:
            return ("Ready", "SUBMIT(result='Bonjour')")
        return ("Ready", "SUBMIT(result='Hello')")

    ScriptedLM(policy)
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import dspy
from dspy.adapters.chat_adapter import ChatAdapter, FieldInfoWithName
from dspy.lm15 import Message, Response, TextPart, Usage
from dspy.signatures.field import OutputField

Step = Mapping[str, str] | tuple[str, str] | str
ACTION_FIELDS = {"reasoning", "code"}
_OUTPUT_FIELDS = re.compile(r"Your output fields are:\n(.*?)(?:\n\n|All interactions)", re.S)
_FIELD_NAME = re.compile(r"^\d+\. `(\w+)`", re.M)
_ACTION_FORM = re.compile(r"\[\[ ## reasoning ## \]\]\n\{[^\n]*\}\n\n?\[\[ ## code ## \]\]\n\{")
_TASK = re.compile(r"\[\[ ## task ## \]\]\n(.*?)(?:\n\n\[\[ ## |\Z)", re.S)
_TASK_VARIABLE = re.compile(r"Variable: `task`.*?Preview:\n\s*```\n(.*?)\n\s*```", re.S)
SECTION_HEADS = ("Task (`task`):", "Context (`context`):", "Variables in scope:")  # inputs_view's
_TASK_SECTION = re.compile(  # the request's own view of the inputs (core.loop.inputs_view: same heads)
    re.escape(SECTION_HEADS[0]) + r"\n(.*?)(?=\n\n(?:" + re.escape(SECTION_HEADS[1]) + "|"
    + re.escape(SECTION_HEADS[2]) + r"|\[\[ ## )|\Z)", re.S)
EXHAUSTED = 'SUBMIT(result="[ScriptedLM: the script has no more steps]")'


@dataclass
class ScriptedRequest:
    """One request as a scripted policy sees it."""

    system: str  # the system prompt: field descriptions and the instructions
    user: str  # the last user message: the current inputs
    messages: list[tuple[str, str]] = field(default_factory=list)  # (role, text) after the system prompt

    @property
    def task(self) -> str:
        match = _TASK.search(self.user) or _TASK_SECTION.search(self.user) or _TASK_VARIABLE.search(self.user)
        return match.group(1).strip() if match else self.user

    @property
    def demos(self) -> int:
        """How many few-shot demos precede the current inputs."""
        return sum(role == "assistant" for role, _ in self.messages)


def _normalize(step: Step) -> dict[str, str]:
    if isinstance(step, str):
        return {"reasoning": "Run the next scripted step.", "code": step}
    if isinstance(step, tuple):
        reasoning, code = step
        return {"reasoning": reasoning, "code": code}
    return {"reasoning": step.get("reasoning", ""), "code": step["code"]}


class ScriptedEngine:
    """The engine behind `ScriptedLM`: reads each request, answers from the scripts."""

    def __init__(self, scripts: Mapping[str, Iterable[Step] | Callable[[ScriptedRequest], Step]],
                 replies: Any, latency: float = 0.0, tokens: tuple[int, int] | None = None):
        self.scripts = {key: steps if callable(steps) else [_normalize(step) for step in steps]
                        for key, steps in scripts.items()}
        self.cursors = {key: 0 for key in self.scripts}
        self.replies = replies
        self.latency = latency
        self.tokens = tokens
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def complete(self, request) -> Response:
        if self.latency:
            time.sleep(self.latency)
        system = _text(request.system)
        user = "\n".join(_text(message.text) for message in request.messages if message.role == "user")
        fields = _FIELD_NAME.findall(_OUTPUT_FIELDS.search(system).group(1)) if _OUTPUT_FIELDS.search(system) else []
        if not fields and _ACTION_FORM.search(system):  # the action step's own form (core.model.replies.ChatAdapter)
            fields = ["reasoning", "code"]
        if ACTION_FIELDS <= set(fields):
            messages = [(message.role, _text(message.text)) for message in request.messages]
            last_user = next((text for role, text in reversed(messages) if role == "user"), "")
            text = self._format(self._next_step(user, ScriptedRequest(system, last_user, messages)))
        elif fields:
            reply = self._reply(user)
            if isinstance(reply, Mapping):
                values = {name: str(reply.get(name, "Scripted.")) for name in fields}
            else:
                values = {name: reply if name != "reasoning" else "Scripted." for name in fields}
            text = self._format(values, as_json="Outputs will be a JSON object" in system)
        else:
            text = self._reply(user)
        with self._lock:
            self.requests.append({"system": system, "user": user, "response": text})
        tokens_in, tokens_out = self.tokens or ((len(system) + len(user)) // 4, len(text) // 4)
        return Response(
            id=None,
            model="scripted",
            message=Message.assistant([TextPart(text)]),
            finish_reason="stop",
            usage=Usage(input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + tokens_out),
        )

    def _next_step(self, user: str, request: ScriptedRequest | None = None) -> dict[str, str]:
        # The request shows the task in its own section (RLM's preview, before); the REPL history (which may quote
        # other agents' tasks, e.g. in a delegate() call) must not pick the script.
        match = _TASK.search(user) or _TASK_SECTION.search(user) or _TASK_VARIABLE.search(user)
        task = match.group(1) if match else user
        keys = [key for key in self.scripts if key in task]
        if not keys:
            return {"reasoning": "No script matches this task.", "code": EXHAUSTED}
        key = max(keys, key=len)
        if callable(self.scripts[key]):
            return _normalize(self.scripts[key](request or ScriptedRequest("", user)))
        with self._lock:
            position = self.cursors[key]
            self.cursors[key] = position + 1
        steps = self.scripts[key]
        return steps[position] if position < len(steps) else {"reasoning": "Out of steps.", "code": EXHAUSTED}

    def _reply(self, prompt: str) -> Any:
        replies = self.replies
        if callable(replies):
            reply = replies(prompt)
            return reply if isinstance(reply, Mapping) else str(reply)
        if isinstance(replies, Mapping):
            keys = [key for key in replies if key in prompt]
            return str(replies[max(keys, key=len)]) if keys else "(scripted reply)"
        return str(replies)

    @staticmethod
    def _format(values: Mapping[str, str], as_json: bool = False) -> str:
        if as_json:  # JSONAdapter's requests (GEPA's instruction proposer uses it)
            return json.dumps(dict(values))
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
            those keys, or code strings; or a function of the `ScriptedRequest`
            returning the next step.
        scripts: {task fragment: steps (or such a function)} for several agents.
        replies: answers to non-step requests (``llm_query``, other modules).
        latency: seconds to sleep per call, to stand in for a model's latency.
        cost: USD each call reports as its cost, as a provider's pricing would (default: none
            reported, like a custom engine's); a function of the history entry may decide per call.
        tokens: ``(input, output)`` tokens each call reports (default: about a token per 4 characters).
    """

    def __init__(
        self,
        steps: Iterable[Step] | Callable[[ScriptedRequest], Step] | None = None,
        *,
        scripts: Mapping[str, Iterable[Step] | Callable[[ScriptedRequest], Step]] | None = None,
        replies: str | Mapping[str, str] | Callable[[str], str | Mapping[str, str]] = "(scripted reply)",
        latency: float = 0.0,
        model: str = "scripted/demo",
        cost: float | Callable[[dict[str, Any]], float | None] | None = None,
        tokens: tuple[int, int] | None = None,
    ):
        scripts = dict(scripts or {})
        if steps is not None:
            scripts.setdefault("", steps if callable(steps) else list(steps))
        super().__init__(model, engine=ScriptedEngine(scripts, replies, latency, tokens), cache=False)
        self.reported_cost = cost

    def update_history(self, entry: Any) -> None:
        """Each call's history entry, with the scripted cost in it (what a provider's pricing reports)."""
        cost = self.reported_cost
        if cost is not None and isinstance(entry, dict):
            entry["cost"] = cost(entry) if callable(cost) else float(cost)
        super().update_history(entry)

    def __deepcopy__(self, memo: dict) -> "ScriptedLM":
        """Copies share the script (optimisers deep-copy programs; the script and its log are one)."""
        return self

    @property
    def script_engine(self) -> ScriptedEngine:
        return self._engine_spec

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request answered so far: its system text, user text and response."""
        return self.script_engine.requests
