"""One agent step's request to the model, made until it yields a step that can run.

The step pipeline's ``attempts`` layer (``core.loop.pipeline``) hands each step's call here; every
request goes out with the repairing adapter (`replies.ChatAdapter`) through the layers inside this one
(compaction, the user's notes, cache marks, streaming). Then:

- a reply nothing can read (empty, prose only, a refusal, the prompt repeated), or one cut off
  at the token limit before it was complete, is not run: the model is asked again with a note
  in its REPL history saying what was wrong (RLM shows every error to the model the same way).
  After `FORMAT_RETRIES` such retries in one step the run fails with `UnreadableReply`, whose
  one-line message names the problem;
- a context-length error compacts the history harder (`Compactor.lower_limit`) and asks
  again; when there is nothing left to compact it fails with `ContextTooLong`, saying how to
  raise the limit.

Each retry is a ``reply_retry`` event on the run (data: step, attempt, problem), so the
display and the record show it; the step the run records is the one that ran. The step's first
request was admitted with the step (the tree's spend caps, the pipeline's admission); before each retry request
the caps are checked again (`spend.check_retry`), so a model that never sends a readable reply
cannot carry the run past a cap: `CapReached` ends it as a cap at a step boundary does.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import dspy
from dspy.primitives.repl_types import REPLHistory
from dspy.utils.exceptions import AdapterParseError, ContextWindowExceededError

from ...errors import DeepAgentError
from ..model.compaction import KEEP_VERBATIM, compactor_for
from ..model.replies import COMPLETED, action_adapter, diagnose
from ..policy.spend import check_retry
from ..run.event_kinds import REPLY_RETRY

FORMAT_RETRIES = 2  # a step's extra requests after replies no one can read
FEEDBACK = ("[Format error] Your last reply could not be used: {problem}. Nothing was run. Reply again with "
            "the section [[ ## reasoning ## ]] (a few sentences), then [[ ## code ## ]] with Python code in a "
            "```python block, then [[ ## completed ## ]].")


class UnreadableReply(DeepAgentError, RuntimeError):
    """The model's replies for one step could not be read, however often it was asked."""


class ContextTooLong(DeepAgentError, RuntimeError):
    """The step's prompt does not fit the model's context window and compaction cannot shorten it."""


