"""DABstep (adyen/DABstep): data-analysis steps over a payments table, fee rules and docs.

Layout (the dataset repository's own): ``data/context/`` holds ``payments.csv`` (about 138k
rows), ``fees.json``, ``merchant_data.json``, ``acquirer_countries.csv``,
``merchant_category_codes.csv``, ``manual.md`` and ``payments-readme.md``; ``data/tasks/``
holds ``dev.jsonl`` (10 tasks with answers) and ``all.jsonl`` (the 450 tasks, whose answers
the leaderboard keeps). A task row is ``{"task_id", "question", "level", "answer", "guidelines"}``.

Scoring follows the benchmark's own scorer (``dabstep_benchmark/evaluation/scorer.py``):
near-exact match, lower-cased and stripped; numbers written with thousands separators or
decimals compare as numbers (first number found; ``$``, ``,`` and ``%`` ignored; equal,
equal after rounding to the shorter number of decimals, or within 1e-4 relative/absolute);
answers with ``,`` or ``;`` compare as lists, in any order, item by item; other answers
compare as numbers when both hold one, else as strings (equal without punctuation and
spaces, one word contained in the other's words, or a similarity above 0.95).
"""

from __future__ import annotations

import math
import re
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from .suite import Suite, Task
from .reading import read_jsonl, read_value, variable_name
from .hub import snapshot

CONTEXT_FILES = ("payments.csv", "fees.json", "merchant_data.json", "acquirer_countries.csv",
                 "merchant_category_codes.csv", "manual.md", "payments-readme.md")
TASK_FILES = {"dev": "dev.jsonl", "default": "all.jsonl"}

_GROUPED_OR_DECIMAL = re.compile(r"^\$?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+[.,]\d+)$")
_FIRST_NUMBER = re.compile(r"(\d*\.\d+|\d+\.?\d*)%?")


def looks_numeric(value: str) -> bool:
    """A number with thousands separators, or a decimal (``1,000``, ``12,345.67``, ``0.99``, ``0,99``)."""
    return bool(_GROUPED_OR_DECIMAL.match(value.strip()))


def first_number(value: str) -> float | None:
    match = _FIRST_NUMBER.search(value.replace(",", "").replace("$", ""))
    return float(match.group(1)) if match else None


def _decimals(number: float) -> int:
    text = str(number)
    return len(text.split(".")[-1]) if "." in text else 0


def same_number(a: float, b: float) -> bool:
    if a == b:
        return True
    if a < 1 and b < 1:
        return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-4)
    places = min(_decimals(a), _decimals(b))
    if round(a, places) == round(b, places):
        return True
    return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-4)


def same_text(a: str, b: str) -> bool:
    if re.sub(r"[^\w]", "", a) == re.sub(r"[^\w]", "", b):
        return True
    words_a, words_b = re.findall(r"\b\w+\b", a.lower()), re.findall(r"\b\w+\b", b.lower())
    if words_a and words_b and (len(words_a) == 1 or len(words_b) == 1):
        return set(words_a) <= set(words_b) or set(words_b) <= set(words_a)
    return SequenceMatcher(None, a, b).ratio() > 0.95


def same_list(a: str, b: str) -> bool:
    items_a = sorted(item.strip() for item in re.split(r"[,;]", re.sub(r"^\[|\]$", "", a.strip())) if item.strip())
    items_b = sorted(item.strip() for item in re.split(r"[,;]", re.sub(r"^\[|\]$", "", b.strip())) if item.strip())
    if items_a == items_b:
        return True
    return len(items_a) == len(items_b) and all(question_scorer(x, y) for x, y in zip(items_a, items_b))


def question_scorer(answer: Any, gold: Any) -> bool:
    """DABstep's rule: does ``answer`` match ``gold``? (Symmetric, as the benchmark's own.)"""
    if answer is None or gold is None:
        return False
    a, b = str(answer).strip().lower(), str(gold).strip().lower()
    if looks_numeric(a) or looks_numeric(b):
        x, y = first_number(a), first_number(b)
        return x is not None and y is not None and same_number(x, y)
    if any(mark in a or mark in b for mark in ",;"):
        return same_list(a, b)
    x, y = first_number(a), first_number(b)
    if x is not None and y is not None:
        return same_number(x, y)
    return same_text(a, b)


class DABstep(Suite):
    name = "dabstep"
    title = "DABstep"
    repo = "adyen/DABstep"
    splits = ("dev", "default")
    default_split = "dev"  # the 10 tasks with public answers; "default" is the 450 (scored by the leaderboard)

    def present(self, root: Path, split: str) -> bool:
        context = root / "data" / "context"
        return (root / "data" / "tasks" / TASK_FILES[split]).is_file() and all(
            (context / name).is_file() for name in CONTEXT_FILES)

    def download(self, root: Path, split: str) -> None:
        snapshot(self.repo, root, ["data/context/*", f"data/tasks/{TASK_FILES[split]}"])

    def tasks(self, root: Path, split: str) -> list[Task]:
        context = root / "data" / "context"
        files = [context / name for name in CONTEXT_FILES]
        listing = ", ".join(CONTEXT_FILES)
        out = []
        for row in read_jsonl(root / "data" / "tasks" / TASK_FILES[split]):
            answer = row.get("answer")
            prompt = (f"{row['question']}\n\nAnswer guidelines: {row.get('guidelines') or 'none'}\n\n"
                      f"The data are the files in the workspace: {listing}. Read manual.md and "
                      "payments-readme.md first: they define the terms and the fee rules.")
            out.append(Task(str(row["task_id"]), prompt, answer if answer not in (None, "") else None, files,
                            _variables, meta={"level": row.get("level")}))
        return out

    def score(self, task: Task, answer: Any) -> float:
        return float(question_scorer(answer, task.gold))


def _variables(workspace: Path) -> dict[str, Any]:
    return {variable_name(name): read_value(workspace / name) for name in CONTEXT_FILES}
