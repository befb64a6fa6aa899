"""File operations that cannot be raced out of a directory: every path component is opened
relative to the directory opened before it, never following a symlink.

Checking a path and then opening it by name loses a race against anything that swaps a
directory for a symlink in between (a sub-agent's kernel shares the workspace). Here a
directory is only ever entered through the file descriptor of its parent with
``O_NOFOLLOW``, missing folders are made with ``mkdir(dir_fd=...)`` and entered the same
way, and a file is written to a temporary file inside the directory already opened and
renamed over its name there (``rename(src_dir_fd, dst_dir_fd)``). A swap in between makes
the operation fail (``ELOOP``/``ENOTDIR``); it never makes it act outside.

Files and folders are created with mode 0o666/0o777 less the user's umask; a file that is
rewritten keeps its mode. Reads open with ``O_NONBLOCK`` and accept regular files only, so a
FIFO planted in the workspace cannot block the host.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from contextlib import contextmanager
from typing import Callable, Iterator

from ...errors import DeepAgentError

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
RACED = (errno.ELOOP, errno.ENOTDIR)  # a component became a symlink or stopped being a folder


class NotRegularFile(DeepAgentError, OSError):
    """The name is a folder, a FIFO, a socket or a device: nothing the tools read or replace."""


@contextmanager
def opened(fd: int) -> Iterator[int]:
    try:
        yield fd
    finally:
        os.close(fd)


def open_root(path: str | os.PathLike) -> int:
    """The workspace root itself (a path the user chose; resolved when the workspace was made)."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def open_dir(root_fd: int, parts: tuple[str, ...] | list[str], *, create: bool = False) -> int:
    """A new descriptor of ``root/parts...``, each component entered without following links.

    With ``create``, missing folders are made (with the user's umask) and then entered the
    same way, so a folder swapped for a symlink right after ``mkdir`` is refused too.
    """
    fd = os.dup(root_fd)
    try:
        for part in parts:
            try:
                following = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass  # made meanwhile by someone else: entered below like any other
                following = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = following
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_regular(dir_fd: int, name: str) -> int:
    """A descriptor for reading the regular file ``name`` in ``dir_fd`` (not through a link)."""
    fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", name)
        os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_text(dir_fd: int, name: str, errors: str = "strict") -> str:
    with os.fdopen(open_regular(dir_fd, name), encoding="utf-8", errors=errors) as handle:
        return handle.read()


def lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def write_atomic(dir_fd: int, name: str, data: bytes) -> int:
    """Replace ``name`` in ``dir_fd`` with ``data`` all at once; return the size written.

    The temporary file is made inside ``dir_fd`` and renamed there; on any failure it is
    removed. A rewritten file keeps its mode; a new one gets the user's umask.
    """
    existing = lstat(dir_fd, name)
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", name)
    temp = f".{name[:120]}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temp, TEMP_FLAGS, 0o666, dir_fd=dir_fd)
    try:
        try:
            if existing is not None and stat.S_ISREG(existing.st_mode):
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(temp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    return size


Entry = tuple[str, str]  # (name, kind): kind is "dir", "file", "link" or "other"


def entries(dir_fd: int) -> list[Entry]:
    """The names in a folder with their kind, links not followed, sorted by name."""
    out = []
    with os.scandir(dir_fd) as listing:
        for entry in listing:
            try:
                if entry.is_symlink():
                    kind = "link"
                elif entry.is_dir(follow_symlinks=False):
                    kind = "dir"
                elif entry.is_file(follow_symlinks=False):
                    kind = "file"
                else:
                    kind = "other"
            except OSError:
                continue  # gone meanwhile
            out.append((entry.name, kind))
    return sorted(out)


def walk(top_fd: int, skip: set[str], should_stop: Callable[[], bool] | None = None,
         prefix: str = "") -> Iterator[tuple[str, list[str], list[Entry], int]]:
    """Like ``os.fwalk`` (top-down, sorted), entering each folder without following links.

    Yields ``(relative dir, dirnames, other entries, dir_fd)``; prune ``dirnames`` in place.
    A folder swapped for a link (or anything else) between listing and entering is skipped;
    the walk stops early when ``should_stop()`` says so.
    """
    if should_stop is not None and should_stop():
        return
    try:
        listing = entries(top_fd)
    except OSError:
        return
    dirnames = [name for name, kind in listing if kind == "dir" and name not in skip]
    others = [(name, kind) for name, kind in listing if kind != "dir"]
    yield prefix, dirnames, others, top_fd
    for name in dirnames:
        if should_stop is not None and should_stop():
            return
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=top_fd)
        except OSError:
            continue
        with opened(fd):
            yield from walk(fd, skip, should_stop, f"{prefix}{name}/")
