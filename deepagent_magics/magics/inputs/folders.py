"""``--workspace`` and other paths: ``~`` expanded, a folder that can be one (it need not exist yet), made
now so that one that cannot be made is one line, not a traceback."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError

from .flags import one_line


def expand_path(value: str) -> str:
    return os.path.expanduser(value)


def check_workspace(value: Any, flag: str = "--workspace") -> str:
    """``value`` as a folder path the workspace can be (``~`` expanded); it need not exist yet."""
    text = expand_path(str(value))
    if not text.strip() or "\x00" in text:
        raise UsageError(f"{flag} {one_line(value, 120)!r} is not a folder path")
    path = Path(text)
    try:
        if path.exists() and not path.is_dir():
            raise UsageError(f"{flag} {one_line(value, 120)}: {one_line(path, 120)} is a file, not a folder")
        for parent in path.absolute().parents:
            if parent.exists():
                if not parent.is_dir():
                    raise UsageError(f"{flag} {one_line(value, 120)}: {one_line(parent, 120)} is a file, so "
                                     "there can be no folder under it")
                break
    except OSError as exc:  # a name too long for the system, a folder we may not look into
        raise UsageError(f"{flag} {one_line(value, 120)}: {exc.strerror or exc}") from None
    return text


def make_workspace(value: str, flag: str = "--workspace") -> None:
    """Create the workspace folder now, so that a folder that cannot be made is one line, not a traceback."""
    try:
        Path(value).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{flag} {value}: cannot create the folder ({exc.strerror or exc})") from None
