"""Measure the deep agent on examples from the notebook, beside simple baselines.

Each system answers every example, several at a time (`systems`); the metric
scores each answer (`examples.Metric`). The result is a table, one row per
(system, example), shown as HTML or text.

    table = evaluate(systems_for(agent, ["cot", "react"]), devset, metric, threads=4)
    table.means()["deep agent"]["score"]
"""

from __future__ import annotations

import contextvars
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Callable

import dspy

from ..core.model.price_list import bundled_price_list
from .examples import Metric, Score
from .progress import TextProgress
from .systems import DEEP_AGENT, Outcome, steps_of


def evaluate(systems: dict[str, Callable[[dspy.Example], Outcome]], examples: list[dspy.Example],
             metric: Metric | Callable[..., Any], threads: int = 4, progress: Any = None,
             on_row: Callable[[dict[str, Any]], None] | None = None) -> "Evaluation":
    """Every system on every example, ``threads`` at a time; a table of scores, steps and tokens.

    ``on_row``: called with each row as it is done (a long benchmark keeps what it has when it stops)."""
    metric = metric if isinstance(metric, Metric) else Metric(metric)
    progress = progress or TextProgress()
    jobs = [(name, index) for name in systems for index in range(len(examples))]
    # Run question by question, every system on each in turn: a long run stopped part way (or a
    # machine that slows down) leaves the systems compared on the same questions, not some on none.
    order = [(name, index) for index in range(len(examples)) for name in systems]
    progress.start(len(jobs))
    rows: dict[tuple[str, int], dict[str, Any]] = {}

    def one(name: str, index: int) -> dict[str, Any]:
        example = examples[index]
        started = time.monotonic()
        try:
            outcome = systems[name](example)
        except Exception as exc:  # the system failed on this example: score zero, keep going
            outcome = Outcome(None, 0, 0, f"{type(exc).__name__}: {exc}", cost=None,  # what it spent is unknown
                              ending="failure")
        seconds = time.monotonic() - started
        scored = metric.score(example, outcome.pred) if outcome.pred is not None else Score(0.0)
        error = outcome.error or scored.error
        return {
            "system": name, "example": index, "task": example.task, "score": scored.score,
            "steps": outcome.steps, "tokens": outcome.tokens, "error": error,
            "prompt_tokens": outcome.prompt_tokens, "completion_tokens": outcome.completion_tokens,
            "ending": outcome.ending, "cost": outcome.cost, "seconds": round(seconds, 3),
            "result": getattr(outcome.pred, "result", None) if outcome.pred is not None else None,
            "trajectory": steps_of(outcome.pred),
        }

    pool = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="deepagent-eval")
    with bundled_price_list():  # the baselines call the LM outside a DeepAgent run: offline, no list fetched
        try:
            futures = {pool.submit(contextvars.copy_context().run, one, name, index): (name, index)
                       for name, index in order}
            for future in as_completed(futures):
                rows[futures[future]] = future.result()
                if on_row is not None:
                    on_row(rows[futures[future]])
                progress.advance(futures[future][0])
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        finally:
            progress.close()
        pool.shutdown(wait=True)
    return Evaluation([rows[job] for job in jobs], list(systems), metric.name)


class Evaluation:
    """The table: one row per (system, example) and the means per system; shown as HTML or text."""

    def __init__(self, rows: list[dict[str, Any]], systems: list[str], metric: str = "metric"):
        self.rows = rows
        self.systems = systems
        self.metric = metric

    def means(self) -> dict[str, dict[str, float]]:
        out = {}
        for system in self.systems:
            rows = [row for row in self.rows if row["system"] == system]
            n = max(1, len(rows))
            out[system] = {
                "score": sum(row["score"] for row in rows) / n,
                "steps": sum(row["steps"] for row in rows) / n,
                "tokens": sum(row["tokens"] for row in rows) / n,
                "errors": sum(row["error"] is not None for row in rows),
            }
        return out

    def score(self, system: str = DEEP_AGENT) -> float:
        return self.means()[system]["score"]

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [row for row in self.rows if row["error"]]

    def to_pandas(self):
        """The rows as a pandas DataFrame (pandas is not a dependency: install it to use this)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("to_pandas() needs pandas; the rows are in .rows as a list of dicts") from None
        return pd.DataFrame(self.rows)

    # ------------------------------------------------------------------ rendering
    def _grid(self) -> tuple[list[str], list[list[str]]]:
        header = ["#", "task"] + [f"{system}: {col}" for system in self.systems for col in ("score", "steps", "tokens")]
        by_key = {(row["system"], row["example"]): row for row in self.rows}
        count = max((row["example"] for row in self.rows), default=-1) + 1
        body = []
        for index in range(count):
            task = next(row["task"] for row in self.rows if row["example"] == index)
            cells = [str(index), _clip(task, 40)]
            for system in self.systems:
                row = by_key.get((system, index))
                flag = " !" if row and row["error"] else ""
                cells += [f"{row['score']:.2f}{flag}", str(row["steps"]), f"{row['tokens']:,}"] if row else ["", "", ""]
            body.append(cells)
        means = self.means()
        cells = ["", "mean"]
        for system in self.systems:
            mean = means[system]
            cells += [f"{mean['score']:.2f}", f"{mean['steps']:.1f}", f"{mean['tokens']:,.0f}"]
        body.append(cells)
        return header, body

    def notes(self) -> list[str]:
        return [f"! #{row['example']} {row['system']}: {row['error']}" for row in self.errors]

    def __repr__(self) -> str:
        header, body = self._grid()
        widths = [max(len(line[i]) for line in [header] + body) for i in range(len(header))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in [header] + body]
        lines.insert(1, "  ".join("-" * width for width in widths))
        lines.insert(len(lines) - 1, "  ".join("-" * width for width in widths))
        return "\n".join(lines + self.notes())

    def _repr_html_(self) -> str:
        from html import escape

        header, body = self._grid()
        head = "".join(f"<th>{escape(cell)}</th>" for cell in header)
        rows = "".join(
            "<tr>" + "".join(f"<td>{'<b>' + escape(c) + '</b>' if i == len(body) - 1 else escape(c)}</td>" for c in line) + "</tr>"
            for i, line in enumerate(body)
        )
        notes = "".join(f"<div>{escape(note)}</div>" for note in self.notes())
        return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{notes}"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
