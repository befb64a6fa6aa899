"""OOLONG (oolongbench/oolong-synth): long-context aggregation, the RLM paper's own benchmark.

Each row holds a context window of many labelled-by-nobody instances (``context_window_text``,
up to hundreds of thousands of tokens) and a question about their distribution ("which label
is most common?", "how many are X?"). The deep agent gets the context as the variable
``context`` and the file ``context.txt``, never in its prompt: far larger than a model's
window, as in the paper. The tool-less ``cot`` baseline reads it in its prompt (the paper's
base-model setting), which is where it fails when the context does not fit.

The dataset is published as Parquet; the first run reads the split through ``datasets`` and
keeps it as ``oolong-synth/<split>.jsonl`` (rows with the dataset's own columns: ``id``,
``context_len``, ``dataset``, ``context_window_id``, ``context_window_text``, ``question``,
``answer``, ``answer_type``, ``task_group``, ``task``, ...).

Scoring follows the benchmark's ``synth_process_response``: the answer is what follows the
last ``:`` (``*``, ``[`` and ``]`` removed; a short answer without ``:`` is taken whole, a long
one by its last word); exact match with the gold label scores 1; a comparison answer ("more
common", "less common", "same frequency") scores 1 when the gold contains it; a numeric answer
earns partial credit 0.75 ** |gold - answer|; a date answer scores when it parses to the gold date.
"""

from __future__ import annotations

import ast
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from .suite import Suite, Task
from .reading import read_jsonl
from .hub import dataset_rows

CONFIG = "oolong-synth"
COMPARISONS = ("more common", "less common", "same frequency")


def parse_answer(output: str) -> str:
    """The benchmark's own answer extraction from a model's output."""
    if ":" not in output:
        return output if len(output) < 20 else (output.split() or [""])[-1]
    candidate = output.split(":")[-1].strip().replace("*", "").replace("[", "").replace("]", "")
    if len(candidate) >= 20:
        for phrase in COMPARISONS:
            if phrase in candidate:
                return phrase
    return candidate


def gold_value(answer: str) -> Any:
    if "datetime" in answer:
        return datetime.strptime(answer, "[datetime.date(%Y, %m, %d)]")
    return ast.literal_eval(answer)[0]


def synth_score(row: dict[str, Any], output: Any) -> float:
    gold = gold_value(str(row["answer"]))
    answer = parse_answer(str(output if output is not None else ""))
    if str(answer) == str(gold):
        return 1.0
    if answer in COMPARISONS:
        return float(answer in str(gold))
    if row.get("answer_type") == "ANSWER_TYPE.NUMERIC":
        try:
            return 0.75 ** abs(int(gold) - int(answer))
        except (TypeError, ValueError):
            return 0.0
    if row.get("answer_type") == "ANSWER_TYPE.DATE":
        try:
            from dateutil import parser as dateparser

            return float(dateparser.parse(answer) == gold)
        except (ImportError, ValueError, OverflowError):
            return 0.0
    return 0.0


class Oolong(Suite):
    name = "oolong"
    title = "OOLONG (synth)"
    repo = "oolongbench/oolong-synth"
    splits = ("validation", "test")
    default_split = "validation"
    metric = "score (partial credit on counts)"

    def _file(self, root: Path, split: str) -> Path:
        return root / CONFIG / f"{split}.jsonl"

    def present(self, root: Path, split: str) -> bool:
        return self._file(root, split).is_file()

    def download(self, root: Path, split: str) -> None:
        rows = dataset_rows(self.repo, split)
        target = self._file(root, split)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        with open(partial, "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(dict(row), default=str) + "\n" for row in rows)
        partial.replace(target)  # a download cut short never passes for the split

    def tasks(self, root: Path, split: str) -> list[Task]:
        out = []
        for row in read_jsonl(self._file(root, split)):
            text = str(row["context_window_text"])
            prompt = (f"{row['question']}\n\nThe context ({len(text):,} characters) is in the file context.txt "
                      "in the workspace.")
            gold = {"answer": row["answer"], "answer_type": row.get("answer_type")}
            out.append(Task(str(row["id"]), prompt, gold, [], _context(text), inline=text,
                            meta={"dataset": row.get("dataset"), "context_len": row.get("context_len"),
                                  "task": row.get("task")}))
        return out

    def score(self, task: Task, answer: Any) -> float:
        return synth_score(task.gold, answer)


def _context(text: str):
    def variables(workspace: Path) -> dict[str, Any]:
        (workspace / "context.txt").write_text(text, encoding="utf-8")
        return {"context": text}

    return variables
