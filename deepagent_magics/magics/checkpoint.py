"""``%deepagent_checkpoint [NAME]`` and ``%deepagent_resume [NAME]``: the workshop across kernel restarts.

The checkpoint (records/checkpoint.py) holds the variables this kernel's agent runs
created, the code that made the ones that cannot be serialised, the conversation
threads and the todo lists. After a restart, ``%deepagent_resume`` restores them and
``--continue`` continues the checkpoint's last conversation. Only a checkpoint this host
signed is read; recorded code runs again only after the user, shown it, says yes
(`ask_to_replay`: on stdin, as approval asks; with no stdin, it is not run).

What a checkpoint holds and how it is written and read is records/checkpoint.py.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..core.policy.approval import stdin_asker
from ..core.run import conversations as threads
from ..core.run.secrets import scrub
from ..records.checkpoint import CheckpointError, restore, save
from .inputs.flags import parse_flags
from .configured import AgentMagicsBase

DEFAULT_NAME = "default"
SHOWN_LINES = 60  # of the code to replay, before asking


def ask_to_replay(names: list[str], code: str) -> tuple[bool, str]:
    """Show the code that would run again and ask on stdin; (yes or no, why not)."""
    ask = stdin_asker()
    if ask is None or getattr(getattr(ask, "__self__", None), "_allow_stdin", True) is False:
        return False, "there is no stdin to ask you (run %deepagent_resume in a notebook or a terminal)"
    lines = scrub(code).splitlines()
    if len(lines) > SHOWN_LINES:
        lines = lines[:SHOWN_LINES] + [f"# ... {len(lines) - SHOWN_LINES} more lines"]
    print(f"{', '.join(names)} could not be saved as values. Rebuilding them runs this recorded code again "
          "in a scratch copy of your variables (files it writes are written again):\n" + "\n".join(lines))
    try:
        answer = ask(f"Run it to rebuild {', '.join(names)}? [y/N] ")
    except (EOFError, OSError, RuntimeError):  # StdinNotImplementedError is a RuntimeError
        return False, "there is no stdin to ask you"
    if str(answer).strip().lower() in ("y", "yes"):
        return True, ""
    return False, "you said no"


def _thread(data: Any) -> "threads.Thread | None":
    """A thread from a manifest entry, or None when the entry is not one."""
    if not isinstance(data, dict) or not isinstance(data.get("id"), str) or not isinstance(data.get("turns"), list):
        return None
    try:
        return threads.Thread(data["id"], [threads.Turn(**turn) for turn in data["turns"]])
    except TypeError:  # a turn that is not a mapping of Turn's fields
        return None


def _size(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count} B"


@magics_class
class CheckpointMagics(AgentMagicsBase):
    """Save the workshop into the workspace; restore it after a kernel restart."""

    def _workshop(self) -> tuple[list[str], list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], str | None]:
        """(names, replay code, threads, todos, last thread) of this kernel's runs and the checkpoint resumed."""
        core = self._core()
        resumed = getattr(core, "resumed", None) or {}  # what %deepagent_resume brought back, saved again
        names = list(resumed.get("names", []))
        replay = list(resumed.get("replay", []))
        thread_ids = list(resumed.get("threads", []))
        todos: dict[str, Any] = dict(resumed.get("todos", {}))
        last = resumed.get("thread")
        for run in core.runs:
            if run.depth != 0:
                continue
            names += [entry.split(" (")[0] for entry in run.config.get("names_created") or []]
            if run.config.get("out"):
                names.append(run.config["out"])  # the result, stored by --out after the run
            replay.append({"run": run.id, "code": [step.code for step in run.steps if step.code]})
            if run.config.get("thread"):
                thread_ids.append(run.config["thread"])
                last = run.config["thread"]
            if run.todos:
                todos[run.id] = [dict(item) for item in run.todos]
        saved_threads = []
        for thread_id in dict.fromkeys(thread_ids):
            try:
                saved_threads.append(asdict(threads.find(thread_id, core.workspace)))
            except threads.UnknownThread:
                continue
        return names, replay, saved_threads, todos, last

    @magic_arguments()
    @argument("name", nargs="?", default=DEFAULT_NAME, help="the checkpoint's name (default: default)")
    @argument("--workspace", help="the workspace to save into (default: the configured one)")
    @line_magic
    def deepagent_checkpoint(self, line: str) -> None:
        """Save the variables the agent's runs created, the threads and the todos into the workspace."""
        args = parse_flags(self.deepagent_checkpoint, line)
        names, replay, saved_threads, todos, last = self._workshop()
        if not names and not saved_threads:
            raise UsageError("nothing to checkpoint yet: run a %%deepagent cell first")
        root = args.workspace or self._core().workspace
        try:
            report = save(root, args.name, self.shell.user_ns, names, replay, saved_threads,
                          {"runs": todos, "last_thread": last})
        except CheckpointError as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"could not write the checkpoint: {exc.strerror or exc}") from None
        hows = [how for how in report.saved.values()]
        parts = ", ".join(f"{hows.count(how)} {label}" for how, label in
                          (("pickle", "pickled"), ("parquet", "as Parquet"), ("replay", "to replay from their code"))
                          if hows.count(how))
        print(f"Checkpoint {args.name!r}: {len(report.saved)} variable(s) ({parts or 'none'}), "
              f"{len(saved_threads)} thread(s), {_size(report.bytes)} in {report.seconds:.2f} s -> {report.path}")
        for name, why in report.skipped.items():
            print(f"  not saved: {name} ({why})")

    @magic_arguments()
    @argument("name", nargs="?", default=DEFAULT_NAME, help="the checkpoint to restore (default: default)")
    @argument("--workspace", help="the workspace to read it from (default: the configured one)")
    @line_magic
    def deepagent_resume(self, line: str) -> None:
        """Restore a checkpoint: its variables (loaded or replayed), threads and todos."""
        args = parse_flags(self.deepagent_resume, line)
        core = self._core()
        root = args.workspace or core.workspace
        try:
            report, manifest = restore(root, args.name, self.shell.user_ns, approve=ask_to_replay)
        except CheckpointError as exc:
            raise UsageError(str(exc)) from None
        thread_ids = []
        for data in manifest.get("threads") if isinstance(manifest.get("threads"), list) else []:
            thread = _thread(data)
            if thread is not None:
                threads.remember(thread)
                thread_ids.append(thread.id)
        todos = manifest.get("todos") if isinstance(manifest.get("todos"), dict) else {}
        runs = todos.get("runs") if isinstance(todos.get("runs"), dict) else {}
        last = todos.get("last_thread") if isinstance(todos.get("last_thread"), str) else None
        core.resumed = {"names": [entry["name"] for entry in manifest["variables"]
                                  if isinstance(entry, dict) and isinstance(entry.get("name"), str)],
                        "replay": [run for run in manifest.get("replay") or [] if isinstance(run, dict)]
                        if isinstance(manifest.get("replay"), list) else [],
                        "threads": thread_ids, "todos": runs, "thread": last,
                        # for the runs after it: an export of one resumes the same checkpoint (records/rerun.py)
                        "checkpoint": args.name, "from": str(root), "at": time.time(), "restored": list(report.restored)}
        print(f"Resumed {args.name!r}: {len(report.restored)} variable(s) restored"
              f"{' (' + ', '.join(report.restored) + ')' if report.restored else ''}, {len(thread_ids)} thread(s); "
              f"%%deepagent --continue picks up the last conversation")
        for name, why in report.skipped.items():
            print(f"  not restored: {name}: {why}")
