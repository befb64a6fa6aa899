"""The quality benchmark's table: per system, accuracy, tokens, cost, time per task and failures.

Built from an evaluation's rows (`evaluate`), written as Markdown (to read) and JSON (to
compare runs), plus each system's answers as JSONL (``task_id``, ``agent_answer``: the
format DABstep's leaderboard takes, for the splits whose answers it keeps) and its steps as
JSONL (what it ran and what that printed, per task: to read why a task failed).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


@dataclass
class BenchReport:
    suite: str
    title: str
    split: str
    lm: str
    metric: str
    systems: list[str]
    rows: list[dict[str, Any]]  # one per (system, task): task_id, score, scored, tokens, cost, seconds, error, answer
    started: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    files: list[str] = field(default_factory=list)  # what `write` wrote
    steps: dict[tuple[str, str], list[dict[str, str]]] = field(default_factory=dict)  # (system, task_id): its steps
    machine: dict[str, Any] = field(default_factory=dict)  # wall and CPU seconds, the load seen (`machine_load`)
    stopped: str | None = None  # a run interrupted before its end: how far it got ("after 30 of 84 answers")
    resumed: str | None = None  # a run that took an earlier run's answers: how many ("9 of 42 tasks from ...")

    @classmethod
    def read(cls, path: str | Path) -> "BenchReport":
        """A report from the JSON file `write` made (its steps stay in the steps files)."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(data["suite"], data["title"], data["split"], data["lm"], data["metric"], list(data["summary"]),
                   data["rows"], started=data["started"], machine=data.get("machine") or {}, stopped=data.get("stopped"),
                   resumed=data.get("resumed"))

    @classmethod
    def read_done(cls, path: str | Path) -> "BenchReport":
        """A report from the rows a run kept as they were done (`done_file`), for a run stopped before its end:
        the systems in the order their rows came, no machine figures (the run did not end)."""
        path = Path(path)
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        steps = {(row["system"], row["task_id"]): row.pop("steps_taken", None) or [] for row in rows}
        suite, _, split = path.name.removesuffix(".done.jsonl").partition("-")
        systems = list(dict.fromkeys(row["system"] for row in rows))
        return cls(suite, suite, split, "(a stopped run)", "accuracy", systems, rows, steps=steps)

    def summary(self, where: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
        """Per system, over its rows (those whose details match ``where``, e.g. {"kind": "model"})."""
        rows = [row for row in self.rows if all(str(row.get(key)) == value for key, value in (where or {}).items())]
        return {system: summarize([row for row in rows if row["system"] == system]) for system in self.systems}

    def accuracy(self, system: str = "deep agent") -> float | None:
        return self.summary()[system]["accuracy"]

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [row for row in self.rows if row["error"]]

    def to_json(self) -> dict[str, Any]:
        return {"suite": self.suite, "title": self.title, "split": self.split, "lm": self.lm, "metric": self.metric,
                "started": self.started, "machine": self.machine, "stopped": self.stopped, "resumed": self.resumed,
                "summary": self.summary(),
                "rows": self.rows}

    def to_markdown(self) -> str:
        tasks = len({row["task_id"] for row in self.rows})
        stopped = f" (stopped {self.stopped})" if self.stopped else ""
        stopped += f" (resumed: {self.resumed})" if self.resumed else ""
        lines = [f"## {self.title} ({self.split}): {tasks} tasks, {self.lm}{stopped}", "",
                 f"| system | {self.metric} | steps / task | tokens / task | cost | cost / task | s / task | failures |",
                 "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for system, each in self.summary().items():
            accuracy = (f"{each['accuracy']:.1%} ({each['scored']} scored)" if each["accuracy"] is not None
                        else "n/a (answers withheld)")
            lines.append(f"| {system} | {accuracy} | {each['steps_per_task']:.1f} | {each['tokens_per_task']:,.0f} | "
                         f"{_dollars(each['cost'])} | {_dollars(each['cost_per_task'])} | {each['seconds_per_task']:.2f} | "
                         f"{each['failures']}/{each['tasks']} |")
        if self.failures:
            lines += ["", "Failures:", ""]
            lines += [f"- {row['system']}, task {row['task_id']}: {_one_line(row['error'])}" for row in self.failures]
        return "\n".join(lines) + "\n"

    def done_file(self, out: str | Path) -> Path:
        """``<suite>-<split>.done.jsonl``: each row (with its steps) written as it is done, while the run goes on."""
        return Path(out).expanduser() / f"{self.suite}-{self.split}.done.jsonl"

    def write(self, out: str | Path) -> list[Path]:
        """``<suite>-<split>.md``, ``.json``, and per system ``.<system>.answers.jsonl`` and ``.steps.jsonl``."""
        folder = Path(out).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        stem = f"{self.suite}-{self.split}"
        written = [folder / f"{stem}.md", folder / f"{stem}.json"]
        written[0].write_text(self.to_markdown(), encoding="utf-8")
        written[1].write_text(json.dumps(self.to_json(), indent=2, default=str), encoding="utf-8")
        for system in self.systems:
            name = re.sub(r'[^a-z0-9]+', '-', system.lower()).strip('-')
            answers, steps = folder / f"{stem}.{name}.answers.jsonl", folder / f"{stem}.{name}.steps.jsonl"
            with open(answers, "w", encoding="utf-8") as handle, open(steps, "w", encoding="utf-8") as trail:
                for row in self.rows:
                    if row["system"] == system:
                        answer = "" if row["answer"] is None else str(row["answer"])
                        handle.write(json.dumps({"task_id": row["task_id"], "agent_answer": answer}) + "\n")
                        trail.write(json.dumps({"task_id": row["task_id"], "score": row["score"], "error": row["error"],
                                                "steps": self.steps.get((system, row["task_id"]), [])}) + "\n")
            written += [answers, steps]
        self.files = [str(path) for path in written]
        return written

    def __repr__(self) -> str:
        return self.to_markdown()

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One system's rows: accuracy over the scored ones, and per task (and per solved task) what it spent.

    A solved task is one scored 1 (partial credit counts its fraction); ``endings`` counts how each answer
    came (``SUBMIT``, ``stall``, ``extraction``, ...: `core.loop.ending.ENDINGS`), and ``right_endings`` the same
    for the answers scored above 0."""
    scored = [row for row in rows if row["scored"]]
    n = max(1, len(rows))
    solved = sum(row["score"] for row in scored)
    per_solved = (lambda total: total / solved if solved else None)
    return {
        "tasks": len(rows),
        "scored": len(scored),
        "accuracy": (solved / len(scored)) if scored else None,
        "solved": solved,
        "steps_per_task": sum(row.get("steps") or 0 for row in rows) / n,
        "tokens_per_task": sum(row["tokens"] for row in rows) / n,
        "prompt_tokens_per_task": sum(row.get("prompt_tokens") or 0 for row in rows) / n,
        "completion_tokens_per_task": sum(row.get("completion_tokens") or 0 for row in rows) / n,
        "tokens_per_solved": per_solved(sum(row["tokens"] for row in rows)),
        "prompt_tokens_per_solved": per_solved(sum(row.get("prompt_tokens") or 0 for row in rows)),
        "completion_tokens_per_solved": per_solved(sum(row.get("completion_tokens") or 0 for row in rows)),
        "cost": _cost(rows),
        "cost_per_task": None if _cost(rows) is None else _cost(rows) / n,
        "seconds_per_task": sum(row["seconds"] for row in rows) / n,
        "failures": sum(bool(row["error"]) for row in rows),
        "endings": dict(Counter(row["ending"] for row in rows if row.get("ending"))),
        "right_endings": dict(Counter(row["ending"] for row in scored if row.get("ending") and row["score"] > 0)),
    }


def _cost(rows: list[dict[str, Any]]) -> float | None:
    """The priced rows' cost; None when no row had a price (a local model): "unknown" in the table, not $0."""
    priced = [row["cost"] for row in rows if row.get("cost") is not None]
    return sum(priced) if priced or not rows else None


def _dollars(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def _one_line(text: Any) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= 200 else line[:197] + "..."
