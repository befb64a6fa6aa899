"""What the chat sees: a run's events, as ACP's own ``session/update``s.

A listener on the run's one event stream (the events of its event log, as the run API's feed
sends them: ``{"kind", "run", "parent", "depth", "data"}``), like the display and the record:

- the todo list (``todos``) is a ``plan``;
- each step (``step_started``) is a ``tool_call`` of kind ``execute`` with its code as content, and
  its output (``step_finished``) a ``tool_call_update``; the step's reasoning, the model's text, is an
  ``agent_message_chunk`` before it;
- each file written (``file_written``) is a ``tool_call`` of kind ``edit`` with ``diff`` content;
- each sub-agent (``subagent_started``) is a ``tool_call`` of kind ``think``; its steps are tool calls
  of their own whose ``_meta.deepagent.parent`` is the sub-agent's call (ACP has no nesting), and its
  end (its ``run_finished``) completes it with its result;
- the root run's end is the final ``agent_message_chunk`` (the result, or why there is none), and the
  LM calls' usage (``lm_usage``) the turn's ``usage``.

Every text has already been scrubbed of secrets where the run wrote it; the text of a written
file, read here, is scrubbed again on the way out, and terminal control characters are escaped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import schema
from acp.helpers import plan_entry, start_tool_call, text_block, tool_content, update_agent_message_text, update_plan

from ..core.run.event_kinds import (FILE_WRITTEN, LM_USAGE, RUN_FINISHED, STEP_FINISHED, STEP_STARTED,
                                    SUBAGENT_STARTED, TODOS)
from ..core.run.secrets import scrub
from ..safe_text import plain

MAX_DIFF_BYTES = 256 * 1024  # a bigger file is named, not shown
PLAN_STATUSES = {"pending", "in_progress", "completed"}
STOP_REASONS = {"finished": "end_turn", "failed": "end_turn", "interrupted": "cancelled", "stopped": "cancelled",
                "budget_exhausted": "max_turn_requests"}


def text(value: Any) -> str:
    return plain("" if value is None else value)


def step_id(run: str, index: Any) -> str:
    return f"{run}:step-{index}"


def fenced(code: str, language: str = "") -> str:
    fence = "```"
    while fence in code:
        fence += "`"
    return f"{fence}{language}\n{code}\n{fence}"


@dataclass
class Translator:
    """The updates for each event of one turn's run, in order; what the turn used and how it ended."""

    workspace: Path
    seen_files: dict[str, str] = field(default_factory=dict)  # path -> text last shown (a diff's old text)
    usage: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0, "cached": 0})
    status: str | None = None  # the root run's, once it ended
    error: str | None = None
    labels: dict[str, str] = field(default_factory=dict)  # a sub-agent's run id -> its label
    parents: dict[str, str] = field(default_factory=dict)  # a sub-agent's run id -> its tool call id
    files: int = 0

    def updates(self, event: dict[str, Any]) -> list[Any]:
        kind, run, data = event.get("kind"), str(event.get("run")), event.get("data") or {}
        root = event.get("parent") is None
        if kind == STEP_STARTED:
            return self._step_started(run, root, data)
        if kind == STEP_FINISHED:
            return [self._step_finished(run, data)]
        if kind == TODOS:
            return [self._plan(data.get("todos"))]
        if kind == FILE_WRITTEN:
            return [self._file(run, data)]
        if kind == SUBAGENT_STARTED:
            return [self._subagent(run, data)]
        if kind == LM_USAGE:
            self._count(data)
        elif kind == RUN_FINISHED:
            return self._root_end(data) if root else [self._subagent_end(run, data)]
        return []

    # ------------------------------------------------------------------ steps
    def _step_started(self, run: str, root: bool, data: dict[str, Any]) -> list[Any]:
        index, code, reasoning = data.get("index"), text(data.get("code")), text(data.get("reasoning")).strip()
        out: list[Any] = []
        if root and reasoning:
            out.append(update_agent_message_text(reasoning + "\n\n"))
        title = f"Step {index}" if root else f"{self.labels.get(run, 'sub-agent')} · step {index}"
        call = start_tool_call(step_id(run, index), title, kind="execute", status="in_progress",
                               content=[tool_content(text_block(fenced(code, "python")))], raw_input={"code": code})
        if not root:
            call.field_meta = {"deepagent": {"parent": self.parents.get(run), "run": run}}
        out.append(call)
        return out

    def _step_finished(self, run: str, data: dict[str, Any]) -> Any:
        output = text(data.get("output"))
        return schema.ToolCallProgress(session_update="tool_call_update", tool_call_id=step_id(run, data.get("index")),
                                       status="completed", raw_output={"output": output},
                                       content=[tool_content(text_block(fenced(output or "(no output)")))])

    # ------------------------------------------------------------------ the plan, files
    def _plan(self, todos: Any) -> Any:
        entries = []
        for item in todos if isinstance(todos, list) else []:
            if isinstance(item, dict) and str(item.get("content", "")).strip():
                status = item.get("status") if item.get("status") in PLAN_STATUSES else "pending"
                entries.append(plan_entry(text(item["content"]), status=status))
        return update_plan(entries)

    def _file(self, run: str, data: dict[str, Any]) -> Any:
        self.files += 1
        relative = text(data.get("path"))
        path = self._inside(relative)
        content: list[Any]
        new = self._read(path) if path is not None else None
        if path is not None and new is not None:
            old = self.seen_files.get(str(path))
            self.seen_files[str(path)] = new
            content = [schema.FileEditToolCallContent(type="diff", path=str(path), new_text=new, old_text=old)]
        else:
            content = [tool_content(text_block(f"wrote {relative} ({data.get('size')} bytes)"))]
        locations = [schema.ToolCallLocation(path=str(path))] if path is not None else None
        return start_tool_call(f"{run}:file-{self.files}", f"Write {relative}", kind="edit", status="completed",
                               content=content, locations=locations, raw_input={"path": relative})

    def _inside(self, relative: str) -> Path | None:
        """The written file, only when it is a file inside the workspace (the log may have been planted)."""
        if not relative or "\x00" in relative:
            return None
        try:
            root = self.workspace.resolve()
            path = (root / relative).resolve()
        except (OSError, RuntimeError):
            return None
        return path if root in path.parents and path.is_file() else None

    @staticmethod
    def _read(path: Path) -> str | None:
        try:
            if path.stat().st_size > MAX_DIFF_BYTES:
                return None
            return scrub(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            return None

    # ------------------------------------------------------------------ sub-agents
    def _subagent(self, run: str, data: dict[str, Any]) -> Any:
        child = data.get("child") if isinstance(data.get("child"), dict) else {}
        child_id, task = str(child.get("id")), text(child.get("task")).strip()
        head = (task.splitlines() or [""])[0][:80]
        self.labels[child_id] = f"sub-agent {child_id[-6:]}"
        self.parents[child_id] = f"subagent-{child_id}"
        call = start_tool_call(self.parents[child_id], f"Sub-agent: {head}", kind="think", status="in_progress",
                               content=[tool_content(text_block(task))], raw_input={"task": task})
        call.field_meta = {"deepagent": {"parent": step_id(run, data.get("step")), "run": child_id}}
        return call

    def _subagent_end(self, run: str, data: dict[str, Any]) -> Any:
        status, result, error = data.get("status"), text(data.get("result")), text(data.get("error"))
        said = result if status == "finished" else f"{status}: {error}".rstrip(": ")
        return schema.ToolCallProgress(session_update="tool_call_update", tool_call_id=f"subagent-{run}",
                                       status="completed" if status == "finished" else "failed",
                                       content=[tool_content(text_block(said or "(no result)"))],
                                       raw_output={"status": status, "result": result, "error": error or None})

    # ------------------------------------------------------------------ the end
    def _count(self, data: dict[str, Any]) -> None:
        for key, name in (("input", "input_tokens"), ("output", "output_tokens"), ("cached", "cached_tokens")):
            try:
                self.usage[key] += int(data.get(name) or 0)
            except (TypeError, ValueError):
                pass

    def _root_end(self, data: dict[str, Any]) -> list[Any]:
        self.status, self.error = data.get("status"), text(data.get("error")) or None
        if self.status == "finished":
            result = text(data.get("result"))
            return [update_agent_message_text(result if result.strip() else "(the agent finished with no result)")]
        return [update_agent_message_text(self.ending())]

    def ending(self) -> str:
        """What the chat reads when the run did not finish."""
        what = {"interrupted": "Stopped", "stopped": "Stopped", "budget_exhausted": "Stopped at a spend cap",
                "failed": "The run failed"}.get(self.status or "", f"The run ended {self.status}")
        return f"{what}{': ' + self.error if self.error else '.'}"

    def stop_reason(self, cancelled: bool) -> str:
        return "cancelled" if cancelled else STOP_REASONS.get(self.status or "", "end_turn")

    def turn_usage(self) -> schema.Usage:
        used = self.usage
        return schema.Usage(input_tokens=used["input"], output_tokens=used["output"],
                            total_tokens=used["input"] + used["output"], cached_read_tokens=used["cached"] or None)
