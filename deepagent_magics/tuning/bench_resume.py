"""Resuming a benchmark: the answers an earlier run kept in ``--out`` are taken, the rest is run.

A run writes each answer to ``<suite>-<split>.done.jsonl`` as it is done (`run_suite`), so a run
stopped by ^C, a closed laptop or a killed process loses only the answers in progress. Resumed
(``deepagent bench ... --resume``), the questions every system of this run had answered there are
taken as they are, and only the others are run; the table is the whole. A question some system had
not answered is run again for every system, so that all are compared on the same runs of the
model. What cannot be trusted is not taken: a line cut off by a kill is skipped, an answer of
another question or system is left out, and answers by another model stop the run with one line.
The done file then starts again with what was taken; when it held more (a resume with a smaller
``--limit``, another ``--where``), the old one is kept beside it, so nothing measured is lost.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
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


def start_again(done: Path, taken: list[dict[str, Any]]) -> Path | None:
    """``done`` holding the ``taken`` rows only; the old file, when it held more, kept beside it (its path)."""
    text = "".join(json.dumps(row, default=str) + "\n" for row in taken)
    kept = None
    if len([line for line in _lines(done) if line.strip()]) > len(taken):
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        kept = done.with_name(f"{done.name}.before-resume-{stamp}")
        done.replace(kept)
    done.write_text(text, encoding="utf-8")
    return kept


def _lines(done: Path) -> list[str]:
    try:
        return done.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise BenchError(f"--resume: cannot read {done}: {exc.strerror or exc}") from None
