"""Run records: every run written to ``<workspace>/.deepagent/runs/<run-id>.json`` as it goes.

A `RunRecorder` listens to the run's event stream and rewrites the record after
the events that matter, so a run that is interrupted or whose kernel dies still
leaves what it did so far. Writes are atomic (a temporary file renamed over) and
throttled: at most one every ``min_interval`` seconds, and never more than a
small share of the run's time (a write costs O(record), so writing after every
event would be quadratic). A timer writes what a throttled event left pending.

Secrets never reach the disk: before each write every string in the record is
scrubbed of the values of environment variables whose names look secret, of the
secret-looking settings of the run's LMs, and of well-known key shapes.

`replay` turns a record back into a `Run` by emitting its events again, so the
displays that show a live run show a past one the same way.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .run import FILE_WRITTEN, RUN_FINISHED, RUN_STARTED, SUBAGENT_STARTED, TOOL_CALL, Event, Run, Usage

FORMAT = "deepagent-run/1"
RUNS_DIR = Path(".deepagent") / "runs"
REDACTED = "[REDACTED]"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.I)
# Shapes of provider keys, matched anywhere in any text of the record.
KEY_PATTERNS = (
    r"\bsk-[A-Za-z0-9_\-]{8,}",  # OpenAI, Anthropic (sk-ant-...), many OpenAI-compatible servers
    r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bgh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
    r"\bhf_[A-Za-z0-9]{20,}",  # Hugging Face tokens
    r"\bAIza[0-9A-Za-z_\-]{30,}",  # Google API keys
    r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack tokens
    r"\b[Bb]earer\s+[A-Za-z0-9._\-]{12,}",  # Authorization headers
)
MIN_SECRET_LENGTH = 6  # shorter values ("1", "true") would scrub ordinary text


# ------------------------------------------------------------------ secrets
def secret_values(*lms: Any, environ: dict[str, str] | None = None) -> set[str]:
    """Values to scrub: secret-looking environment variables and LM settings (``api_key``, headers...)."""
    environ = os.environ if environ is None else environ
    values = {value for name, value in environ.items() if SECRET_NAME.search(name)}
    for lm in lms:
        _collect(getattr(lm, "kwargs", None), values, secret=False)
        for attribute in ("api_key", "api_base_key"):
            _collect(getattr(lm, attribute, None), values, secret=True)
    return {value for value in values if isinstance(value, str) and len(value) >= MIN_SECRET_LENGTH}


def _collect(value: Any, into: set[str], secret: bool) -> None:
    if isinstance(value, str):
        if secret:
            into.add(value)
            # "Bearer sk-..." also hides the bare key
            into.update(part for part in value.split() if len(part) >= MIN_SECRET_LENGTH)
    elif isinstance(value, dict):
        for key, item in value.items():
            _collect(item, into, secret or bool(SECRET_NAME.search(str(key))))
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect(item, into, secret)


class Redactor:
    """Replaces secrets in every string of a JSON-able value (keys included)."""

    def __init__(self, secrets: Iterable[str] = ()):
        self.secrets = set(secrets)
        self._compile()

    def _compile(self) -> None:
        literal = [re.escape(value) for value in sorted(self.secrets, key=len, reverse=True)]
        self.pattern = re.compile("|".join(literal + list(KEY_PATTERNS)))

    def refresh(self, extra: Iterable[str] = ()) -> None:
        """Pick up secrets set in the environment since (a notebook can set them mid-session)."""
        current = self.secrets | secret_values() | set(extra)
        if current != self.secrets:
            self.secrets = current
            self._compile()

    def text(self, text: str) -> str:
        return self.pattern.sub(REDACTED, text)

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self(key) if isinstance(key, str) else key: self(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self(item) for item in value]
        return value


# ------------------------------------------------------------------ the record
def runs_dir(workspace: str | os.PathLike) -> Path:
    return Path(workspace).expanduser().resolve() / RUNS_DIR


def record_of(run: Run, files: dict[str, int] | None = None,
              tool_calls: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """The JSON-able record of ``run`` and its sub-agents (before redaction)."""
    record = {"format": FORMAT, **_tree_dict(run, tool_calls or {})}
    record["usage_total"] = tree_usage(run).to_dict()
    record["files"] = dict(files or {})
    record["elapsed"] = round(run.elapsed, 3)
    record["updated_at"] = time.time()
    return record


def _tree_dict(run: Run, tool_calls: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    data = run.to_dict()
    data["max_iters"] = run.max_iters
    data["tool_calls"] = tool_calls.get(run.id, [])
    for step_data, step in zip(data["steps"], list(run.steps)):
        step_data["children"] = [_tree_dict(child, tool_calls) for child in list(step.children)]
    data["orphans"] = [_tree_dict(child, tool_calls) for child in list(run._orphans)]
    return data


def walk(run: Run) -> Iterator[Run]:
    """``run`` and every sub-agent run under it."""
    yield run
    for child in run.children:
        yield from walk(child)


def tree_usage(run: Run) -> Usage:
    """The LM usage of ``run`` and all its sub-agents together."""
    total = Usage()
    for each in walk(run):
        total.lm_calls += each.usage.lm_calls
        total.input_tokens += each.usage.input_tokens
        total.output_tokens += each.usage.output_tokens
        total.cost += each.usage.cost
    return total


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to a temporary file beside ``path`` and rename it over."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, default=repr)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class RunRecorder:
    """Keeps the record of a root run (sub-agents nested in it) on disk while it runs.

    Args:
        run: the root run.
        workspace: the record goes to ``<workspace>/.deepagent/runs/<run-id>.json``.
        secrets: extra values to scrub (the LM's key; see `secret_values`).
        min_interval: least seconds between two writes during the run.
        budget: most share of the run's time spent writing its record.
    """

    MIN_INTERVAL = 1.0
    BUDGET = 0.05

    def __init__(self, run: Run, workspace: str | os.PathLike, *, secrets: Iterable[str] = (),
                 min_interval: float | None = None, budget: float | None = None):
        self.run = run
        self.path = runs_dir(workspace) / f"{run.id}.json"
        self.redact = Redactor(set(secrets) | secret_values())
        self.min_interval = self.MIN_INTERVAL if min_interval is None else min_interval
        self.budget = self.BUDGET if budget is None else budget
        self.files: dict[str, int] = {}
        self.tool_calls: dict[str, list[dict[str, Any]]] = {}
        self._spawned: dict[str, list[str]] = {}
        self.writes = 0
        self.error: Exception | None = None
        self._last_write = float("-inf")
        self._last_cost = 0.0
        self._lock = threading.RLock()
        self._timer: threading.Timer | None = None
        self.unsubscribe = run.subscribe(self.on_event)

    def on_event(self, event: Event) -> None:
        if event.kind == FILE_WRITTEN:
            self.files[event.data["path"]] = event.data["size"]
        elif event.kind == SUBAGENT_STARTED:
            self._spawned.setdefault(event.run.id, []).append(event.data["child"].id)
        elif event.kind == TOOL_CALL:  # recorded when the tool returns: it owns the sub-agents started since
            step = event.run.current_step
            call = {"step": step.index if step else None, **event.data}
            spawned = self._spawned.pop(event.run.id, None)
            if spawned:
                call["subagents"] = spawned
            self.tool_calls.setdefault(event.run.id, []).append(call)
        if event.run is self.run and event.kind in (RUN_STARTED, RUN_FINISHED):
            self.flush()
            if event.kind == RUN_FINISHED:
                self.close()
            return
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        wait = self._last_write + max(self.min_interval, self._last_cost / self.budget) - time.monotonic()
        if wait <= 0:
            self.flush()
            return
        with self._lock:
            if self._timer is None:
                self._timer = threading.Timer(wait, self._on_timer)
                self._timer.daemon = True
                self._timer.start()

    def _on_timer(self) -> None:
        with self._lock:
            self._timer = None
        try:
            self.flush()
        except Exception:  # the run is changing under us; the next event writes again
            pass

    def flush(self) -> None:
        """Write the record now."""
        with self._lock:
            started = time.monotonic()
            try:
                self.redact.refresh()
                write_json_atomic(self.path, self.redact(record_of(self.run, self.files, self.tool_calls)))
            except OSError as exc:  # a read-only workspace must not stop the agent
                self.error = exc
                return
            self.writes += 1
            self._last_write = time.monotonic()
            self._last_cost = self._last_write - started

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        self.unsubscribe()


# ------------------------------------------------------------------ reading
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


# ------------------------------------------------------------------ replay
def replay(record: dict[str, Any], on_run: Callable[[Run], Any] | None = None) -> Run:
    """A `Run` rebuilt from ``record`` by emitting its events again.

    ``on_run(run)`` is called before the first event, to subscribe the displays.
    """
    run = Run(record.get("task", ""), config=record.get("config") or {}, profile=record.get("profile", "default"),
              run_id=record.get("id"))
    if on_run is not None:
        on_run(run)
    _replay_into(run, record, files=record.get("files") or {})
    return run


def _replay_into(run: Run, record: dict[str, Any], files: dict[str, int]) -> None:
    run.prompt_hash = record.get("prompt_hash")
    run.max_iters = record.get("max_iters") or run.config.get("max_iters")
    run.start()
    for child in record.get("orphans") or []:
        _replay_child(run, child)
    for step_data in record.get("steps") or []:
        step = run.begin_step(step_data.get("reasoning", ""), step_data.get("code", ""))
        for child in step_data.get("children") or []:
            _replay_child(run, child)
        run.end_step(step_data.get("output") or "")
        step.started_at = step_data.get("started_at") or step.started_at
        step.ended_at = step_data.get("ended_at") or step.ended_at
    if record.get("todos"):
        run.set_todos(record["todos"])
    written = record.get("files_written") or []
    for path in written:
        run.record_file(path, files.get(path, 0))
    usage = record.get("usage") or {}
    run.usage = Usage(**{key: usage.get(key, 0) for key in ("lm_calls", "input_tokens", "output_tokens", "cost")})
    status = record.get("status") or "finished"
    if status in ("pending", "running"):
        status = "interrupted"  # the record of a run that never finished
    started = record.get("started_at")
    ended = record.get("ended_at") or record.get("updated_at")
    if started and ended:  # so that what is shown at run_finished has the recorded duration
        run.started_at = time.time() - (ended - started)
    run.finish(status, result=record.get("result"), error=record.get("error"))
    run.started_at, run.ended_at = started or run.started_at, ended or run.ended_at


def _replay_child(parent: Run, record: dict[str, Any]) -> None:
    child = parent.add_child(record.get("task", ""), config=record.get("config") or {},
                             profile=record.get("profile", "default"), run_id=record.get("id"))
    _replay_into(child, record, files={})
    parent.child_finished(child)
