"""Taking a run back, and saying who made a name: over ``run.changes`` (``interpreters/provenance.py``).

`undo(run, namespace)` removes the names the run created (those still holding what the run
left there: a name the user has since rebound is the user's), notes the user's rebound names
that the run's end already restored, and restores in place each object the run changed for
which a snapshot was taken (the others are named). A run is taken back once.
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
    """The run was taken back before."""


@dataclass
class UndoReport:
    removed: list[str] = field(default_factory=list)  # names the run created, now gone
    kept: list[str] = field(default_factory=list)  # names it created that hold something else now
    already_restored: list[str] = field(default_factory=list)  # the user's names the run's end restored
    restored: list[str] = field(default_factory=list)  # objects changed in place, restored from a snapshot
    not_restored: list[str] = field(default_factory=list)  # objects changed in place, no snapshot

    def lines(self) -> list[str]:
        parts = [
            ("removed the names it created", self.removed),
            ("kept (you have rebound them since)", self.kept),
            ("your rebound names were already restored when it ended", self.already_restored),
            ("restored in place", self.restored),
            ("changed in place and NOT restored (no snapshot: bigger than the undo limit, or not copyable)",
             self.not_restored),
        ]
        return [f"  {label}: {', '.join(names)}" for label, names in parts if names]


def undo(run: Any, namespace: dict[str, Any]) -> UndoReport:
    if getattr(run, "undone_at", None) is not None:
        raise AlreadyUndone(f"run {run.id} was already undone")
    report = UndoReport()
    latest: dict[str, dict[str, Any]] = {}
    for change in run.changes:
        if change["kind"] == "created":
            latest[change["name"]] = change  # created again by a later step: its last value counts
    for name, change in latest.items():
        if change.get("restored"):
            continue
        current = namespace.get(name, _MISSING)
        if current is _MISSING:
            continue
        ref = change.get("_value")
        if ref is not None and ref.matches(current):
            del namespace[name]
            report.removed.append(name)
        else:
            report.kept.append(name)
    for change in run.changes:
        name = change["name"]
        if change["kind"] in ("rebound", "deleted") and name not in report.already_restored:
            report.already_restored.append(name)
        elif change["kind"] == "changed":
            saved = change.pop("_snapshot", _MISSING)
            target = change["_object"].get() if change.get("_object") is not None else None
            if saved is not _MISSING and target is not None and fp.restore(target, saved):
                report.restored.append(name)
                change["undone"] = True
            else:
                report.not_restored.append(name)
    run.undone_at = time.time()
    return report


def why(runs: Iterable[Any], name: str) -> tuple[Any, dict[str, Any]] | None:
    """(run, change) of the newest change to ``name`` among ``runs`` (newest last), or None."""
    for run in reversed(list(runs)):
        for change in reversed(getattr(run, "changes", [])):
            if change["name"] == name:
                return run, change
    return None
