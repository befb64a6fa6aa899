"""The agent's workspace: a directory it can list, read, write, edit and search.

Every path is resolved against the workspace root and refused if it would leave it
(``..``, an absolute path, a symlink pointing out). The resolved path is then opened
component by component from the root without following links (`safe_fs`), so a
directory swapped for a symlink between the check and the use makes the call fail,
never act outside. Patterns the agent gives are matched in linear time (`patterns`).
Long walks (grep, glob, ls, tree) stop early when ``should_stop()`` says so (a cancelled
run). Errors are returned to the agent as strings starting with ``Error:``; they never
end the run.

``.deepagent/`` is the host's state (run records, event logs, checkpoints, memory): the tools
read it but never write or edit anything under it (`HOST_STATE`), whichever path or link leads
there, so an agent cannot plant what the host later loads back.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import Any, Callable

from ...errors import DeepAgentError
from . import safe_fs
from .patterns import PatternError, compile_regex, glob_regex

GREP_MAX_MATCHES = 200
GREP_MAX_LINE = 300
LS_MAX_ENTRIES = 500
GLOB_MAX = 500
STOP_CHECK_LINES = 20_000  # grep asks should_stop() at least this often inside one file
HOST_STATE = ".deepagent"  # the host's records, checkpoints and memory: never written by the tools
SKIPPED_DIRS = {".git", HOST_STATE, "__pycache__", ".ipynb_checkpoints", ".venv", "node_modules"}
Stop = Callable[[], bool] | None


LINE_CHARS = 2000  # of one line read_file shows
BINARY_SIGNATURES = [(b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
                     (b"%PDF", "a PDF document"), (b"PK\x03\x04", "a zip archive (or .xlsx, .docx)"),
                     (b"PAR1", "a Parquet file"), (b"\x80", "a pickle"), (b"\x1f\x8b", "gzip data"),
                     (b"SQLite format 3", "an SQLite database"), (b"\x93NUMPY", "a NumPy array")]


def binary_kind(head: bytes) -> str | None:
    """What the first bytes of a file say it is, when that is not text (None: text)."""
    for signature, kind in BINARY_SIGNATURES:
        if head.startswith(signature):
            return kind
    return "a binary file" if b"\x00" in head else None


def _lines(handle: Any) -> Any:
    """The file's lines, each at most `LINE_CHARS` (and a note of what more it holds), however long it is."""
    while True:
        line = handle.readline(LINE_CHARS + 1)
        if not line:
            return
        if len(line) > LINE_CHARS and not line.endswith("\n"):
            more = len(line) - LINE_CHARS
            while True:
                rest = handle.readline(1 << 20)
                if not rest:
                    break
                more += len(rest) - rest.endswith("\n")
                if rest.endswith("\n"):
                    break
            line = f"{line[:LINE_CHARS]} ... ({more:,} more characters in this line)"
        yield line


class WorkspaceError(DeepAgentError, ValueError):
    """A path or an edit the workspace refuses; its message is what the agent sees."""


class HostStatePath(WorkspaceError):
    """A write into the host's own folder (records, checkpoints, memory), which no tool writes."""


