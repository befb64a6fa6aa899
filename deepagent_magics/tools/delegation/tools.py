"""The delegation tools the agent calls: ``delegate``, ``delegate_batched`` and ``review``."""

from __future__ import annotations

import json
from typing import Any

from ...core.run import session as _session
from ...core.loop.subagent_types import describe_types
from ..tool_call import tool
from .supervise import run_subagents
from .tree import Spec
from .verdict import REVIEWER_PROFILE, parse_verdict

DEFAULT_CRITERIA = [
    "It does everything the task asks, completely.",
    "Its facts, numbers and file references are correct: check them against the workspace files and the context.",
    "It makes no claim that the evidence does not support.",
    "It is clear and self-contained for its reader.",
]


@tool
def delegate(task: str, context: str = "", profile: str | None = None, agent: str | None = None) -> str:
    """Hand a focused, self-contained task to a sub-agent with a fresh context, in a kernel of its own, and return its result as a string. The sub-agent cannot see your variables: put what it needs in `context` (or in a workspace file; the workspace is shared). `agent` picks the kind of sub-agent by name (a sub-agent type listed in your instructions, or a profile); `profile` picks its prompt (default: yours). Returns a string starting with "Error:" when it could not run (unknown agent, depth or sub-agent budget reached) or failed."""
    return run_subagents(_session.current(), [Spec(str(task), str(context or ""), profile, agent)])[0].text


@tool
def delegate_batched(tasks: list) -> list[str]:
    """Run several independent sub-agents at once and return their results in the order given. Each task is a string, or a dict {"task": ..., "context": ..., "agent": ..., "profile": ...} (`agent`: a sub-agent type's name). At most `max_parallel` run at the same time; a failed one gives an "Error: ..." string in its place."""
    specs = [_spec(item) for item in _task_list(tasks)]
    return [outcome.text for outcome in run_subagents(_session.current(), specs)]


@tool
def review(task: str, draft: str, criteria: list[str] | str | None = None) -> dict:
    """Have an isolated reviewer sub-agent check `draft` (your answer to `task`) against `criteria` (a list of requirements; default: complete, correct against the workspace and context, no unsupported claims, clear). Returns {"status": "pass" | "low" | "fail", "issues": [...], "suggestions": [...]}: "pass" meets every criterion, "low" meets them with minor issues, "fail" misses at least one (or the review could not run). Fix the issues, then review again."""
    items = _criteria(criteria)
    context = "## Draft\n\n" + str(draft) + "\n\n## Criteria\n\n" + "\n".join(f"{n}. {c}" for n, c in enumerate(items, 1))
    spec = Spec(f"Review a draft answer to this task: {task}", context, REVIEWER_PROFILE)
    outcome = run_subagents(_session.current(), [spec])[0]
    if not outcome.ok:
        return {"status": "fail", "issues": [f"The review could not run: {outcome.text.removeprefix('Error: ')}"],
                "suggestions": [], "error": outcome.text}
    return parse_verdict(outcome.text)


def delegation_tools() -> list:
    return [delegate, delegate_batched, review]


def offer_subagent_types(agent: Any, root: Any) -> str:
    """For the prompt of an agent that may delegate and knows user-defined types: every type it may pick."""
    types = getattr(agent, "subagents", None)
    if not types or agent.depth >= agent.max_depth:
        return ""
    return describe_types(types)


def _task_list(tasks: Any) -> list:
    if isinstance(tasks, str):
        try:
            tasks = json.loads(tasks)
        except json.JSONDecodeError:
            raise ValueError("tasks must be a list of task strings or {\"task\", \"context\", \"profile\"} dicts") from None
    if isinstance(tasks, dict) or not isinstance(tasks, (list, tuple)):
        raise ValueError("tasks must be a list of task strings or {\"task\", \"context\", \"profile\"} dicts")
    return list(tasks)


def _spec(item: Any) -> Spec | str:
    """A Spec, or the error string for an entry that is not a task."""
    if isinstance(item, str):
        return Spec(item)
    if isinstance(item, dict) and isinstance(item.get("task"), str):
        unknown = sorted(set(item) - {"task", "context", "profile", "agent"})
        if unknown:
            return f"Error: unknown keys {unknown}; a task dict has task, context, agent and profile"
        return Spec(item["task"], str(item.get("context") or ""), item.get("profile"), item.get("agent"))
    return f"Error: {item!r:.80} is not a task; give a string or a dict with a 'task' string"


def _criteria(criteria: Any) -> list[str]:
    if criteria is None or criteria == "" or criteria == []:
        return list(DEFAULT_CRITERIA)
    if isinstance(criteria, str):
        lines = [line.strip(" -*\t") for line in criteria.splitlines()]
        return [line for line in lines if line] or list(DEFAULT_CRITERIA)
    if isinstance(criteria, (list, tuple)):
        return [str(item) for item in criteria]
    raise ValueError("criteria must be a list of strings, a string, or None")
