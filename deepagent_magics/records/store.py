"""Where run records live and how they are read back: ``<workspace>/.deepagent/runs/<id>.json``.

Reading is defensive, because anything can write there (the agent can, with ``write_file``):
only regular files up to `MAX_RECORD_BYTES` are read (a FIFO or ``/dev/zero`` behind a name
cannot hang or fill the notebook), the JSON is reshaped into a well-formed record
(`well_formed`), scrubbed of secrets again (`core.run.secrets`), and a run whose writing process died
mid-run reads as ``abandoned`` (`liveness`). Each record read says whether the host wrote it
(``record["_host_written"]``: its MAC checks with the host key, `host_key`, for the place it was read
from, ``.deepagent/runs/<id>.json``, and the id inside is that file's); only such a record is taken back
as trusted state (a thread continued after a kernel restart, `conversations`). A signed record replayed
under another run's name, or two swapped, are not: the signature binds the file's name. Any other is
still listed and shown, escaped, like every record.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Iterable

from ..core.run.secrets import scrub
from .host_key import FIELD, verified
from .liveness import mark_abandoned
from .well_formed import normalize

FORMAT = "deepagent-run/1"
RECORD_PURPOSE = "deepagent run record"
LOADER_FIELDS = ("_path", "_host_written", FIELD)  # set by the reader, never taken from the file
RUNS_DIR = Path(".deepagent") / "runs"
MAX_RECORD_BYTES = 256 * 1024 * 1024


def runs_dir(workspace: str | os.PathLike) -> Path:
    return Path(workspace).expanduser().resolve() / RUNS_DIR


def record_place(path: str | os.PathLike) -> str:
    """What a record file is, as its signature names it: its path in the workspace, ``.deepagent/runs/<id>.json``."""
    return (RUNS_DIR / Path(path).name).as_posix()


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
    records = []
    for path in sorted(paths, key=paths.get, reverse=True):
        if limit and len(records) >= limit:
            break
        try:
            records.append(load_record(path))
        except (OSError, ValueError):
            continue  # a record being replaced right now, or not a record
    return records


def load_record(path: str | os.PathLike) -> dict[str, Any]:
    """The record at ``path``, well-formed and scrubbed; OSError or ValueError if it is not one."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path} is not a regular file")
        if info.st_size > MAX_RECORD_BYTES:
            raise ValueError(f"{path} is larger than {MAX_RECORD_BYTES // 2**20} MB")
        data = handle.read(MAX_RECORD_BYTES + 1)
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"{path} is not valid JSON: {str(exc)[:200]}") from None
    own_id = isinstance(raw, dict) and raw.get("id") == Path(path).name.removesuffix(".json")
    if isinstance(raw, dict):
        for name in LOADER_FIELDS:
            raw.pop(name, None)
    try:
        record = mark_abandoned(scrub(normalize(raw)))
    except RecursionError:
        raise ValueError(f"{path} is nested too deeply") from None
    except ValueError as exc:
        raise ValueError(f"{path} is {exc}") from None
    record["_path"] = str(path)
    record["_host_written"] = own_id and verified(data, RECORD_PURPOSE, record_place(path))
    return record


def record_home(record: dict[str, Any]) -> Path | None:
    """The workspace a record was read from (``<workspace>/.deepagent/runs/<id>.json``), whatever
    folder the record itself names in ``config.workspace``; None for a record not read from there."""
    path = record.get("_path")
    if not isinstance(path, str):
        return None
    folder = Path(path).parent
    if folder.name != RUNS_DIR.name or folder.parent.name != RUNS_DIR.parent.name:
        return None
    return folder.parent.parent.resolve()


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