class Workspace:
    def __init__(self, root: str | os.PathLike, on_write: Callable[[str, int], None] | None = None):
        self.root = Path(root).expanduser().resolve()
        self.on_write = on_write

    # ------------------------------------------------------------------ paths
    def resolve(self, path: str | os.PathLike) -> Path:
        """The absolute path for ``path`` inside the workspace, or WorkspaceError."""
        text = os.fspath(path)
        if not isinstance(text, str):
            raise WorkspaceError(f"Error: a path must be a string, not {type(text).__name__}")
        if "\x00" in text:
            raise WorkspaceError(f"Error: invalid path {text!r} (contains a NUL byte)")
        candidate = Path(text)
        if candidate.is_absolute():
            raise WorkspaceError(f"Error: {text!r} is absolute; use a path relative to the workspace")
        try:
            resolved = (self.root / candidate).resolve()
        except RuntimeError:  # Python 3.11 reports a symlink loop so
            raise WorkspaceError(f"Error: {text!r} is a symlink loop") from None
        except OSError as exc:
            raise WorkspaceError(f"Error: cannot resolve {text!r}: {exc.strerror or exc}") from None
        if resolved != self.root and self.root not in resolved.parents:
            raise WorkspaceError(f"Error: {text!r} is outside the workspace")
        return resolved

    def relative(self, path: Path) -> str:
        rel = path.relative_to(self.root).as_posix()
        return rel or "."

    def _parts(self, path: str | os.PathLike) -> tuple[str, ...]:
        return self.resolve(path).relative_to(self.root).parts

    def _dir(self, parts: tuple[str, ...], shown: str, create: bool = False) -> int:
        """A descriptor of the folder ``parts`` under the root, entered without following links."""
        try:
            with safe_fs.opened(safe_fs.open_root(self.root)) as root:
                return safe_fs.open_dir(root, parts, create=create)
        except OSError as exc:
            raise self._error(exc, shown) from None

    def _error(self, exc: OSError, shown: str) -> WorkspaceError:
        if exc.errno in safe_fs.RACED:
            return WorkspaceError(f"Error: {shown!r} changed while it was being used (part of the path is now a "
                                  "symlink or not a folder); nothing was done")
        if isinstance(exc, FileNotFoundError):
            return WorkspaceError(f"Error: {shown!r} does not exist")
        if isinstance(exc, (IsADirectoryError, safe_fs.NotRegularFile)):
            return WorkspaceError(f"Error: {shown!r} is not a file in the workspace")
        return WorkspaceError(f"Error: {shown!r}: {exc.strerror or exc}")

    def _open(self, path: str) -> tuple[tuple[str, ...], int]:
        """The resolved parts of ``path`` and a descriptor to read it (a regular file, not a link)."""
        parts = self._parts(path)
        if not parts:
            raise WorkspaceError(f"Error: {path!r} is not a file in the workspace")
        with safe_fs.opened(self._dir(parts[:-1], path)) as folder:
            try:
                return parts, safe_fs.open_regular(folder, parts[-1])
            except OSError as exc:
                raise self._error(exc, path) from None

    def _write(self, parts: tuple[str, ...], shown: str, text: str) -> int:
        if parts and parts[0].casefold() == HOST_STATE:
            raise HostStatePath(f"Error: {shown!r} is in {HOST_STATE}/, the host's own records, checkpoints and "
                                "memory; the tools do not write there")
        data = text.encode("utf-8")  # before anything is created: a bad string leaves nothing behind
        with safe_fs.opened(self._dir(parts[:-1], shown, create=True)) as folder:
            try:
                size = safe_fs.write_atomic(folder, parts[-1], data)
            except IsADirectoryError:
                raise WorkspaceError(f"Error: {shown!r} is a directory") from None
            except OSError as exc:
                if exc.errno in safe_fs.RACED:
                    raise self._error(exc, shown) from None
                raise
        if self.on_write:
            self.on_write("/".join(parts), size)
        return size

    # ------------------------------------------------------------------ tools
    def ls(self, path: str = ".", should_stop: Stop = None) -> str:
        parts = self._parts(path)
        if parts:
            with safe_fs.opened(self._dir(parts[:-1], path)) as parent:
                found = safe_fs.lstat(parent, parts[-1])
            if found is None:
                raise WorkspaceError(f"Error: {path!r} does not exist")
            if not stat.S_ISDIR(found.st_mode):
                return f"{'/'.join(parts)}  {found.st_size} B"
        lines = []
        with safe_fs.opened(self._dir(parts, path)) as folder:
            listing = safe_fs.entries(folder)
            listing.sort(key=lambda entry: (entry[1] != "dir", entry[0]))
            for name, kind in listing:
                if should_stop is not None and should_stop():
                    lines.append("... (stopped: the run was cancelled)")
                    break
                if name in SKIPPED_DIRS:
                    continue
                if kind == "dir":
                    lines.append(f"{name}/")
                elif kind == "link":
                    lines.append(self._link_entry(parts, name))
                else:
                    found = safe_fs.lstat(folder, name)
                    lines.append(f"{name}  {_human(found.st_size) if found else '?'}")
                if len(lines) >= LS_MAX_ENTRIES:
                    lines.append("... (more entries; narrow the path)")
                    break
        return "\n".join(lines) if lines else "(empty)"

    def _link_entry(self, parts: tuple[str, ...], name: str) -> str:
        try:
            target = self.resolve("/".join(parts + (name,)))
        except WorkspaceError:
            return f"{name}@  (a link that leaves the workspace or loops)"
        return f"{name}@  -> {self.relative(target)}"

    def read_file(self, path: str, offset: int = 0, limit: int = 2000, read_on: str = "") -> str:
        """Numbered lines of a text file; a binary file is an error that says how to read it, and a line
        longer than `LINE_CHARS` is shown cut, with how much more it holds (it is never read whole). Lines left
        after ``limit`` are counted, with the call that reads on: ``read_on``, the tool's call up to the path."""
        offset, limit = max(0, int(offset)), max(1, int(limit))
        _, fd = self._open(path)
        out = []
        total = 0
        with open(fd, "rb") as raw:
            kind = binary_kind(raw.read(8192))
            if kind:
                raise WorkspaceError(f"Error: {path!r} is {kind}, not text: read it with a library that "
                                     f"understands it (pandas, PIL, ...) from {str(self.root / path)!r}")
            raw.seek(0)
            handle = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
            for number, line in enumerate(_lines(handle), start=1):
                total = number
                if offset < number and len(out) < limit:
                    out.append(f"{number:6d}\t{line.rstrip(chr(10))}")
        if not out:
            return f"(no lines after line {offset}; the file has {total} lines)"
        if total > offset + len(out):
            call = f"{read_on}{path!r}, offset={offset + len(out)})" if read_on else f"from offset={offset + len(out)}"
            out.append(f"... ({total - offset - len(out)} more lines; {call})")
        return "\n".join(out)

    def write_file(self, path: str, content: str) -> str:
        parts = self._parts(path)
        if not parts:
            raise WorkspaceError(f"Error: {path!r} is a directory")
        size = self._write(parts, path, content if isinstance(content, str) else str(content))
        return f"Wrote {size} bytes to {'/'.join(parts)}"

    def edit_file(self, path: str, old: str, new: str, replace_all: bool = False) -> str:
        if not old:
            raise WorkspaceError("Error: `old` must not be empty")
        parts, fd = self._open(path)
        with open(fd, encoding="utf-8", newline="") as handle:  # keeps the file's line endings
            text = handle.read()
        count = text.count(old)
        if count == 0:
            raise WorkspaceError(f"Error: the text to replace was not found in {path!r}")
        if count > 1 and not replace_all:
            raise WorkspaceError(
                f"Error: the text to replace occurs {count} times in {path!r}; "
                "give more context to make it unique, or pass replace_all=True"
            )
        updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        self._write(parts, path, updated)
        return f"Replaced {count if replace_all else 1} occurrence(s) in {'/'.join(parts)}"

    def glob(self, pattern: str, should_stop: Stop = None) -> list[str]:
        if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            raise WorkspaceError(f"Error: pattern {pattern!r} must stay inside the workspace")
        try:
            regex = glob_regex(pattern)
        except PatternError as exc:
            raise WorkspaceError(str(exc)) from None
        segments = [s for s in pattern.split("/") if s not in ("", ".")]
        depth = None if "**" in segments else len(segments)
        dirs_only = bool(segments) and segments[-1] == "**"
        matches = []
        with safe_fs.opened(self._dir((), ".")) as root:
            for prefix, dirnames, others, _ in safe_fs.walk(root, SKIPPED_DIRS, should_stop):
                level = prefix.count("/") + 1
                names = [(name, "dir") for name in dirnames] + others
                for name, kind in names:
                    rel = prefix + name
                    if (kind == "dir" or not dirs_only) and regex.fullmatch(rel) and self._inside(rel, kind):
                        matches.append(rel)
                if depth is not None and level >= depth:
                    dirnames[:] = []
        return sorted(matches)[:GLOB_MAX]

    def _inside(self, rel: str, kind: str) -> bool:
        if kind != "link":
            return True
        try:
            self.resolve(rel)
        except WorkspaceError:
            return False  # a symlink pointing out of the workspace
        return True

    def grep(self, pattern: str, path: str = ".", glob: str | None = None, should_stop: Stop = None) -> str:
        try:
            regex = compile_regex(pattern)
            wanted = glob_regex(glob, cross_folders=True) if glob else None
        except PatternError as exc:
            raise WorkspaceError(str(exc)) from None
        parts = self._parts(path)
        hits: list[str] = []
        with safe_fs.opened(self._dir(parts[:-1], path) if parts else self._dir((), path)) as parent:
            found = safe_fs.lstat(parent, parts[-1]) if parts else None
            if parts and found is None:
                raise WorkspaceError(f"Error: {path!r} does not exist")
            if found is not None and not stat.S_ISDIR(found.st_mode):
                files = [(parent, parts[-1], "/".join(parts))]
                stopped = self._grep_files(regex, files, None, hits, should_stop)
            else:
                with safe_fs.opened(self._dir(parts, path)) as start:
                    base = "/".join(parts) + "/" if parts else ""
                    files = ((fd, name, base + prefix + name)
                             for prefix, _, others, fd in safe_fs.walk(start, SKIPPED_DIRS, should_stop)
                             for name, kind in others if kind == "file")
                    stopped = self._grep_files(regex, files, wanted, hits, should_stop)
        if stopped or (should_stop is not None and should_stop()):
            hits.append("... (stopped: the run was cancelled)")
        return "\n".join(hits) if hits else "(no matches)"

    def _grep_files(self, regex, files, wanted, hits: list[str], should_stop: Stop) -> bool:
        """Search each file; True if the search stopped because ``should_stop()`` said so."""
        for folder, name, rel in files:
            if should_stop is not None and should_stop():
                return True
            if wanted is not None and not (wanted.fullmatch(rel) or wanted.fullmatch(name)):
                continue
            try:
                fd = safe_fs.open_regular(folder, name)
            except OSError:
                continue  # a link, a FIFO, gone meanwhile
            try:
                with open(fd, encoding="utf-8", errors="strict") as handle:
                    for number, line in enumerate(handle, start=1):
                        if number % STOP_CHECK_LINES == 0 and should_stop is not None and should_stop():
                            return True
                        if regex.search(line):
                            text = line.rstrip("\n")
                            if len(text) > GREP_MAX_LINE:
                                text = text[:GREP_MAX_LINE] + "..."
                            hits.append(f"{rel}:{number}: {text}")
                            if len(hits) >= GREP_MAX_MATCHES:
                                hits.append(f"... (stopped at {GREP_MAX_MATCHES} matches; narrow the pattern)")
                                return False
            except (UnicodeDecodeError, OSError):
                continue  # binary or unreadable files are skipped
        return False

    def tree(self, max_entries: int = 2000, should_stop: Stop = None) -> list[tuple[str, int]]:
        """(relative path, size) for every file, for displays."""
        out = []
        with safe_fs.opened(self._dir((), ".")) as root:
            for prefix, _, others, folder in safe_fs.walk(root, SKIPPED_DIRS, should_stop):
                for name, kind in others:
                    if kind != "file":
                        continue
                    found = safe_fs.lstat(folder, name)
                    if found is not None:
                        out.append((prefix + name, found.st_size))
                    if len(out) >= max_entries:
                        return out
        return out


def _human(size: int | float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"
