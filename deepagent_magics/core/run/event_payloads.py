"""What each event kind's data holds, typed: one `TypedDict` per kind of core/run/event_kinds.py.

A run's event is ``Event(kind, run, data)`` (`run.Event`); ``data`` is the keyword arguments of the
``run.emit(kind, **data)`` that made it, and `PAYLOADS` says, for every kind, which keys it holds and what
they are. Every emit in the package passes exactly these keys (`tests/core/run/test_event_kinds.py` reads
each call), so a listener (a display, the record, the event log, the run API's clients) can rely on them,
and a type checker can read them: ``cast(StepStarted, event.data)``.
"""

from __future__ import annotations

from typing import Any, TypedDict

from . import event_kinds as kinds


# ------------------------------------------------------------ a run's life (core.run.run)
class RunStarted(TypedDict):
    task: str
    config: dict[str, Any]  # the run's settings, scrubbed of secrets (DeepAgent.config)


class StepStarted(TypedDict):
    index: int  # 1-based
    reasoning: str
    code: str  # as it runs, without Markdown fences


class StepFinished(TypedDict):
    index: int
    output: str  # what the code printed (bounded), an error's traceback after what came before it


class ToolCall(TypedDict):
    name: str
    args: dict[str, str]  # short reprs, scrubbed
    error: str | None  # the "Error: ..." the agent read, or None


class Todos(TypedDict):
    todos: list[dict[str, str]]  # {"content", "status"}


class FileWritten(TypedDict):
    path: str  # relative to the workspace
    size: int  # bytes


class SubagentStarted(TypedDict):
    child: Any  # the child's Run
    step: int | None  # the parent's step that started it


class SubagentFinished(TypedDict):
    child: Any
    step: int | None


class LmUsage(TypedDict):
    model: str
    input_tokens: int
    output_tokens: int
    cost: float | None  # USD as the provider reported it; None: not reported
    cached_tokens: int


class Status(TypedDict):
    status: str  # running, finished, failed, interrupted, stopped, budget_exhausted
    error: str | None


class RunFinished(TypedDict):
    status: str
    result: Any  # the submitted result (a sub-agent's: data, as submitted)
    error: str | None
    extracted: str | None  # why the result was taken from the run's output, not submitted (core/loop/ending.py)


# ------------------------------------------------------------ the user's controls (core.policy, core.loop.ending)
class Approval(TypedDict, total=False):
    time: float
    run: str  # the id of the run whose code was asked about
    step: int | None
    agent: str
    decision: str  # approved, refused, approved_all, stopped
    who: str  # the user, a policy function, no one (no stdin)
    policy: str
    reasons: list[str]
    note: str
    action: str  # a runtime check's action ("write /home/me/notes.md"); absent for a code block


class ApprovalAsked(TypedDict):
    agent: str  # "the agent", or "sub-agent <id> (<task>)"
    step: int | None
    code: str  # the block asked about, scrubbed
    reasons: list[str]
    action: str | None  # a runtime check's action; None for a code block


class UserNote(TypedDict):
    note: str
    step: int  # the step after which the model reads it


class SpendCap(TypedDict):
    reason: str  # which cap, and how much was spent


# ------------------------------------------------------------ talking to the model (core.model, core.loop.attempts)
class ReplyRetry(TypedDict):
    step: int
    attempt: int
    problem: str  # why the reply could not be read


class ProviderRetry(TypedDict):
    attempt: int
    wait: float  # seconds
    cause: str  # "rate limited (429, Retry-After 2 s)"
    retries: int | None  # the most there will be


class Compaction(TypedDict):
    step: int
    summarized: int  # how many of the earliest steps the summary stands for
    summary: str
    chars_before: int
    chars_after: int


class StepStreaming(TypedDict):
    index: int
    reasoning: str  # the newest part written so far, scrubbed
    code: str
    elapsed: float  # seconds since the call began


class LlmQueryStreaming(TypedDict):
    tool: str  # "llm_query"
    step: int  # the running step
    query: int  # its number in the run
    text: str  # the newest part of the answer so far, scrubbed
    elapsed: float
    done: bool  # the last event of this query


PAYLOADS: dict[str, type] = {
    kinds.RUN_STARTED: RunStarted, kinds.STEP_STARTED: StepStarted, kinds.STEP_FINISHED: StepFinished,
    kinds.TOOL_CALL: ToolCall, kinds.TODOS: Todos, kinds.FILE_WRITTEN: FileWritten,
    kinds.SUBAGENT_STARTED: SubagentStarted, kinds.SUBAGENT_FINISHED: SubagentFinished, kinds.LM_USAGE: LmUsage,
    kinds.STATUS: Status, kinds.RUN_FINISHED: RunFinished, kinds.APPROVAL: Approval,
    kinds.APPROVAL_ASKED: ApprovalAsked, kinds.USER_NOTE: UserNote,
    kinds.SPEND_CAP: SpendCap, kinds.REPLY_RETRY: ReplyRetry, kinds.PROVIDER_RETRY: ProviderRetry,
    kinds.COMPACTION: Compaction, kinds.STEP_STREAMING: StepStreaming, kinds.LLM_QUERY_STREAMING: LlmQueryStreaming,
}


def keys(kind: str) -> tuple[frozenset[str], frozenset[str]]:
    """The keys an event of ``kind`` must hold, and those it may."""
    payload = PAYLOADS[kind]
    return frozenset(payload.__required_keys__), frozenset(payload.__annotations__)
