"""What agent runs changed in the notebook (``run.changes``: ``interpreters/provenance.py``): the cell's
summary after a run, the names runs made, ``%deepagent_why`` (which run and step made a name) and
``%deepagent_undo`` (taking a run back: ``core/policy/undo.py``).
"""

from __future__ import annotations

import textwrap
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..core.policy import undo
from ..interpreters.provenance import UserCells
from .configured import AgentMagicsBase
from .inputs.flags import one_line, parse_flags


def summarize(run: Any) -> None:
    """The cell's summary after a run: approvals refused or a stop, and what the run changed."""
    from ..display.markup import not_sandboxed_line

    refused = [entry for entry in run_tree_approvals(run) if entry["decision"] == "refused"]
    if run.status == "stopped":
        print(f"deepagent: the run was {run.error or 'stopped'}; its steps and variables are kept "
              "(_deepagent_run)")
    if refused:
        print(f"deepagent: {len(refused)} block(s) needed your approval and were not run "
              "(_deepagent_run.approvals says which and why)")
    line = summarize_changes(run)
    if line:
        print(line)
    line = not_sandboxed_line(run)
    if line:
        print(line)


def run_tree_approvals(run: Any) -> list[dict[str, Any]]:
    """Every approval decision of ``run`` and its sub-agents, oldest first."""
    entries = [entry for each in run.walk() for entry in getattr(each, "approvals", [])]
    return sorted(entries, key=lambda entry: entry["time"])


def summarize_changes(run: Any) -> str | None:
    """One line naming what the run left changed in the namespace (None: nothing)."""
    created = _names(run, "created", lambda c: not c.get("restored") and not c.get("loop"))
    changed = _names(run, "changed")
    if not created and not changed:
        return None
    parts = []
    if created:
        parts.append(f"created {_listed(created)}")
    if changed:
        parts.append(f"changed in place {_listed(changed)}")
    return (f"deepagent: this run {'; '.join(parts)} (%deepagent_why NAME says how; "
            f"%deepagent_undo takes the run back)")


def agent_names(runs: list[Any], namespace: dict[str, Any], user_cells: Any = None) -> list[str]:
    """The names runs of this session made that still hold what the run left there, and that no cell of the
    user's assigned since (``user_cells``: `provenance.UserCells`): the variables view lists them last, and
    ``{name}`` in a cell does not expand them."""
    latest: dict[str, dict[str, Any]] = {}
    for run in runs:
        for change in getattr(run, "changes", ()):
            if change["kind"] == "created" and not change.get("restored"):
                latest[change["name"]] = change
    out = []
    for name, change in latest.items():
        ref = change.get("_value")
        if user_cells is not None and user_cells.since(name, change.get("_tick", 0)):
            continue  # the user set it again (even to the very same object): it is theirs now
        if name in namespace and ref is not None and ref.matches(namespace[name]):
            out.append(name)
    return out


def _names(run: Any, kind: str, keep: Any = lambda change: True) -> list[str]:
    names: list[str] = []
    for change in run.changes:
        if change["kind"] == kind and keep(change) and change["name"] not in names:
            names.append(change["name"])
    return names


def _listed(names: list[str], most: int = 8) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


@magics_class
class ChangesMagics(AgentMagicsBase):
    """``%deepagent_why NAME`` and ``%deepagent_undo [RUN]`` over the runs of this kernel session."""

    def __init__(self, shell: Any = None, **kwargs: Any):
        super().__init__(shell=shell, **kwargs)
        self.user_cells = UserCells(shell)  # what the user's own cells assign: undo keeps it
        if shell is not None:
            shell.events.register("post_run_cell", self.user_cells.post_run_cell)

    def stop_watching(self) -> None:
        try:
            self.shell.events.unregister("post_run_cell", self.user_cells.post_run_cell)
        except ValueError:
            pass

    @magic_arguments()
    @argument("name", help="a notebook variable")
    @line_magic
    def deepagent_why(self, line: str) -> None:
        """Say which run and step made or changed NAME, with the step's code."""
        args = parse_flags(self.deepagent_why, line)
        name = args.name
        if not name.isidentifier():
            raise UsageError(f"%deepagent_why {one_line(name, 80)!r}: give the name of a notebook variable")
        found = undo.why(self._core().runs, name)
        if found is None:
            raise UsageError(f"no agent run in this kernel session made or changed {name!r}")
        run, change = found
        verb = {"created": "created", "rebound": "rebound", "deleted": "deleted", "changed": "changed in place"}
        where = f"step {change['step']}" if change["step"] is not None else "a step that did not name it"
        head = one_line(run.task, 80)
        print(f"{name} was {verb[change['kind']]} by run {run.id} ({head!r}), {where}.")
        if change.get("restored"):
            print("  (your own value was put back when the run ended)" if change["kind"] != "created"
                  else "  (a `_`-named scratch variable: taken away when the run ended)" if change.get("scratch")
                  else "  (it shadowed a builtin, so it was taken away when the run ended)")
        if getattr(run, "undone_at", None) is not None:
            print("  (that run has been undone since)")
        if self.user_cells.since(name, change.get("_tick", 0)):
            print("  (you have set it since, in a cell of your own)")
        if change["step"] is not None and 0 < change["step"] <= len(run.steps):
            step = run.steps[change["step"] - 1]
            if step.reasoning:
                print(f"Reasoning: {one_line(step.reasoning, 200)}")
            print("Code:\n" + textwrap.indent(step.code, "    "))

    @magic_arguments()
    @argument("run", nargs="?", help="the run's id (default: the last run of this session)")
    @line_magic
    def deepagent_undo(self, line: str) -> None:
        """Take a run back: remove the names it created, restore what it changed in place where a snapshot exists."""
        args = parse_flags(self.deepagent_undo, line)
        runs = self._core().runs
        if not runs:
            raise UsageError("no agent run in this kernel session to undo")
        if args.run is None:
            run = runs[-1]
        else:
            matches = [run for run in runs if run.id == args.run] or [run for run in runs if run.id.startswith(args.run)]
            if len(matches) != 1:
                raise UsageError(f"no run {one_line(args.run, 80)!r} in this kernel session"
                                 + (" (the id is ambiguous)" if matches else "; %deepagent_runs lists the runs"))
            run = matches[0]
        try:
            report = undo.undo_in(runs, run, self.shell.user_ns, user_cells=self.user_cells)
        except undo.AlreadyUndone as exc:
            raise UsageError(str(exc)) from None
        parts = report.parts()
        print(f"deepagent: undid run {run.id}: " + ("; ".join(parts) if parts else "it changed nothing in the namespace"))
