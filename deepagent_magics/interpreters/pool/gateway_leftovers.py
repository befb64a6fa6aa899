"""Gateway kernels a host left behind when it was killed (SIGKILL: no exit handler ran).

Each host process keeps the ids of the kernels it has running on gateways in a small file,
``<tmp>/deepagent-gateway-kernels-<pid>.json`` ({kernel id: gateway URL}; never a token). The next
host that uses the same gateway shuts down the kernels listed by processes that no longer exist.
What a host on another machine left is for the gateway's own culling of idle kernels
(docs/scale-out.md).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

PREFIX = "deepagent-gateway-kernels-"
_lock = threading.Lock()
_mine: dict[str, str] = {}
_swept: set[str] = set()


def _file(pid: int) -> Path:
    return Path(tempfile.gettempdir()) / f"{PREFIX}{pid}.json"


def _write() -> None:
    path = _file(os.getpid())
    if not _mine:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(_mine))
    os.replace(tmp, path)


def remember(gateway: Any, kernel_id: str) -> None:
    with _lock:
        _mine[kernel_id] = gateway.url
        try:
            _write()
        except OSError:
            log.debug("could not note gateway kernel %s", kernel_id, exc_info=True)


def forget(kernel_id: str | None) -> None:
    with _lock:
        if _mine.pop(kernel_id, None) is not None:
            try:
                _write()
            except OSError:
                pass


def sweep(gateway: Any) -> list[str]:
    """Shut down on ``gateway`` the kernels listed by host processes that are gone; their ids."""
    with _lock:
        if gateway.url in _swept:
            return []
        _swept.add(gateway.url)
    removed: list[str] = []
    for path in Path(tempfile.gettempdir()).glob(f"{PREFIX}*.json"):
        try:
            pid = int(path.stem[len(PREFIX):])
            os.kill(pid, 0)
            continue  # that host is alive
        except ProcessLookupError:
            pass
        except (ValueError, PermissionError):
            continue
        try:
            listed = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        left = {}
        for kernel_id, url in listed.items():
            if url != gateway.url:
                left[kernel_id] = url
                continue
            try:
                gateway.shutdown_kernel(kernel_id)
                removed.append(kernel_id)
            except Exception:  # unreachable now: try again next time
                left[kernel_id] = url
        try:
            path.write_text(json.dumps(left)) if left else path.unlink(missing_ok=True)
        except OSError:
            pass
    return removed
