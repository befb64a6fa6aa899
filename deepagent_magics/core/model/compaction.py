"""Compaction: a long run's prompt stays bounded, and nothing is lost.

``dspy.RLM`` restates its whole REPL history in every action request. When that
history passes the agent's ``compact_at`` (tokens, or a fraction of the model's
context window: the LM's ``deepagent_context_window`` when it has one, as the local
server's LM does, else as LiteLLM reports it), the older steps are replaced *in the
prompt* by a summary the sub-LM writes; the last `KEEP_VERBATIM` steps stay verbatim. The
RLM's own history, the run's steps and its record keep every step; where the agent can read
them back is what its capabilities say (their ``notes[COMPACTED]``: the history tool's), shown
in the compacted history's head.

The one place this touches DSPy: `CompactedHistory`, a ``REPLHistory`` subclass
whose ``format`` renders the summary and the recent steps. `StepPredict` hands it to
the action predictor in place of RLM's history (`compact`). `tests/core/model/test_compaction.py`
fails loudly when DSPy changes what this relies on (the ``repl_history`` keyword, a
``REPLHistory`` of entries with reasoning, code and output, formatted by ``format``).
"""

from __future__ import annotations

import contextlib
import functools
import io
import threading
from typing import Any

import dspy
from dspy.primitives.repl_types import REPLEntry, REPLHistory
from ..run.event_kinds import COMPACTION
from .price_list import bundled_price_list
from ...settings import SETTINGS

DEFAULT_COMPACT_AT = SETTINGS["compact_at"].default  # 0.5 of the context window (deepagents and the RLM paper compact at 0.85 of a full one)
FALLBACK_WINDOW = 128_000  # tokens, when LiteLLM does not know the model
MIN_WINDOW = 4_096  # tokens: below a share of this, no history needs compacting, whatever the model
CHARS_PER_TOKEN = 4
KEEP_VERBATIM = 3
SUMMARY_CHARS = 2_000
NO_STEPS = "No steps yet."
COMPACTED = "compacted"  # a capability's note for the compacted history's head: where every step can still be read

SUMMARY_PROMPT = """You compress the history of a coding agent working in a Python REPL.
Write a summary of at most 200 words that keeps what later steps need: the variables made and
what they hold, the facts found, the files written, what failed and why, what remains to do.
{previous}Steps to summarise:
{steps}

Summary:"""


class Steps(REPLHistory):
    """A REPL history as the prompt shows it: each step once, its number with its reasoning, its code, what it
    printed; no field label restated step after step (DSPy's ``=== Step N ===``, ``Reasoning:``, ``Code:``,
    ``Output (N chars):``). `as_steps` makes RLM's history one, before any layer of the step pipeline sees it."""

    def format(self) -> str:
        if not self.entries:
            return NO_STEPS
        return "\n".join(step_text(entry, i, self.max_output_chars) for i, entry in enumerate(self.entries))

    def append(self, *, reasoning: str = "", code: str, output: str) -> "Steps":
        return Steps(entries=[*self.entries, REPLEntry(reasoning=reasoning, code=code, output=output)],
                     max_output_chars=self.max_output_chars)


def as_steps(history: Any) -> Any:
    """RLM's REPL history as `Steps` (what is not a history, or is one of ours already, as it is)."""
    if type(history) is not REPLHistory:
        return history
    return Steps(entries=list(history.entries), max_output_chars=history.max_output_chars)


def step_text(entry: Any, index: int, max_output_chars: int) -> str:
    """``Step 3. reasoning``, the code fenced, then ``Output:`` and what it printed (past ``max_output_chars``, its
    head and tail, with how much is left out between them)."""
    output = str(entry.output or "")
    if len(output) > max_output_chars:
        head = max_output_chars // 2
        left_out = len(output) - max_output_chars
        output = f"{output[:head]}\n\n... ({left_out:,} characters left out) ...\n\n{output[-(max_output_chars - head):]}"
    reasoning = f" {entry.reasoning}" if entry.reasoning else ""
    return f"Step {index + 1}.{reasoning}\n```\n{entry.code}\n```\nOutput:\n{output}"


class CompactedHistory(Steps):
    """A REPL history as the prompt shows it: a summary of the older steps, then the recent ones verbatim."""

    summary: str = ""
    summarized: int = 0  # how many of the earliest steps the summary stands for
    where: str = ""  # where every step can still be read (the capabilities' note), if anywhere

    def format(self) -> str:
        recent = "\n".join(step_text(entry, self.summarized + i, self.max_output_chars)
                           for i, entry in enumerate(self.entries))
        where = f"; {self.where}" if self.where else ""
        head = f"Steps 1-{self.summarized}, compacted{where}:\n{self.summary}"
        return head + ("\n" + recent if recent else "")


def threshold_tokens(compact_at: float | int | None, lm: Any) -> int | None:
    """``compact_at`` in tokens: as given, or that fraction of ``lm``'s context window (None: never)."""
    if compact_at is None or compact_at <= 0:
        return None
    if compact_at > 1:
        return int(compact_at)
    return int(compact_at * context_window(lm))


def context_window(lm: Any) -> int:
    """The model's input window: what the LM says it is (``lm.deepagent_context_window``, set by the local
    server, `local_server`, and by any user who knows their server's), else what LiteLLM's bundled price
    list reports (`FALLBACK_WINDOW` when unknown)."""
    known = getattr(lm, "deepagent_context_window", None)
    if isinstance(known, int) and not isinstance(known, bool) and known > 0:
        return known
    model = getattr(lm, "model", None)
    return _window(model) if isinstance(model, str) else FALLBACK_WINDOW


