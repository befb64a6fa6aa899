"""Reading a suite's files into the values a user would have in the notebook.

A CSV becomes a pandas DataFrame when pandas is installed (``pip install 'deepagent-magics[quality]'``),
else a list of dicts, one per row (the agent can still count, filter and sum); JSON is parsed;
Markdown and text are strings.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any


def read_table(path: Path) -> Any:
    try:
        import pandas as pd
    except ImportError:
        with open(path, newline="", encoding="utf-8", errors="replace") as handle:
            return list(csv.DictReader(handle))
    return pd.read_csv(path, encoding_errors="replace")


def read_value(path: Path) -> Any:
    """The file as a variable: a table, parsed JSON, or text."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return read_table(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    return json.loads(text) if suffix == ".json" else text


def variable_name(filename: str) -> str:
    """``payments-readme.md`` -> ``payments_readme``; ``2014_q4.csv`` -> ``t_2014_q4`` (a usable identifier)."""
    stem = re.sub(r"\W+", "_", Path(filename).stem).strip("_").lower() or "data"
    return f"t_{stem}" if stem[0].isdigit() else stem


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path.name} line {number} is not JSON: {exc.msg}") from None
    return rows
