"""Where run records live and how they are read back: ``<workspace>/.deepagent/runs/<id>.json``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

FORMAT = "deepagent-run/1"
RUNS_DIR = Path(".deepagent") / "runs"


def runs_dir(workspace: str | os.PathLike) -> Path:
    return Path(workspace).expanduser().resolve() / RUNS_DIR


def list_records(directories: Iterable[str | os.PathLike], limit: int | None = None) -> list[dict[str, Any]]:
    """The newest records first (by file time), from each workspace's runs folder."""
    paths: dict[Path, float] = {}
    for directory in directories:
        folder = runs_dir(directory)
        if folder.is_dir():
            for path in folder.glob("*.json"):
                try:
                    paths[path] = path.stat().st_mtime
                except OSError:
                    continue
    newest = sorted(paths, key=paths.get, reverse=True)[: limit or None]
    records = []
    for path in newest:
        try:
            records.append(load_record(path))
        except (OSError, ValueError):
            continue  # a record being replaced right now, or not ours
    return records


def load_record(path: str | os.PathLike) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        record = json.load(handle)
    if not isinstance(record, dict) or "steps" not in record or "id" not in record:
        raise ValueError(f"{path} is not a deepagent run record")
    record["_path"] = str(path)
    return record


def find_record(run_id: str, directories: Iterable[str | os.PathLike]) -> dict[str, Any]:
    """The record whose id is ``run_id``, or the one whose id starts or ends with it."""
    candidates: dict[str, Path] = {}
    for directory in directories:
        folder = runs_dir(directory)
        if not folder.is_dir():
            continue
        exact = folder / f"{run_id}.json"
        if exact.is_file():
            return load_record(exact)
        for path in folder.glob("*.json"):
            if path.stem.startswith(run_id) or path.stem.endswith(run_id):
                candidates[path.stem] = path
    if len(candidates) == 1:
        return load_record(next(iter(candidates.values())))
    if candidates:
        raise KeyError(f"run id {run_id!r} is ambiguous: {', '.join(sorted(candidates))}")
    raise KeyError(f"no run {run_id!r} in {', '.join(str(runs_dir(d)) for d in directories) or 'no workspace'}")
