"""Taking a run back, and saying who made a name: over ``run.changes`` (``interpreters/provenance.py``).

The rule: undo takes back only what is still as the run left it, checked now.

- A name the run created is removed only if it is still bound to the value the run left, no
  cell of the user's has assigned it since (even to the very same object: ``mode = 'fast'``
  again is the interned string the run left), and that value's content is still what the run
  left (a list it made and the user appended to since is the user's). Otherwise it is kept.
- An object the run changed in place is restored, from the copy taken before the change, only
  if its content is still what the run left; into the same object, and every inner part into
  its own original (`fingerprint.restore`), so the user's references see the restore.
- What changed since is kept as it is and named: by the user, or by a later run. A later run's
  change to the same name or object still stands: the older run's undo keeps it, says so, and
  waits; undoing that later run then takes the waiting change back too (`undo_in`), unless the user
  changed it since. So undos compose: any order ends where undoing the same runs newest-first
  would, and no order brings a change back that an undo took away.

The user's rebound names were restored when the run ended. A run is taken back once: a second
undo only retries what a later run held.
`why(runs, name)` finds the newest change to ``name`` among ``runs``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from ...errors import UserError
from . import fingerprint as fp

_MISSING = object()


class AlreadyUndone(UserError, ValueError):
    """The run was taken back before, and nothing of it waits on a later run."""


@dataclass
class UndoReport:
    removed: list[str] = field(default_factory=list)  # names the run created, now gone
    kept: list[str] = field(default_factory=list)  # names it created that you have set again since
    changed_since: list[str] = field(default_factory=list)  # left as they are now, and by whom ("rows (by you)")
    already_restored: list[str] = field(default_factory=list)  # the user's names the run's end restored
    restored: list[str] = field(default_factory=list)  # objects changed in place, restored from a snapshot
    not_restored: list[str] = field(default_factory=list)  # objects changed in place, no snapshot
    then: list[tuple[str, "UndoReport"]] = field(default_factory=list)  # (run id, report): older runs that waited on it

    def parts(self) -> list[str]:
        parts = [
            ("removed the names it created", self.removed),
            ("restored in place", self.restored),
            ("kept (you have set them since)", self.kept),
            ("kept as they are (changed since the run)", self.changed_since),
            ("your rebound names were already restored when it ended", self.already_restored),
            ("changed in place and NOT restored (no snapshot: bigger than the undo limit, or not copyable)",
             self.not_restored),
        ]
        out = [f"{label}: {', '.join(names)}" for label, names in parts if names]
        for run_id, report in self.then:
            if report.parts():
                out.append(f"then, of run {run_id} (it waited on this one): " + "; ".join(report.parts()))
        return out


def undo_in(runs: list[Any], run: Any, namespace: dict[str, Any], *, user_cells: Any = None) -> UndoReport:
    """Take ``run`` back (one of ``runs``, this namespace's runs, oldest first), then what older runs'
    undos kept waiting on it: each older undone run with a change that waits on a run undone now is
    tried again, newest first, as if it had been undone after this one. So undos compose whatever
    their order."""
    report = undo(run, namespace, later=runs[runs.index(run) + 1:], user_cells=user_cells)
    undone_now = {run.id}
    for index in range(runs.index(run) - 1, -1, -1):
        older = runs[index]
        if any(change.get("_waiting") and change.get("_waiting_on") in undone_now for change in older.changes):
            report.then.append((older.id, undo(older, namespace, later=runs[index + 1:], user_cells=user_cells)))
            undone_now.add(older.id)
    return report


def _waits(run: Any) -> bool:
    return any(change.get("_waiting") for change in run.changes)


def undo(run: Any, namespace: dict[str, Any], *, later: Iterable[Any] = (), user_cells: Any = None) -> UndoReport:
    """Take ``run`` back (the rule in the module docstring). ``later``: the runs after it in this
    namespace; ``user_cells``: what the user's cells assigned since (`provenance.UserCells`)."""
    later = list(later)
    again = getattr(run, "undone_at", None) is not None
    if again and not _waits(run):
        raise AlreadyUndone(f"run {run.id} was already undone")
    report = UndoReport()
    latest: dict[str, dict[str, Any]] = {}
    for change in run.changes:
        if change["kind"] == "created":
            latest[change["name"]] = change  # created again by a later step: its last value counts
    for name, change in latest.items():
        if not (change.get("restored") or change.get("undone")) and (not again or change.get("_waiting")):
            _take_back_name(name, change, namespace, later, user_cells, report)
    for change in run.changes:
        name = change["name"]
        if change["kind"] in ("rebound", "deleted"):
            if not again and name not in report.already_restored:
                report.already_restored.append(name)
        elif change["kind"] == "changed" and not change.get("undone") and (not again or change.get("_waiting")):
            _take_back_object(change, later, report)
    run.undone_at = time.time()
    return report


def _take_back_name(name: str, change: dict[str, Any], namespace: dict[str, Any], later: list[Any],
                    user_cells: Any, report: UndoReport) -> None:
    change["_waiting"] = False
    current = namespace.get(name, _MISSING)
    if current is _MISSING:
        return  # gone already
    ref = change.get("_value")
    if ref is None or not ref.matches(current) or (
            user_cells is not None and user_cells.since(name, change.get("_tick", 0))):
        report.kept.append(name)
        return
    held = _held_by_later_run(change, later, name, current)
    if held is not None:
        report.changed_since.append(held)
    elif change.get("_too_big"):
        report.changed_since.append(f"{name} (too big to tell whether you changed it since: del it yourself)")
    elif change.get("_left") is not None and fp.fingerprint(current) != change["_left"]:
        report.changed_since.append(f"{name} (by you)")
    else:
        del namespace[name]
        change["undone"] = True
        report.removed.append(name)


def _take_back_object(change: dict[str, Any], later: list[Any], report: UndoReport) -> None:
    name = change["name"]
    change["_waiting"] = False
    saved = change.get("_snapshot")
    target = change["_object"].get() if change.get("_object") is not None else None
    if saved is None or target is None:
        change["_kept"] = "not restorable"
        report.not_restored.append(name)
        return
    held = _held_by_later_run(change, later, name, target)
    if held is not None:
        report.changed_since.append(held)
    elif change.get("_left") is not None and fp.fingerprint(target) != change["_left"]:
        change["_kept"] = "by you"
        report.changed_since.append(f"{name} (by you)")
    elif fp.restore(target, saved):
        change.pop("_snapshot", None)
        change["undone"] = True
        report.restored.append(name)
    else:
        report.not_restored.append(name)


def _held_by_later_run(change: dict[str, Any], later: list[Any], name: str, obj: Any) -> str | None:
    """Why ``obj`` (``name``) stays as it is because a later run changed it in place since, or None. While
    that run's change stands, ``change`` waits for its undo; once that undo kept it, so does this one."""
    found = _later_change(later, name, obj)
    if found is None:
        return None
    by, later_change = found
    if getattr(by, "undone_at", None) is None or later_change.get("_waiting"):
        change["_waiting"], change["_waiting_on"] = True, by.id
        return f"{name} (by run {by.id}: undo it first)"
    reason = later_change.get("_kept")
    if reason == "by you":  # the user changed it after that run: theirs, whichever run is undone
        change["_kept"] = reason
        return f"{name} (by you)"
    change["_kept"] = "not restorable"
    return f"{name} (by run {by.id}, whose undo could not restore it)"


def _later_change(later: list[Any], name: str, obj: Any) -> tuple[Any, dict[str, Any]] | None:
    """(run, change) of the newest later run whose change to ``obj`` in place is still there (not undone), or None."""
    for run in reversed(later):
        for change in getattr(run, "changes", []):
            if change["kind"] != "changed" or change.get("undone"):
                continue
            target = change["_object"].get() if change.get("_object") is not None else None
            if target is obj or (target is None and change["name"] == name):
                return run, change
    return None


def why(runs: Iterable[Any], name: str) -> tuple[Any, dict[str, Any]] | None:
    """(run, change) of the newest change to ``name`` among ``runs`` (newest last), or None."""
    for run in reversed(list(runs)):
        for change in reversed(getattr(run, "changes", [])):
            if change["name"] == name:
                return run, change
    return None
