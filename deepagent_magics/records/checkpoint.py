"""Checkpoints: the workshop saved into the workspace, restored after a kernel restart.

``<workspace>/.deepagent/checkpoints/<name>/`` holds ``manifest.json`` and one file per
saved variable. A variable is serialised with cloudpickle where it can be (a DataFrame as
Parquet when pyarrow is installed); a name that cannot be serialised is kept as the
recorded code of the runs that made it, replayed on restore only if the user approves it
(`checkpoint_replay`). The manifest also keeps the conversation threads and the runs' todo lists.

A checkpoint is host state: nothing in it is loaded unless the host wrote it. The manifest
is signed with the host key (`host_key`, kept outside the workspace) and names the SHA-256
of each variable's file; `restore` checks the signature before reading anything and each
file's digest before unpickling it, so a checkpoint a sub-agent planted, or one of whose
files it replaced, is refused in one line. The signature binds the manifest to the checkpoint's
name (`place`: ``checkpoints/<name>/manifest.json``, and the name inside it), so a signed checkpoint
copied or renamed to another name is refused too. Every manifest entry is checked (an entry that
is not an object, a name that is not an identifier or would hide a builtin such as ``len``,
a file that is not the entry's own) and reported in one line when it does not fit.

A checkpoint is written into a temporary folder and renamed into place when complete, so
a crash leaves no half checkpoint under the name, and saving over a name loses the old
one only once the new one is whole. Nothing secret is written: names that look secret
and values holding a secret (also inside arrays and DataFrames: `checkpoint_secrets`) are
skipped (and said so), and the manifest is scrubbed. Every problem on restore is one line
per name; nothing already in the namespace is overwritten.

The magics over it are magics/checkpoint.py.
"""

from __future__ import annotations

import builtins
import hashlib
import io
import json
import keyword
import os
import re
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DeepAgentError, UserError
from ..core.run.secrets import Redactor, is_secret_name, secret_values
from .checkpoint_replay import Approve, recorded_code, replay as _replay, shown
from .checkpoint_secrets import holds_secret, scrub_assignments
from .host_key import HostKeyError, file_digest, signed_json, verified

FORMAT = 2  # 2: signed with the host key, each file's digest in the manifest
DIR = Path(".deepagent") / "checkpoints"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
PURPOSE = "deepagent checkpoint manifest"
MAX_MANIFEST = 64 * 2**20
HOWS = {"pickle": ".pkl", "parquet": ".parquet", "replay": None}
DIGEST = re.compile(r"^[0-9a-f]{64}$")
__all__ = ["CheckpointError", "Report", "checkpoint_dir", "list_checkpoints", "load_manifest", "restore", "save",
           "scrub_assignments"]


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


