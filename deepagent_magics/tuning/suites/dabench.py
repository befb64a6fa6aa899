"""InfiAgent-DABench (infiagent/DABench): 257 closed-form questions over 52 CSV files; a cheap smoke suite.

Layout (the dataset repository's own): ``da-dev-questions.jsonl`` (rows ``{"id", "question",
"concepts", "constraints", "format", "file_name", "level"}``), ``da-dev-labels.jsonl`` (rows
``{"id", "common_answers": [[name, value], ...]}``) and ``da-dev-tables/<file_name>``.

Scoring follows the benchmark's auto-grader (``eval_closed_form.py``): the answer's
``@name[value]`` parts are extracted, each sub-answer is right when its text equals the
label's or both are numbers within 1e-6, and a question counts (accuracy by question, the
headline metric) only when every sub-answer is right.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .suite import Suite, Task
from .reading import read_jsonl, read_table, variable_name
from .hub import snapshot

QUESTIONS = "da-dev-questions.jsonl"
LABELS = "da-dev-labels.jsonl"
TABLES = "da-dev-tables"
_PART = re.compile(r"@(\w+)\[(.*?)\]")


def extract(answer: Any) -> dict[str, str]:
    """``@mean_fare[34.65] @median[7]`` -> {"mean_fare": "34.65", "median": "7"} (a later repeat wins)."""
    return dict(_PART.findall(str(answer or "")))


def is_equal(response: Any, label: Any) -> bool:
    if response == label:
        return True
    try:
        return abs(float(response) - float(label)) < 1e-6
    except (TypeError, ValueError):
        return False


def sub_answers(answer: Any, labels: dict[str, str]) -> dict[str, bool]:
    """Each labelled sub-answer: right or not."""
    found = extract(answer)
    return {name: is_equal(found.get(name), value) for name, value in labels.items()}


class DABench(Suite):
    name = "dabench"
    title = "InfiAgent-DABench"
    repo = "infiagent/DABench"
    splits = ("dev",)
    default_split = "dev"

    def present(self, root: Path, split: str) -> bool:
        return (root / QUESTIONS).is_file() and (root / LABELS).is_file() and (root / TABLES).is_dir()

    def download(self, root: Path, split: str) -> None:
        snapshot(self.repo, root, [QUESTIONS, LABELS, f"{TABLES}/*"])

    def tasks(self, root: Path, split: str) -> list[Task]:
        labels = {row["id"]: {str(name): str(value) for name, value in row["common_answers"]}
                  for row in read_jsonl(root / LABELS)}
        out = []
        for row in read_jsonl(root / QUESTIONS):
            table = root / TABLES / row["file_name"]
            if not table.is_file():
                raise ValueError(f"question {row['id']} names {row['file_name']}, which is not in {TABLES}/")
            prompt = (f"{row['question']}\n\nConstraints: {row.get('constraints', '')}\n\n"
                      f"Answer format: {row.get('format', '')}\nGive every value in exactly this form, "
                      f"@name[value], in your final answer.\n\nThe data are in the file {row['file_name']} "
                      "in the workspace.")
            out.append(Task(str(row["id"]), prompt, labels.get(row["id"]), [table], _loader(table.name),
                            meta={"level": row.get("level"), "concepts": row.get("concepts")}))
        return out

    def score(self, task: Task, answer: Any) -> float:
        if not task.gold:
            return 0.0
        return float(all(sub_answers(answer, task.gold).values()))


def _loader(filename: str):
    def variables(workspace: Path) -> dict[str, Any]:
        return {variable_name(filename): read_table(workspace / filename)}

    return variables
