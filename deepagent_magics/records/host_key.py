"""The host's key: what tells a file the host wrote from one an agent planted beside it.

Run records and checkpoints live in the workspace (``<workspace>/.deepagent/``), which the
agent's tools refuse to write and a sandboxed sub-agent sees read-only; still, anything the
host loads back as trusted (a checkpoint it unpickles, a record it continues as the user's
earlier turn) is first authenticated with an HMAC-SHA256 keyed by a secret that never enters
the workspace: ``$XDG_DATA_HOME/deepagent-magics/host.key`` (``~/.local/share/...``), created
0600 on first use, or the file ``DEEPAGENT_HOST_KEY`` names (tests point it into a temporary
folder).

A signed JSON file keeps its MAC as its first field, covering the exact bytes after it, so one
atomic write holds both and any JSON reader still reads the file::

    {"host_mac": "<64 hex>",
     "format": ..., ...}

Each kind of file signs with its own ``purpose``, so a signed record is not a signed manifest, and
with its ``place``: what the file is, by name (a record's ``runs/<id>.json``, a checkpoint's
``checkpoints/<name>/manifest.json``). A signature binds the bytes to that name, so a signed file
replayed under another name, two swapped, or one copied under a new name, no longer verifies. Files
signed before places were bound (version 0.2 and earlier) verify no longer: they are shown, never
trusted.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import UserError

ENV = "DEEPAGENT_HOST_KEY"
KEY_BYTES = 32
FIELD = "host_mac"
_SIGNED = re.compile(rb'\A\{"' + FIELD.encode() + rb'": "([0-9a-f]{64})",?')
_lock = threading.Lock()
_keys: dict[Path, bytes] = {}


class HostKeyError(UserError, OSError):
    """The host key cannot be read or made; the message is one line saying where and why."""


def key_path() -> Path:
    """Where the host key lives: ``DEEPAGENT_HOST_KEY``, else the user's data folder."""
    configured = os.environ.get(ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    data = os.environ.get("XDG_DATA_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data) / "deepagent-magics" / "host.key"


def host_key() -> bytes:
    """The host key, made (random, 0600, in a 0700 folder) the first time it is needed."""
    path = key_path()
    with _lock:
        if path in _keys:
            return _keys[path]
        key = _read(path)
        if key is None:
            key = _create(path)
        _keys[path] = key
        return key


def _read(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise HostKeyError(f"cannot read the host key {path}: {exc.strerror or exc}") from None
    with open(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise HostKeyError(f"the host key {path} is not a regular file")
        for _ in range(50):  # another process may be writing it right now
            handle.seek(0)
            key = handle.read(KEY_BYTES + 1)
            if len(key) == KEY_BYTES:
                return key
            time.sleep(0.01)
    raise HostKeyError(f"the host key {path} is damaged ({len(key)} bytes, not {KEY_BYTES}); remove it and "
                       "a new one is made (records and checkpoints signed with the old one are no longer trusted)")


def _create(path: Path) -> bytes:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:  # another process made it first
        key = _read(path)
        if key is None:
            raise HostKeyError(f"the host key {path} vanished while it was being made") from None
        return key
    except OSError as exc:
        raise HostKeyError(f"cannot make the host key {path}: {exc.strerror or exc}") from None
    key = secrets.token_bytes(KEY_BYTES)
    with open(fd, "wb") as handle:
        handle.write(key)
    return key


def mac(purpose: str, data: bytes, place: str) -> str:
    """The hex HMAC of ``data`` for ``purpose``, as the file ``place`` (what it is, by name)."""
    header = json.dumps([purpose, place]).encode("utf-8")  # one line: neither can run into the other or the data
    return hmac.new(host_key(), header + b"\n" + data, hashlib.sha256).hexdigest()


def signed_json(data: Any, purpose: str, place: str) -> bytes:
    """``data`` as JSON, its MAC (for ``purpose``, as the file ``place``) as the first field."""
    body = json.dumps(data, indent=1, default=repr).encode("utf-8")
    if not body.startswith(b"{"):
        raise TypeError("only a JSON object can be signed")
    rest = body[1:]
    comma = b"," if rest.strip() != b"}" else b""
    return b'{"' + FIELD.encode() + b'": "' + mac(purpose, body, place).encode() + b'"' + comma + rest


def verified(raw: bytes, purpose: str, place: str) -> bool:
    """Whether ``raw`` (a file's bytes) is JSON this host signed for ``purpose`` as the file ``place``."""
    match = _SIGNED.match(raw)
    if match is None:
        return False
    body = b"{" + raw[match.end():]
    try:
        return hmac.compare_digest(match.group(1).decode(), mac(purpose, body, place))
    except HostKeyError:
        return False


def file_digest(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes (a checkpoint's manifest names each file's)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
