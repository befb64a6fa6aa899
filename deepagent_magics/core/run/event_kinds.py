"""Every kind of event a run emits, in one place: its name, who emits it, and what its data holds.

A run has one event stream (`run.Run.emit`); every display, the run record, the event log, the run
API and the export read it. A new event kind is one line here, named by the module that emits it.
Kinds in `TRANSIENT` are shown while a run works and never written to the record or the event log.
"""

from __future__ import annotations

# ------------------------------------------------------------ a run's life (core.run.run), in usual order
RUN_STARTED = "run_started"  # data: task, config
STEP_STARTED = "step_started"  # data: index, reasoning, code
STEP_FINISHED = "step_finished"  # data: index, output
TOOL_CALL = "tool_call"  # data: name, args (short reprs), error (or None)
TODOS = "todos"  # data: todos
FILE_WRITTEN = "file_written"  # data: path, size
SUBAGENT_STARTED = "subagent_started"  # data: child (the child Run), step
SUBAGENT_FINISHED = "subagent_finished"  # data: child, step
LM_USAGE = "lm_usage"  # data: model, input_tokens, output_tokens, cost, cached_tokens
STATUS = "status"  # data: status, error
RUN_FINISHED = "run_finished"  # data: status, result, error, extracted (why the answer was not submitted)

# ------------------------------------------------------------ the user's controls (core.policy, core.loop.ending)
APPROVAL_ASKED = "approval_asked"  # policy.approval; data: agent, step, code, reasons, action: the user is asked now
APPROVAL = "approval"  # policy.approval; data: the decision's record (who, what, when)
USER_NOTE = "user_note"  # policy.steering; data: note, step: a note the user sent while the run worked
SPEND_CAP = "spend_cap"  # loop.ending; data: reason: a cap stopped the run's tree

# ------------------------------------------------------------ talking to the model (core.model, core.loop.attempts)
REPLY_RETRY = "reply_retry"  # loop.attempts; data: step, attempt, problem: an unreadable reply, asked again
PROVIDER_RETRY = "provider_retry"  # model.retries; data: attempt, wait, cause, retries
COMPACTION = "compaction"  # model.compaction; data: step, summarized, summary, chars_before, chars_after
STEP_STREAMING = "step_streaming"  # model.streaming; data: index, reasoning, code, elapsed (partial)
LLM_QUERY_STREAMING = "llm_query_streaming"  # model.streaming; data: tool, step, query, text, elapsed, done

TRANSIENT = frozenset({STEP_STREAMING, LLM_QUERY_STREAMING})  # shown while written, never recorded

KINDS = frozenset(value for name, value in list(globals().items()) if name.isupper() and isinstance(value, str))
