"""``--load NAME=FILE``: files that become variables of the run's fresh namespace.

CSV and Parquet become pandas DataFrames when pandas is installed (text and a clear
line otherwise), JSON is parsed, anything else is read as text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from ..errors import UserError


class LoadError(UserError, ValueError):
    """A ``--load`` the command line cannot honour; the message is one line."""


def parse_load(value: str) -> tuple[str, Path]:
    name, sep, path = value.partition("=")
    name = name.strip()
    if not sep or not path:
        raise LoadError(f"--load {value!r}: write NAME=FILE, e.g. --load sales=sales.csv")
    if not name.isidentifier() or name in ("SUBMIT", "print"):
        raise LoadError(f"--load {value!r}: {name!r} is not a usable variable name")
    return name, Path(path).expanduser()


def load_variables(values: Iterable[str]) -> dict[str, Any]:
    """{name: value} for every ``NAME=FILE``; a missing, unreadable or malformed file is a `LoadError`."""
    namespace: dict[str, Any] = {}
    for value in values:
        name, path = parse_load(value)
        if name in namespace:
            raise LoadError(f"--load {name}= is given twice")
        if not path.is_file():
            raise LoadError(f"--load {name}={path}: no such file")
        namespace[name] = read_file(name, path)
    return namespace


def read_file(name: str, path: Path) -> Any:
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".tsv", ".parquet", ".pq"):
            return _table(name, path, suffix)
        text = path.read_text(encoding="utf-8")
        if suffix == ".json":
            return json.loads(text)
        return text
    except UnicodeDecodeError:
        raise LoadError(f"--load {name}={path}: not UTF-8 text (only CSV and Parquet are read as binary)") from None
    except json.JSONDecodeError as exc:
        raise LoadError(f"--load {name}={path}: not valid JSON: {exc}") from None
    except OSError as exc:
        raise LoadError(f"--load {name}={path}: {exc.strerror or exc}") from None


def _table(name: str, path: Path, suffix: str) -> Any:
    try:
        import pandas as pd
    except ImportError:
        if suffix in (".parquet", ".pq"):
            raise LoadError(f"--load {name}={path}: reading Parquet needs pandas (pip install pandas pyarrow)") from None
        return path.read_text(encoding="utf-8")  # CSV without pandas: the text, for the agent to parse
    try:
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(path)
        return pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",")
    except ImportError as exc:  # Parquet without pyarrow/fastparquet
        raise LoadError(f"--load {name}={path}: {str(exc).splitlines()[0]}") from None
    except (ValueError, pd.errors.ParserError) as exc:
        raise LoadError(f"--load {name}={path}: cannot read as a table: {str(exc).splitlines()[0]}") from None
