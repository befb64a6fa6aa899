"""Records as text: the table of runs and one step of a run, for ``%deepagent_runs``/``%deepagent_trace``
and for ``deepagent runs``/``deepagent trace`` on the command line (both read the same records)."""

from __future__ import annotations

import time
from typing import Any

from ..core.run.run import Usage
from ..errors import UserError



class NoSuchStep(UserError, ValueError):
    """A step number outside the run's steps; the message names the range."""


def head(text: Any, limit: int) -> str:
    """The first non-blank line of ``text``, cut to ``limit`` characters."""
    line = next((line.strip() for line in str(text or "").splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def runs_table(records: list[dict[str, Any]]) -> str:
    """A fixed-width table: id, time, status, steps, tokens and cost of the whole tree (root and sub-agents), task head.
    A record this host did not sign as the file it was read from (planted, changed, renamed: `store`) says so."""
    rows = [("id", "time", "status", "steps", "tokens (tree)", "cost (tree)", "task")]
    for record in records:
        usage = Usage.from_dict(record.get("usage_total") or record.get("usage"))
        started = record.get("started_at")
        subs = sum(len(step.get("children") or []) for step in record.get("steps") or [])
        rows.append((
            str(record.get("id")),
            time.strftime("%Y-%m-%d %H:%M", time.localtime(started)) if started else "-",
            str(record.get("status")) + (" (unsigned)" if record.get("_host_written") is False else ""),
            f"{len(record.get('steps') or [])}" + (f" (+{subs} sub)" if subs else ""),
            f"{usage.tokens:,}",
            usage.cost_text(),
            head(record.get("task"), 50),
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1]
                     for row in rows)


def unsigned_note(record: dict[str, Any]) -> str | None:
    """The line ``%deepagent_trace`` and ``deepagent trace`` print above a record this host did not sign as the
    file it was read from (`store`); None for one it did (or a run of this session, not read from a file)."""
    if record.get("_host_written") is not False:
        return None
    return (f"deepagent: the record {head(record.get('_path'), 160)} does not carry this host's signature for its "
            "name (planted, changed, or another run's copied there): it is shown, never continued or trusted")


def format_step(record: dict[str, Any], number: int) -> str:
    """One step of a record as text: reasoning, code, output, and the sub-agents it spawned."""
    steps = record.get("steps") or []
    if not 1 <= number <= len(steps):
        raise NoSuchStep(f"run {record.get('id')} has steps 1 to {len(steps)}, not {number}")
    step = steps[number - 1]
    lines = [f"Step {number}/{len(steps)} of run {record.get('id')}", "", "Reasoning:", step.get("reasoning", ""),
             "", "Code:", step.get("code", ""), "", "Output:", step.get("output") or "(none)"]
    for child in step.get("children") or []:
        lines.append(f"\nSub-agent {child.get('id')} ({child.get('status')}, {len(child.get('steps') or [])} steps): "
                     f"{head(child.get('task'), 70)}\n  result: {head(child.get('result'), 120)}")
    return "\n".join(lines)
