"""Conversation threads: follow-up runs that know what the earlier turns did.

A thread is the list of turns (runs) of one conversation; its id is its first run's
id. ``DeepAgent.run(task, thread=...)`` continues one: the run receives the earlier
turns compactly at the head of its ``context`` input (each task, its result, the
names and files it created, its steps in summary), and becomes the thread's next
turn when it ends. A run's record keeps ``config["thread"]`` and
``config["names_created"]``, so a thread can be rebuilt from the records after a
kernel restart (the records room registers that loader with `add_loader`).

After a kernel restart, records/conversations.py rebuilds threads from the run records.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ...errors import UserError
from .run import STATUS, Event, Run

TURN_RESULT_CHARS = 2000  # of the newest turns' results, whole lines (older turns: one line)
STEP_CHARS = 90
MAX_STEPS_SHOWN = 8
MAX_NAMES = 30
CONTEXT_BUDGET = 4000  # characters of earlier turns; older turns shrink to one line first
HEADER = "This cell continues an earlier conversation"
IMPORTED = "imported"  # a names_created entry ``name (imported)``: bound by the run's ``import``


class UnknownThread(UserError, ValueError):
    """No thread or run by that id; the message says what to do."""


@dataclass
class Turn:
    run: str
    task: str
    status: str = ""
    result: str = ""
    names: list[str] = field(default_factory=list)  # "name (type)" the turn created or changed
    files: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # the first line of each step's reasoning

    @classmethod
    def from_run(cls, data: dict[str, Any]) -> "Turn":
        """A turn from ``run.to_dict()`` or a run record."""
        config = data.get("config") or {}
        steps = [_first_line(step.get("reasoning") or step.get("code") or "", STEP_CHARS)
                 for step in data.get("steps") or []]
        return cls(run=str(data.get("id")), task=str(data.get("task") or ""), status=str(data.get("status") or ""),
                   result=str(data.get("result") if data.get("result") is not None else data.get("error") or ""),
                   names=list(config.get("names_created") or []), files=list(data.get("files_written") or []),
                   steps=steps)

    def describe(self, number: int, full: bool) -> str:
        head = f"Turn {number} (run {self.run}, {self.status or 'unknown'}): {_first_line(self.task, 200)}"
        if not full:
            return f"{head} -> {_first_line(self.result, 120)}"
        lines = [head, "  result:" + _result_lines(self.result, TURN_RESULT_CHARS, self.run)]
        made = [name for name in self.names if not name.endswith(f"({IMPORTED})")]
        imported = [name.split(" (")[0] for name in self.names if name.endswith(f"({IMPORTED})")]
        if made:
            lines.append(f"  names created: {', '.join(made[:MAX_NAMES])}")
        if imported:
            lines.append(f"  imported: {', '.join(imported[:MAX_NAMES])}")
        if self.files:
            lines.append(f"  files written: {', '.join(self.files[:MAX_NAMES])}")
        if self.steps:
            shown = self.steps if len(self.steps) <= MAX_STEPS_SHOWN else (
                self.steps[: MAX_STEPS_SHOWN // 2] + ["..."] + self.steps[-MAX_STEPS_SHOWN // 2:])
            lines.append(f"  steps ({len(self.steps)}): " + "; ".join(shown))
        return "\n".join(lines)


@dataclass
class Thread:
    id: str
    turns: list[Turn] = field(default_factory=list)

    def context(self, namespace: dict[str, Any] | None = None) -> str:
        """The earlier turns within `CONTEXT_BUDGET`: the oldest shrink to one line, then drop; the newest stays
        whole. The head says which of the names they made ``namespace`` holds now (all, or which are missing:
        the kernel restarted and nothing, or not everything, was restored)."""
        if not self.turns:
            return ""
        header = (f"{HEADER} (thread {self.id}, {len(self.turns)} earlier turn(s); "
                  f"{_names_now(self.turns, namespace or {})}). print(context) shows all of this.")
        numbered = list(enumerate(self.turns, start=1))
        full = [True] * len(numbered)
        while True:
            body = [turn.describe(number, keep) for (number, turn), keep in zip(numbered, full)]
            dropped = len(self.turns) - len(numbered)
            lines = [header] + ([f"({dropped} older turn(s) left out; their runs are in the records)"] if dropped else [])
            text = "\n".join(lines + body)
            if len(text) <= CONTEXT_BUDGET or len(numbered) == 1:
                return _whole_lines(text, CONTEXT_BUDGET)
            if any(full[:-1]):
                full[full.index(True)] = False
            else:
                numbered.pop(0)
                full.pop(0)


_lock = threading.Lock()
_threads: dict[str, Thread] = {}
_thread_of_run: dict[str, str] = {}
Loader = Callable[[str, Any], "Thread | None"]  # (thread or run id, workspace root) -> Thread
_loaders: list[Loader] = []


def add_loader(loader: Loader) -> None:
    """Find threads that are not in memory (e.g. in run records, after a kernel restart)."""
    if loader not in _loaders:
        _loaders.append(loader)


def find(key: str, root: Any = None) -> Thread:
    """The thread with id ``key``, or the thread of run ``key``; UnknownThread if there is none."""
    with _lock:
        thread_id = key if key in _threads else _thread_of_run.get(key)
        if thread_id is not None:
            return _threads[thread_id]
    for loader in list(_loaders):
        found = loader(key, root)
        if found is not None:
            remember(found)
            return found
    raise UnknownThread(f"there is no run or thread {key!r} to continue; %deepagent_runs lists the runs "
                        "(or start a new conversation without --continue)")


def remember(thread: Thread) -> None:
    with _lock:
        _threads[thread.id] = thread
        for turn in thread.turns:
            _thread_of_run[turn.run] = thread.id


def thread_of(run_id: str) -> str | None:
    with _lock:
        return _thread_of_run.get(run_id)


def join(run: Run, thread: Any, namespace: dict[str, Any], context: str, root: Any = None) -> str:
    """Make ``run`` a turn of a thread; return ``context`` with the earlier turns first.

    ``thread``: None or ``"new"`` (a new thread), a `Thread`, or a thread or run id. The
    run becomes the thread's next turn when it ends, with the names it created.
    """
    if thread is None and run.depth > 0:
        return context  # a sub-agent's run is a turn of no conversation
    if thread is None or thread == "new":
        current = Thread(run.id)
    elif isinstance(thread, Thread):
        current = thread
    elif isinstance(thread, Run):
        current = find(thread.id, root)
    else:
        current = find(str(thread), root)
    remember(current)
    earlier = current.context(namespace)
    run.config["thread"] = current.id
    before = _snapshot(namespace)

    def on_event(event: Event) -> None:
        if event.run is run and event.kind == STATUS and run.ended_at is not None:
            imported = {change["name"] for change in getattr(run, "changes", ()) if change.get("imported")}
            run.config["names_created"] = _created(namespace, before, imported)
            with _lock:
                if all(turn.run != run.id for turn in current.turns):
                    current.turns.append(Turn.from_run(run.to_dict()))
                _thread_of_run[run.id] = current.id

    run.subscribe(on_event)
    return "\n\n".join(part for part in (earlier, context) if part)


def _names_now(turns: list[Turn], namespace: dict[str, Any]) -> str:
    """Whether the names the earlier turns made are defined now, said truthfully."""
    made = list(dict.fromkeys(entry.split(" (")[0] for turn in turns for entry in turn.names))
    missing = [name for name in made if name not in namespace]
    if not made:
        return "they left no names"
    if not missing:
        return "the names they made are defined"
    if len(missing) == len(made):
        return "none of the names they made is defined now"
    shown = ", ".join(missing[:MAX_NAMES]) + (f" and {len(missing) - MAX_NAMES} more" if len(missing) > MAX_NAMES else "")
    return f"of the names they made, {shown} {'is' if len(missing) == 1 else 'are'} not defined now"


def _snapshot(namespace: dict[str, Any]) -> dict[str, int]:
    return {name: id(value) for name, value in list(namespace.items()) if not name.startswith("_")}


def _created(namespace: dict[str, Any], before: dict[str, int], imported: set[str] = frozenset()) -> list[str]:
    """``name (type)`` for each name the run bound, ``name (imported)`` for one its ``import`` bound (modules
    aside): a checkpoint saves both, the next turn is told which is which."""
    names = []
    for name, value in list(namespace.items()):
        if name.startswith("_") or before.get(name) == id(value) or callable(value) and name == "SUBMIT":
            continue
        if type(value).__name__ == "module":
            continue
        names.append(f"{name} ({IMPORTED if name in imported else type(value).__name__})")
    return names[:MAX_NAMES]


def _first_line(text: str, limit: int) -> str:
    line = next((line.strip() for line in str(text).splitlines() if line.strip()), "")
    return _clip(line, limit)


def _result_lines(text: str, limit: int, run: str) -> str:
    """A turn's result as it was written, indented, in whole lines up to ``limit``; then how much is left out."""
    lines = [line.rstrip() for line in str(text).strip("\n").splitlines()]
    kept, used = [], 0
    for line in lines:
        if used + len(line) + 5 > limit:
            break
        kept.append(line)
        used += len(line) + 5
    if len(lines) == 1 and kept:
        return " " + kept[0]
    out = "".join(f"\n    {line}" if line else "\n" for line in kept)
    if len(kept) < len(lines):
        rest = lines[len(kept):]
        out += f"\n    [... {len(rest)} more line(s), {sum(map(len, rest)):,} characters: run {run}'s record has them]"
    return out


def _whole_lines(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, never a line cut in half; a last line says what was left out."""
    if len(text) <= limit:
        return text
    lines, kept, used = text.splitlines(), [], 0
    for line in lines:
        if used + len(line) + 1 > limit - 80:
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join(kept + [f"[... {len(lines) - len(kept)} more line(s) of earlier turns left out]"])


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
