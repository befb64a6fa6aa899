"""Resuming a benchmark: the answers an earlier run kept in ``--out`` are taken, the rest is run.

A run writes each answer to ``<suite>-<split>.done.jsonl`` as it is done (`run_suite`), so a run
stopped by ^C, a closed laptop or a killed process loses only the answers in progress. Resumed
(``deepagent bench ... --resume``), the questions every system of this run had answered there are
taken as they are, and only the others are run; the table is the whole. A question some system had
not answered is run again for every system, so that all are compared on the same runs of the
model. What cannot be trusted is not taken: a line cut off by a kill is skipped, an answer of
another question or system is left out, and answers by another model stop the run with one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from .bench_arguments import BenchError


def earlier_answers(done: Path, task_ids: Iterable[str], systems: Iterable[str], lm: str) -> list[dict[str, Any]]:
    """The rows of ``done`` (a run's ``.done.jsonl``) for the questions every one of ``systems`` answered there,
    in the order they were written, each ``(system, question)`` once: the first answer."""
    wanted, systems = set(task_ids), list(systems)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for line in _lines(done):
        try:
            row = json.loads(line)
        except ValueError:  # a line the killed run was writing
            continue
        if not isinstance(row, dict) or row.get("task_id") not in wanted or row.get("system") not in systems:
            continue
        if row.get("lm") not in (None, lm):
            raise BenchError(f"--resume: the answers in {done} are {row['lm']}'s, this run's model is {lm}: "
                             f"pick another --out, or the same model")
        rows.setdefault((row["system"], row["task_id"]), row)
    complete = {task for (_, task) in rows if all((system, task) in rows for system in systems)}
    return [row for (_, task), row in rows.items() if task in complete]


def _lines(done: Path) -> list[str]:
    try:
        return done.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise BenchError(f"--resume: cannot read {done}: {exc.strerror or exc}") from None
