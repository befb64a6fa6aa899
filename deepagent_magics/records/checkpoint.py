"""Checkpoints: the workshop saved into the workspace, restored after a kernel restart.

``<workspace>/.deepagent/checkpoints/<name>/`` holds ``manifest.json`` and one file per
saved variable. A variable is serialised with cloudpickle where it can be (a DataFrame as
Parquet when pyarrow is installed); a name that cannot be serialised is kept as the
recorded code of the runs that made it, replayed in order on restore. The manifest also
keeps the conversation threads and the runs' todo lists.

A checkpoint is written into a temporary folder and renamed into place when complete, so
a crash leaves no half checkpoint under the name, and saving over a name loses the old
one only once the new one is whole. Nothing secret is written: names that look secret
and values holding a secret are skipped (and said so), and the manifest is scrubbed.
Every problem on restore is one line per name; nothing already in the namespace is
overwritten.

The magics over it are magics/checkpoint.py.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DeepAgentSignal, UserError
from ..core.run.secrets import Redactor, is_secret_name, secret_values

FORMAT = 1
DIR = Path(".deepagent") / "checkpoints"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# name = "value" where the name looks secret (api_key="...", OPENAI_TOKEN: '...'): the value is scrubbed
SECRET_ASSIGNMENT = re.compile(r"""(?i)(\b\w*(?:key|token|secret|password|passwd|credential)\w*["']?\s*[=:]\s*)(["'])[^"'\n]*\2""")
SUBMIT_STUB = "def SUBMIT(*args, **kwargs):\n    raise _ReplayDone()\n"


class CheckpointError(UserError, ValueError):
    """A checkpoint cannot be saved or read; the message is one line saying what to do."""


@dataclass
class Report:
    path: Path
    saved: dict[str, str] = field(default_factory=dict)  # name -> how (pickle, parquet, replay)
    skipped: dict[str, str] = field(default_factory=dict)  # name -> why
    restored: list[str] = field(default_factory=list)
    bytes: int = 0
    seconds: float = 0.0


def checkpoint_dir(root: str | os.PathLike, name: str) -> Path:
    if not NAME.match(name or ""):
        raise CheckpointError(f"{name!r} is not a checkpoint name: use letters, digits, '_', '.', '-'")
    return Path(root).expanduser().resolve() / DIR / name


def list_checkpoints(root: str | os.PathLike) -> list[str]:
    folder = Path(root).expanduser().resolve() / DIR
    return sorted(p.name for p in folder.iterdir()
                  if not p.name.startswith(".") and (p / "manifest.json").is_file()) if folder.is_dir() else []


# ------------------------------------------------------------------ saving
def save(root: str | os.PathLike, name: str, namespace: dict[str, Any], names: list[str],
         replay: list[dict[str, Any]], threads: list[dict[str, Any]], todos: dict[str, Any],
         secrets: set[str] | None = None) -> Report:
    """Save ``names`` of ``namespace`` (and the threads, todos, replay code) as checkpoint ``name``."""
    started = time.perf_counter()
    target = checkpoint_dir(root, name)
    target.parent.mkdir(parents=True, exist_ok=True)
    redact = Redactor((secrets or set()) | secret_values())
    report = Report(target)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=target.parent))
    try:
        variables = []
        for variable in dict.fromkeys(names):
            if variable not in namespace:
                continue
            entry = _save_variable(staging, variable, namespace[variable], redact, report)
            if entry:
                variables.append(entry)
        replay = [{**run, "code": [scrub_assignments(str(code)) for code in run.get("code") or []]} for run in replay]
        manifest = {"format": FORMAT, "name": name, "created": time.time(), "variables": variables,
                    "replay": replay, "threads": threads, "todos": todos, "complete": True}
        (staging / "manifest.json").write_text(json.dumps(redact(manifest), default=str, indent=1), encoding="utf-8")
        report.bytes = sum(p.stat().st_size for p in staging.iterdir())
        _swap_in(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    report.seconds = time.perf_counter() - started
    return report


def scrub_assignments(code: str) -> str:
    """``api_key = "..."`` becomes ``api_key = "[REDACTED]"``."""
    return SECRET_ASSIGNMENT.sub(r"\1\2[REDACTED]\2", code)


def _save_variable(staging: Path, name: str, value: Any, redact: Redactor, report: Report) -> dict | None:
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    if is_secret_name(name):
        report.skipped[name] = "its name looks secret"
        return None
    if isinstance(value, (str, bytes)) and redact.text(value if isinstance(value, str) else value.decode("latin-1")) != (
            value if isinstance(value, str) else value.decode("latin-1")):
        report.skipped[name] = "it holds a secret"
        return None
    if kind == "pandas.core.frame.DataFrame" and _has_pyarrow():
        try:
            path = staging / f"{name}.parquet"
            value.to_parquet(path)
            report.saved[name] = "parquet"
            return {"name": name, "how": "parquet", "file": path.name, "type": kind}
        except Exception:
            pass  # odd column types: pickle it instead
    try:
        import cloudpickle

        data = cloudpickle.dumps(value)
    except Exception as exc:
        report.saved[name] = "replay"
        return {"name": name, "how": "replay", "type": kind, "why": f"{type(exc).__name__}: {str(exc)[:120]}"}
    text = data.decode("latin-1")
    if redact.text(text) != text:  # a secret, or a piece of one, inside the pickled bytes
        report.skipped[name] = "it holds a secret"
        return None
    (staging / f"{name}.pkl").write_bytes(data)
    report.saved[name] = "pickle"
    return {"name": name, "how": "pickle", "file": f"{name}.pkl", "type": kind}


def _swap_in(staging: Path, target: Path) -> None:
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
    os.replace(staging, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _has_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


# ------------------------------------------------------------------ restoring
def load_manifest(root: str | os.PathLike, name: str) -> dict[str, Any]:
    folder = checkpoint_dir(root, name)
    manifest_path = folder / "manifest.json"
    if not folder.is_dir():
        known = ", ".join(list_checkpoints(root)) or "none yet"
        raise CheckpointError(f"there is no checkpoint {name!r} in {folder.parent} (saved: {known}); "
                              "%deepagent_checkpoint NAME saves one")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint {name!r} is partial (no manifest.json): save it again") from None
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {name!r} is corrupt ({type(exc).__name__}); save it again") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or not manifest.get("complete"):
        raise CheckpointError(f"checkpoint {name!r} is partial or from another version: save it again")
    if not isinstance(manifest.get("variables"), list):
        raise CheckpointError(f"checkpoint {name!r} is corrupt (no variable list); save it again")
    return manifest


def restore(root: str | os.PathLike, name: str, namespace: dict[str, Any]) -> tuple[Report, dict[str, Any]]:
    """Load checkpoint ``name`` into ``namespace`` (never over a name already bound); the report and manifest."""
    started = time.perf_counter()
    manifest = load_manifest(root, name)
    folder = checkpoint_dir(root, name)
    report = Report(folder)
    loaded: dict[str, Any] = {}
    to_replay = []
    for entry in manifest["variables"]:
        variable = str(entry.get("name"))
        if not variable.isidentifier():
            continue
        if variable in namespace:
            report.skipped[variable] = "kept the value already in the kernel"
            continue
        if entry.get("how") == "replay":
            to_replay.append(variable)
            continue
        try:
            loaded[variable] = _load_variable(folder, entry)
            report.saved[variable] = entry.get("how", "")
        except ModuleNotFoundError as exc:
            report.skipped[variable] = (f"needs the package {exc.name!r}, which is not installed here: "
                                        f"pip install {exc.name} and resume again")
        except Exception as exc:
            report.skipped[variable] = f"could not be loaded ({type(exc).__name__}: {str(exc)[:100]})"
    if to_replay:
        replayed = _replay(manifest.get("replay") or [], {**namespace, **loaded}, set(to_replay))
        for variable in to_replay:
            if variable in replayed:
                loaded[variable] = replayed[variable]
                report.saved[variable] = "replayed"
            else:
                report.skipped[variable] = "could not be serialised, and replaying its recorded code did not make it"
    namespace.update(loaded)
    report.restored = list(loaded)
    report.seconds = time.perf_counter() - started
    return report, manifest


def _load_variable(folder: Path, entry: dict[str, Any]) -> Any:
    path = folder / str(entry.get("file"))
    if path.parent != folder:
        raise ValueError("bad file name in the manifest")
    if entry.get("how") == "parquet":
        import pandas

        return pandas.read_parquet(path)
    import cloudpickle

    with open(path, "rb") as handle:
        return cloudpickle.load(handle)


class _ReplayDone(DeepAgentSignal, Exception):
    """The replayed code called SUBMIT: its run is done (an Exception too, as it always was)."""


def _replay(runs: list[dict[str, Any]], namespace: dict[str, Any], wanted: set[str]) -> dict[str, Any]:
    """Run the recorded code of each run, in order, in a scratch copy of the namespace; the wanted names made."""
    scratch = dict(namespace)
    scratch["_ReplayDone"] = _ReplayDone
    exec(compile(SUBMIT_STUB, "<deepagent replay>", "exec"), scratch)
    for run in runs:
        for code in run.get("code") or []:
            try:
                with _quiet():
                    exec(compile(str(code), f"<replay of run {run.get('run')}>", "exec"), scratch)
            except _ReplayDone:
                break
            except BaseException as exc:  # a step that failed then, or needs a tool: the next one may still work
                if isinstance(exc, KeyboardInterrupt):
                    raise
                continue
    return {name: scratch[name] for name in wanted if name in scratch}


class _quiet:
    """Replayed code prints nothing into the cell."""

    def __enter__(self):
        import contextlib

        self._stack = contextlib.ExitStack()
        self._stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
        self._stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stack.close()
