"""One ACP session: a conversation whose prompts are runs, one after another, in one place.

A prompt is one ``%%deepagent`` cell in the session's place (`own_kernel.OwnKernel`, or a notebook's
kernel through the run API): its run id is the session's id and the turn's number
(``<session>-<n>``), so the session's runs are found again by their records (`load`). The first
prompt starts a new conversation (``--new``); each later one continues the last run's
(``--continue <run>``), as a follow-up cell does, also after the kernel restarted: the thread is read
back from the (signed) records.

While the cell runs, the session follows the run's events (`updates.Translator` turns each into the
chat's updates), answers its questions for the user (an approval is the run's ``approval_asked``
event, then the cell's ``input_request``: the client's ``session/request_permission``, whose answer
goes back as ``y``, ``a``, ``n`` or ``q``), and ends the turn when the cell has ended and its log has
been read.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any, Awaitable, Callable

from acp import RequestError, schema
from acp.helpers import text_block, tool_content, update_agent_message_text, update_user_message_text

from ..core.run.event_kinds import APPROVAL_ASKED
from ..records.store import load_record, runs_dir
from ..safe_text import plain
from .options import Options
from .updates import Translator, fenced, step_id

POLL = 0.05  # seconds between two looks at the running cell
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,80}")
ANSWERS = {"run": "y", "all": "a", "refuse": "n", "stop": "q"}
OPTIONS = [schema.PermissionOption(option_id="run", name="Run it", kind="allow_once"),
           schema.PermissionOption(option_id="all", name="Run it and all the rest of this turn", kind="allow_always"),
           schema.PermissionOption(option_id="refuse", name="Don't run it", kind="reject_once"),
           schema.PermissionOption(option_id="stop", name="Don't run it, and stop", kind="reject_always")]


Send = Callable[[Any], Awaitable[None]]


class Session:
    """A conversation in one place; ``send`` delivers a ``session/update``, ``client`` asks for permission."""

    def __init__(self, session_id: str, workspace: Path, place: Any, options: Options, send: Send, client: Any):
        self.id, self.workspace, self.place, self.options = session_id, workspace, place, options
        self.send, self.client = send, client
        self.turns = 0
        self.last_run: str | None = None
        self.told_where = False
        self.busy = False
        self.cancelled = False
        self.asked: dict[str, Any] | None = None  # the last approval_asked event not yet answered
        self.permission: asyncio.Task | None = None
        self.seen_files: dict[str, str] = {}

    # ------------------------------------------------------------------ a turn
    async def prompt(self, task: str) -> schema.PromptResponse:
        if self.busy:
            raise RequestError.invalid_request({"message": "this session is already working on a prompt: wait for "
                                                           "it or cancel it (session/cancel)"})
        self.busy, self.cancelled = True, False
        try:
            if not self.told_where:
                self.told_where = True
                await self.send(update_agent_message_text(self.place.where() + "\n\n"))
            self.turns += 1
            run_id = f"{self.id}-{self.turns}"
            translator = Translator(self.workspace, seen_files=self.seen_files)
            try:
                await self.place.start(run_id, task, self.options.flags(), self.last_run)
            except (RuntimeError, OSError) as exc:  # no kernel, the run API refused: the chat reads why
                await self.send(update_agent_message_text(f"The run could not start: {plain(exc)}"))
                return schema.PromptResponse(stop_reason="end_turn")
            error = await self._follow(translator)
            if translator.status is not None:
                self.last_run = run_id  # its record exists: the next prompt continues its conversation
            elif not self.cancelled:
                await self.send(update_agent_message_text(f"The run did not start: {plain(error or 'no reason given')}"))
            return schema.PromptResponse(stop_reason=translator.stop_reason(self.cancelled),
                                         usage=translator.turn_usage())
        finally:
            self.busy, self.asked, self.permission = False, None, None

    async def _follow(self, translator: Translator) -> str | None:
        """Until the cell ends: its events as updates, its questions asked. Returns the cell's error, if any."""
        while True:
            poll = await self.place.poll()
            for event in poll.events:
                if event.get("kind") == APPROVAL_ASKED:
                    self.asked = event
                for update in translator.updates(event):
                    await self.send(update)
            if poll.question is not None and not self.cancelled:
                answer = await self._ask(poll.question)
                if not self.cancelled:
                    await self.place.answer(answer)
            if poll.ended:
                return poll.error
            await asyncio.sleep(POLL)

    async def _ask(self, prompt: str) -> str:
        """The user's answer to the run's question, through the client; ``q`` if the turn is cancelled meanwhile."""
        asked, self.asked = self.asked, None
        if asked is None:  # input() called by the agent's own code: there is no one to type for it
            return ""
        data = asked.get("data") or {}
        code, reasons, action = str(data.get("code") or ""), data.get("reasons") or [], data.get("action")
        why = "; ".join(str(reason) for reason in reasons) or "you asked to approve every block"
        title = f"Allow: {action}" if action else f"Run step {data.get('step')}? ({why})"
        call = schema.ToolCallUpdate(tool_call_id=step_id(str(asked.get("run")), data.get("step")), title=plain(title),
                                     kind="execute", status="pending",
                                     content=[tool_content(text_block(fenced(plain(code), "python"))),
                                              tool_content(text_block(plain(action or why)))],
                                     raw_input={"code": code, "reasons": reasons, "action": action,
                                                "agent": data.get("agent")})
        self.permission = asyncio.ensure_future(self.client.request_permission(session_id=self.id, tool_call=call,
                                                                               options=OPTIONS))
        await asyncio.wait({self.permission})
        if self.permission.cancelled() or self.permission.exception() is not None:
            return "q"
        outcome = self.permission.result().outcome
        return ANSWERS.get(getattr(outcome, "option_id", ""), "q") if outcome.outcome == "selected" else "q"

    async def cancel(self) -> None:
        """``session/cancel``: stop the running cell (its run ends ``interrupted``); the turn ends ``cancelled``."""
        if not self.busy:
            return
        self.cancelled = True
        if self.permission is not None:
            self.permission.cancel()
        await self.place.stop()

    # ------------------------------------------------------------------ resuming
    def runs(self) -> list[dict[str, Any]]:
        """This session's runs, from their records: only those the host signed, in turn order."""
        found = []
        folder = runs_dir(self.workspace)
        for path in folder.glob(f"{glob_safe(self.id)}-*.json"):
            number = path.name[len(self.id) + 1:-len(".json")]
            if not number.isdigit():
                continue
            try:
                record = load_record(path)
            except (OSError, ValueError):
                continue
            if record.get("_host_written"):
                found.append((int(number), record))
        return [record for _, record in sorted(found, key=lambda pair: pair[0])]

    async def load(self) -> None:
        """``session/load``: the conversation so far, replayed to the client; the next prompt continues it."""
        runs = self.runs()
        if not runs:
            raise RequestError.resource_not_found(f"session {self.id} (no run of it in {self.workspace})")
        for record in runs:
            await self.send(update_user_message_text(plain(record.get("task") or "")))
            result = record.get("result") if record.get("status") == "finished" else None
            said = str(result) if result is not None else f"({record.get('status')}: {record.get('error') or ''})"
            await self.send(update_agent_message_text(plain(said)))
        self.turns = int(str(runs[-1]["id"]).rsplit("-", 1)[1])
        self.last_run = str(runs[-1]["id"])

    async def close(self) -> None:
        if self.busy:
            await self.cancel()
        await self.place.close()


def glob_safe(text: str) -> str:
    return re.sub(r"([*?\[\]])", r"[\1]", text)
