"""The delegation tools the agent calls: ``delegate``, ``delegate_batched`` and ``review``."""

from __future__ import annotations

import json
from typing import Any

from ...core.loop.capability import Capability, ToolLine
from ...core.run import session as _session
from ...core.run.event_kinds import SUBAGENT_FINISHED, SUBAGENT_STARTED
from ...core.loop.profiles import available_profiles
from ...core.loop.subagent_types import SubAgentType
from ..tool_call import tool
from .supervise import run_subagents
from .tree import Spec
from .verdict import REVIEWER_PROFILE, parse_verdict

PACKAGED_DESCRIPTIONS = {
    "default": "a general deep agent: explores data, computes, writes files",
    "coder": "writes, fixes and tests code",
    "researcher": "finds facts in files and sources, with evidence",
    "reviewer": "checks a draft against criteria and gives a verdict (what review() uses)",
}
SUBAGENTS_HEAD = "Sub-agent types for `agent=`:"
NOT_LISTED = {"reviewer"}  # reached through review()
DEFAULT_CRITERIA = [
    "It does everything the task asks, completely.",
    "Its facts, numbers and file references are correct: check them against the workspace files and the context.",
    "It makes no claim that the evidence does not support.",
    "It is clear and self-contained for its reader.",
]


@tool
def delegate(task: str, context: str = "", agent: str | None = None, profile: str | None = None) -> Any:
    """A sub-agent does `task` in its own kernel (your files, not your variables); returns what it submits.

    The sub-agent cannot see your variables: put what it needs in ``context`` or in a workspace
    file (the workspace is shared, and is its working directory). ``agent`` picks its type by name
    (one listed in your instructions; default: like you); ``profile`` is the older name for the same.
    A dict it submits arrives as a dict, a list as a list; a value JSON cannot carry arrives as
    text that says so. A string starting with "Error:" means it could not run (unknown type, depth
    or sub-agent budget reached) or failed."""
    return run_subagents(_session.current(), [Spec(str(task), str(context or ""), profile, agent)])[0].result


@tool
def delegate_batched(tasks: list) -> list:
    """Several at once (each a str or {"task", "context", "agent"}), in order.

    At most ``max_parallel`` run at the same time; a failed one gives an "Error: ..." string in its
    place. Each result arrives as data, as with ``delegate``."""
    specs = [_spec(item) for item in _task_list(tasks)]
    return [outcome.result for outcome in run_subagents(_session.current(), specs)]


delegate.starts_subagents = delegate_batched.starts_subagents = True  # not offered where delegation is not allowed
delegate.writes = delegate_batched.writes = True  # a sub-agent writes: refused to a read-only agent
delegate.risk_rule = delegate_batched.risk_rule = "subagents"  # approval asks before code that calls them


@tool
def review(task: str, draft: str, criteria: list[str] | str | None = None) -> dict:
    """A reviewer checks your `draft` against `criteria` (a list): {"status": "pass"|"low"|"fail", "issues", "suggestions"}.

    ``criteria`` is a list of requirements (default: complete, correct against the workspace and
    context, no unsupported claims, clear). "pass" meets every criterion, "low" meets them with
    minor issues, "fail" misses at least one (or the review could not run). Fix the issues, then
    review again."""
    items = _criteria(criteria)
    context = "## Draft\n\n" + str(draft) + "\n\n## Criteria\n\n" + "\n".join(f"{n}. {c}" for n, c in enumerate(items, 1))
    spec = Spec(f"Review a draft answer to this task: {task}", context, REVIEWER_PROFILE)
    outcome = run_subagents(_session.current(), [spec])[0]
    if not outcome.ok:
        return {"status": "fail", "issues": [f"The review could not run: {outcome.text.removeprefix('Error: ')}"],
                "suggestions": [], "error": outcome.text}
    return parse_verdict(outcome.text)


review.starts_subagents = review.writes = True


def delegation_tools() -> list:
    return [delegate, delegate_batched, review]


def offer_subagent_types(agent: Any, root: Any) -> str:
    """For the prompt of an agent that may delegate: where sub-agents work, and every type it may pick."""
    if agent.depth >= agent.max_depth or getattr(agent, "read_only", False) \
            or not any(tool in agent.builtin_tools() for tool in (delegate, review)):
        return ""
    return describe_types(getattr(agent, "subagents", None) or {}, own=getattr(agent, "profile", None))


DELEGATION = Capability(
    "delegation", tools=[delegate, delegate_batched, review], instructions=offer_subagent_types,
    lines={"delegate": ToolLine(order=40), "delegate_batched": ToolLine(order=40, beside="delegate"),
           "review": ToolLine(order=41)},
    events=(SUBAGENT_STARTED, SUBAGENT_FINISHED))


def describe_types(types: dict[str, SubAgentType], own: str | None = None) -> str:
    """What a parent's prompt says about delegating: where sub-agents work, and every type it may pick
    (the packaged profiles but its own and the reviewer's, then the user's), each with its description."""
    lines = [SUBAGENTS_HEAD]
    for name in available_profiles():
        if name != own and name not in NOT_LISTED:
            lines.append(f"- {name}: {PACKAGED_DESCRIPTIONS.get(name, 'a packaged profile')}")
    for kind in types.values():
        tools = f" (tools: {', '.join(kind.tool_names)})" if kind.tools else ""
        lines.append(f"- {kind.name}: {kind.description}{tools}")
    return "\n".join(lines)


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