def place(name: str) -> str:
    """What a checkpoint's manifest is, as its signature names it: its path in the workspace."""
    return (DIR / name / "manifest.json").as_posix()


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
        try:
            (staging / "manifest.json").write_bytes(signed_json(redact(manifest), PURPOSE, place(name)))
        except HostKeyError as exc:
            raise CheckpointError(f"cannot sign the checkpoint: {exc}") from None
        report.bytes = sum(p.stat().st_size for p in staging.iterdir())
        _swap_in(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    report.seconds = time.perf_counter() - started
    return report


def _save_variable(staging: Path, name: str, value: Any, redact: Redactor, report: Report) -> dict | None:
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    if is_secret_name(name):
        report.skipped[name] = "its name looks secret"
        return None
    if kind == "pandas.core.frame.DataFrame" and _has_pyarrow():
        if holds_secret(value, redact):
            report.skipped[name] = "it holds a secret"
            return None
        try:
            path = staging / f"{name}.parquet"
            value.to_parquet(path)
            report.saved[name] = "parquet"
            return {"name": name, "how": "parquet", "file": path.name, "sha256": file_digest(path), "type": kind}
        except Exception:  # odd column types, any engine's error: pickled instead
            pass
    try:
        import cloudpickle

        data = cloudpickle.dumps(value)
    except Exception as exc:  # whatever pickling a user's value raises: replayed instead, and why
        report.saved[name] = "replay"
        return {"name": name, "how": "replay", "type": kind, "why": f"{type(exc).__name__}: {str(exc)[:120]}"}
    if holds_secret(value, redact, pickled=data):  # a secret, or a piece of one, in the bytes or an array's text
        report.skipped[name] = "it holds a secret"
        return None
    (staging / f"{name}.pkl").write_bytes(data)
    report.saved[name] = "pickle"
    return {"name": name, "how": "pickle", "file": f"{name}.pkl", "sha256": hashlib.sha256(data).hexdigest(),
            "type": kind}


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
    """The manifest of checkpoint ``name``, if this host signed it; else `CheckpointError` (one line)."""
    folder = checkpoint_dir(root, name)
    manifest_path = folder / "manifest.json"
    if not folder.is_dir():
        known = ", ".join(list_checkpoints(root)) or "none yet"
        raise CheckpointError(f"there is no checkpoint {name!r} in {folder.parent} (saved: {known}); "
                              "%deepagent_checkpoint NAME saves one")
    try:
        raw = _read_regular(manifest_path, MAX_MANIFEST)
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint {name!r} is partial (no manifest.json): save it again") from None
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {name!r} cannot be read ({type(exc).__name__}); save it again") from None
    if not verified(raw, PURPOSE, place(name)):
        raise CheckpointError(f"checkpoint {name!r} does not carry this host's signature for that name (it was not "
                              "saved as it is by %deepagent_checkpoint here: changed, planted, or copied or renamed "
                              "from another name): nothing was loaded")
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CheckpointError(f"checkpoint {name!r} is corrupt ({type(exc).__name__}); save it again") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or manifest.get("complete") is not True:
        raise CheckpointError(f"checkpoint {name!r} is partial or from another version: save it again")
    if not isinstance(manifest.get("variables"), list):
        raise CheckpointError(f"checkpoint {name!r} is corrupt (no variable list); save it again")
    if manifest.get("name") != name:  # signed as this name's already: a second lock
        raise CheckpointError(f"checkpoint {name!r} holds the manifest of {str(manifest.get('name'))[:64]!r}: "
                              "nothing was loaded")
    return manifest


def _read_regular(path: Path, limit: int | None = None) -> bytes:
    """A regular file's bytes (not a link, a FIFO or a device behind the name)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ValueError(f"{path.name} is not a regular file")
        return handle.read() if limit is None else handle.read(limit)


def entry_problem(entry: Any, namespace: dict[str, Any]) -> tuple[str, str] | None:
    """(label, why) when a manifest entry cannot be restored as it is; None when it can."""
    if not isinstance(entry, dict):
        return "", f"an entry of the manifest is not an object ({type(entry).__name__}): skipped"
    name = entry.get("name")
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        return "", f"an entry's name {str(name)[:60]!r} is not a Python name: skipped"
    if name.startswith("__") or hasattr(builtins, name):
        return name, f"it would hide the builtin {name!r}: not restored (rename it in a run and checkpoint again)"
    if name in namespace:
        return name, "kept the value already in the kernel"
    how = entry.get("how")
    if how not in HOWS:
        return name, f"the manifest says {str(how)[:40]!r}, not how it was saved: not restored"
    if how != "replay" and (entry.get("file") != f"{name}{HOWS[how]}" or not DIGEST.match(str(entry.get("sha256")))):
        return name, "the manifest does not name its own file and digest: not restored"
    return None


def restore(root: str | os.PathLike, name: str, namespace: dict[str, Any],
            approve: Approve | None = None) -> tuple[Report, dict[str, Any]]:
    """Load checkpoint ``name`` into ``namespace`` (never over a name already bound); the report and manifest.

    ``approve(names, code)`` is asked before recorded code runs again to rebuild the names that
    could not be serialised; it returns (yes or no, why not). Without it, nothing is replayed.
    """
    started = time.perf_counter()
    manifest = load_manifest(root, name)
    folder = checkpoint_dir(root, name)
    report = Report(folder)
    loaded: dict[str, Any] = {}
    to_replay = []
    for number, entry in enumerate(manifest["variables"], start=1):
        problem = entry_problem(entry, namespace)
        if problem is not None:
            label, why = problem
            report.skipped[label or f"entry {number}"] = why
            continue
        variable = entry["name"]
        if entry["how"] == "replay":
            to_replay.append(variable)
            continue
        try:
            loaded[variable] = _load_variable(folder, entry)
            report.saved[variable] = entry["how"]
        except DigestMismatch:
            report.skipped[variable] = "its file changed since this host saved the checkpoint: not loaded"
        except ModuleNotFoundError as exc:
            report.skipped[variable] = (f"needs the package {exc.name!r}, which is not installed here: "
                                        f"pip install {exc.name} and resume again")
        except Exception as exc:  # whatever loading a value raises: skipped, and why
            report.skipped[variable] = f"could not be loaded ({type(exc).__name__}: {str(exc)[:100]})"
    if to_replay:
        _replay_into(manifest, namespace, loaded, to_replay, approve, report)
    namespace.update(loaded)
    report.restored = list(loaded)
    report.seconds = time.perf_counter() - started
    return report, manifest


def _replay_into(manifest: dict[str, Any], namespace: dict[str, Any], loaded: dict[str, Any], names: list[str],
                 approve: Approve | None, report: Report) -> None:
    steps = recorded_code(manifest.get("replay"))
    if not steps:
        for variable in names:
            report.skipped[variable] = "could not be serialised, and no recorded code makes it"
        return
    ok, why = approve(names, shown(steps)) if approve is not None else (False, "no one was asked to approve it")
    if not ok:
        for variable in names:
            report.skipped[variable] = f"rebuilding it means running its recorded code again, not done: {why}"
        return
    replayed = _replay(steps, {**namespace, **loaded}, set(names))
    for variable in names:
        if variable in replayed:
            loaded[variable] = replayed[variable]
            report.saved[variable] = "replayed"
        else:
            report.skipped[variable] = "could not be serialised, and replaying its recorded code did not make it"


class DigestMismatch(DeepAgentError, ValueError):
    """A variable's file is not the one the signed manifest names."""


def _load_variable(folder: Path, entry: dict[str, Any]) -> Any:
    data = _read_regular(folder / entry["file"])  # read once: what is checked is what is loaded
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise DigestMismatch()
    if entry["how"] == "parquet":
        import pandas

        return pandas.read_parquet(io.BytesIO(data))
    import cloudpickle

    return cloudpickle.loads(data)