@functools.lru_cache(maxsize=64)
def _window(model: str) -> int:
    try:  # a window size is no reason to go online: LiteLLM's bundled price list
        with bundled_price_list(), contextlib.redirect_stdout(io.StringIO()):  # it prints providers for unknown models
            import litellm

            info = litellm.get_model_info(model)
        window = info.get("max_input_tokens") or info.get("max_tokens")
        return int(window) if window else FALLBACK_WINDOW
    except Exception:  # an unknown or custom model
        return FALLBACK_WINDOW


class Compactor:
    """One run's compaction state: the summary so far and how many steps it covers."""

    def __init__(self, run: Any, compact_at: float | int, lm: Any = None, sub_lm: Any = None, where: str = ""):
        self.run = run
        self.where = where
        self.compact_at = compact_at
        self.lm = lm
        self._limit_chars: int | None = None
        self.sub_lm = sub_lm
        self.summary = ""
        self.summarized = 0
        self._lock = threading.Lock()

    def limit_chars(self, size: int) -> int:
        """The limit in characters; the model's window is looked up (LiteLLM) only once a history could pass it."""
        if self._limit_chars is None:
            if self.compact_at <= 1 and size <= self.compact_at * MIN_WINDOW * CHARS_PER_TOKEN:
                return size + 1  # smaller than any window's share: no need to ask LiteLLM yet
            self._limit_chars = (threshold_tokens(self.compact_at, self.lm) or 0) * CHARS_PER_TOKEN
        return self._limit_chars

    def lower_limit(self, chars: int) -> None:
        """Compact at ``chars`` from now on (a context-length error said the history does not fit)."""
        self._limit_chars = max(1, min(chars, self._limit_chars or chars))

    def view(self, history: REPLHistory) -> REPLHistory:
        """What the prompt shows of ``history``: itself while it is small, else a `CompactedHistory`."""
        entries = list(history.entries)
        with self._lock:
            shown = self._shown(history, entries)
            size = len(shown.format())
            if size <= self.limit_chars(size) or len(entries) - self.summarized <= KEEP_VERBATIM:
                return shown
            before = len(history.format())
            upto = len(entries) - KEEP_VERBATIM
            self.summary = self._summarize(entries[self.summarized:upto])
            self.summarized = upto
            shown = self._shown(history, entries)
            self.run.emit(COMPACTION, step=len(entries) + 1, summarized=upto, summary=self.summary,
                          chars_before=before, chars_after=len(shown.format()))
            self.run.config.setdefault("compactions", []).append({"step": len(entries) + 1, "summarized": upto})
            return shown

    def _shown(self, history: REPLHistory, entries: list) -> REPLHistory:
        if not self.summarized:
            return history
        return CompactedHistory(entries=entries[self.summarized:], max_output_chars=history.max_output_chars,
                                summary=self.summary, summarized=self.summarized, where=self.where)

    def _summarize(self, entries: list) -> str:
        steps = "\n".join(step_text(entry, self.summarized + i, 1_500) for i, entry in enumerate(entries))
        previous = f"Summary of the steps before these:\n{self.summary}\n\n" if self.summary else ""
        lm = self.sub_lm or dspy.settings.lm
        try:
            reply = lm(SUMMARY_PROMPT.format(previous=previous, steps=steps))
            text = str(reply[0] if isinstance(reply, list) else reply).strip()
            if isinstance(reply, list) and reply and isinstance(reply[0], dict):
                text = str(reply[0].get("text", "")).strip()
        except Exception as exc:  # the summary is a convenience: a failing sub-LM falls back to the reasoning lines
            text = f"(the sub-LM could not summarise: {type(exc).__name__})\n" + _mechanical(self.summary, entries)
        if not text:
            text = _mechanical(self.summary, entries)
        return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _mechanical(previous: str, entries: list) -> str:
    lines = [previous] if previous else []
    for entry in entries:
        line = next((part.strip() for part in (entry.reasoning or entry.code).splitlines() if part.strip()), "")
        lines.append(f"- {line[:120]}")
    return "\n".join(lines)


def compactor_for(session: Any) -> Compactor | None:
    """The session's compactor, made on first use from its agent's ``compact_at`` (None: compaction off)."""
    if session is None:
        return None
    found = session.compactor
    if found is None:
        agent = session.agent
        compact_at = session.run.config.get("compact_at", getattr(agent, "compact_at", DEFAULT_COMPACT_AT))
        if compact_at is None or compact_at <= 0:
            found = session.compactor = False
        else:
            sub_lm = getattr(getattr(agent, "rlm", None), "sub_lm", None)
            extensions = getattr(agent, "extensions", None)
            where = extensions.note(COMPACTED) if extensions is not None else ""
            found = session.compactor = Compactor(session.run, compact_at, dspy.settings.lm, sub_lm, where)
    return found or None


def compact(session: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The action predictor's inputs with the REPL history compacted when it has grown past the limit."""
    history = kwargs.get("repl_history")
    compactor = compactor_for(session)
    if compactor is None or not isinstance(history, REPLHistory):
        return kwargs
    return {**kwargs, "repl_history": compactor.view(history)}