class _Replies:
    """A caller module for one request: keeps the text and finish reason of each LM call it makes."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.finish_reasons: list[str | None] = []
        self.history = self
        self._lock = threading.Lock()

    def append(self, entry: dict[str, Any]) -> None:
        with self._lock:
            outputs = entry.get("outputs") or [""]
            first = outputs[0]
            self.texts.append(str(first.get("text") if isinstance(first, dict) else first or ""))
            self.finish_reasons.append(finish_reason(entry.get("response")))

    def pop(self, index: int = -1) -> None:
        return None

    def __len__(self) -> int:
        return 0


def finish_reason(response: Any) -> str | None:
    """``finish_reason`` of a provider response as DSPy keeps it (an lm15 Response, or OpenAI-shaped)."""
    if response is None:
        return None
    reason = getattr(response, "finish_reason", None)
    if reason is None:
        choices = response.get("choices") if isinstance(response, dict) else getattr(response, "choices", None)
        if choices:
            first = choices[0]
            reason = first.get("finish_reason") if isinstance(first, dict) else getattr(first, "finish_reason", None)
    return str(getattr(reason, "value", reason)) if reason is not None else None


@contextlib.contextmanager
def _request() -> Any:
    replies = _Replies()
    modules = [replies, *(dspy.settings.caller_modules or [])]  # the last stays the predictor (DSPy reads it)
    with dspy.context(adapter=action_adapter(dspy.settings.adapter), caller_modules=modules):
        yield replies


def _cut_off(replies: _Replies) -> bool:
    """The reply that made the step stopped at the token limit before its last section was complete."""
    return bool(replies.finish_reasons) and replies.finish_reasons[-1] == "length" \
        and COMPLETED not in replies.texts[-1]


def _no_code(prediction: Any) -> bool:
    code = getattr(prediction, "code", "")
    if code is None or str(code).strip() in ("", "None", "null", "```", "```python\n```"):
        return True
    if getattr(prediction, "reasoning", "") is None:
        prediction.reasoning = ""
    return False


def _with_feedback(kwargs: dict[str, Any], problem: str) -> dict[str, Any]:
    history = kwargs.get("repl_history")
    if not isinstance(history, REPLHistory):
        return kwargs
    note = history.append(reasoning="(my reply could not be read)", code="", output=FEEDBACK.format(problem=problem))
    return {**kwargs, "repl_history": note}


class _Step:
    """The state of one step's requests: how many were unreadable, what to tell the model."""

    def __init__(self, session: Any, kwargs: dict[str, Any]):
        self.session, self.kwargs = session, kwargs
        self.unreadable = 0
        self.problem: str | None = None
        self.requests = 0

    def admit(self) -> None:
        """Before each request: the first was admitted with the step; a retry only while under the caps."""
        self.requests += 1
        if self.requests > 1 and self.session is not None:
            check_retry(self.session.run)

    def inputs(self) -> dict[str, Any]:
        """This request's inputs: the step's, with a note on the last unreadable reply (compaction is the
        next layer of the pipeline, so the note is compacted like the rest of the history)."""
        return _with_feedback(self.kwargs, self.problem) if self.problem else self.kwargs

    def judge(self, replies: _Replies, exc: BaseException | None, prediction: Any = None) -> bool:
        """True to ask again; raises when the step has failed for good."""
        if isinstance(exc, ContextWindowExceededError):
            self._shrink(exc)
            return True
        reason = replies.finish_reasons[-1] if replies.finish_reasons else None
        if exc is not None:
            text = replies.texts[0] if replies.texts else getattr(exc, "lm_response", "")
            stopped = [r for r in ("length", "content_filter") if r in replies.finish_reasons]
            problem = diagnose(text, stopped[0] if stopped else reason)
        elif _cut_off(replies):
            problem = diagnose(replies.texts[-1], "length")
        elif _no_code(prediction):  # DSPy issue 9632: a local model's reply with no code at all
            problem = "the reply has an empty [[ ## code ## ]] section"
        else:
            return False
        self.unreadable += 1
        if self.session is not None:
            self.session.run.emit(REPLY_RETRY, step=len(self.session.run.steps) + 1, attempt=self.unreadable,
                                  problem=problem)
        if self.unreadable > FORMAT_RETRIES:
            advice = ""
            if "cut off" in problem:
                lm = dspy.settings.lm
                limit = (getattr(lm, "kwargs", None) or {}).get("max_tokens")
                advice = (f"; raise the limit: dspy.LM(..., max_tokens=...) (now {limit})" if limit
                          else "; raise the limit: dspy.LM(..., max_tokens=...)")
            raise UnreadableReply(f"the model sent {self.unreadable} unreadable replies in a row "
                                  f"(last: {problem}){advice}") from exc
        self.problem = problem
        return True

    def _shrink(self, exc: BaseException) -> None:
        history = self.kwargs.get("repl_history")
        compactor = compactor_for(self.session)
        entries = len(history.entries) if isinstance(history, REPLHistory) else 0
        if compactor is None or entries - compactor.summarized <= KEEP_VERBATIM:
            raise ContextTooLong(_too_long_message(exc, compactor is None)) from exc
        compactor.lower_limit(len(compactor.view(history).format()) // 2)


def _too_long_message(exc: BaseException, compaction_off: bool) -> str:
    model = getattr(dspy.settings.lm, "model", "the model")
    why = "compaction is off (compact_at=None)" if compaction_off else "compaction has nothing left to shorten"
    return (f"the prompt does not fit {model}'s context window and "
            f"{why}; raise the limit: a model with a longer context, less --context or fewer/smaller notebook "
            f"variables in the prompt, a lower max_output_chars, or an earlier DeepAgent.compact_at")


def predict_step(call: Callable[..., Any], session: Any, kwargs: dict[str, Any]) -> Any:
    """``call(**kwargs)`` (the action predictor's forward) until it yields a step that can run."""
    step = _Step(session, kwargs)
    while True:
        step.admit()
        with _request() as replies:
            try:
                prediction = call(**step.inputs())
            except (AdapterParseError, ContextWindowExceededError) as exc:
                if step.judge(replies, exc):
                    continue
                raise
        if not step.judge(replies, None, prediction):
            return prediction


async def apredict_step(call: Callable[..., Any], session: Any, kwargs: dict[str, Any]) -> Any:
    """The async `predict_step`."""
    step = _Step(session, kwargs)
    while True:
        step.admit()
        with _request() as replies:
            try:
                prediction = await call(**step.inputs())
            except (AdapterParseError, ContextWindowExceededError) as exc:
                if step.judge(replies, exc):
                    continue
                raise
        if not step.judge(replies, None, prediction):
            return prediction
