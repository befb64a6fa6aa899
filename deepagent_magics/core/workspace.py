"""The agent's workspace: a directory it can list, read, write, edit and search.

Every path is resolved against the workspace root and refused if it would leave
it (``..``, an absolute path, a symlink pointing out). Errors are returned to the
agent as strings starting with ``Error:``; they never end the run.
"""

from __future__ import annotations

import fnmatch
import os
import re
import tempfile
from pathlib import Path
from typing import Callable

GREP_MAX_MATCHES = 200
GREP_MAX_LINE = 300
LS_MAX_ENTRIES = 500
GLOB_MAX = 500
SKIPPED_DIRS = {".git", ".deepagent", "__pycache__", ".ipynb_checkpoints", ".venv", "node_modules"}


class WorkspaceError(ValueError):
    """A path or an edit the workspace refuses; its message is what the agent sees."""


class Workspace:
    def __init__(self, root: str | os.PathLike, on_write: Callable[[str, int], None] | None = None):
        self.root = Path(root).expanduser().resolve()
        self.on_write = on_write

    # ------------------------------------------------------------------ paths
    def resolve(self, path: str | os.PathLike) -> Path:
        """The absolute path for ``path`` inside the workspace, or WorkspaceError."""
        text = os.fspath(path)
        if "\x00" in text:
            raise WorkspaceError(f"Error: invalid path {text!r} (contains a NUL byte)")
        candidate = Path(text)
        if candidate.is_absolute():
            raise WorkspaceError(f"Error: {text!r} is absolute; use a path relative to the workspace")
        resolved = (self.root / candidate).resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise WorkspaceError(f"Error: {text!r} is outside the workspace")
        return resolved

    def relative(self, path: Path) -> str:
        rel = path.relative_to(self.root).as_posix()
        return rel or "."

    # ------------------------------------------------------------------ tools
    def ls(self, path: str = ".") -> str:
        target = self.resolve(path)
        if not target.exists():
            raise WorkspaceError(f"Error: {path!r} does not exist")
        if target.is_file():
            return f"{self.relative(target)}  {target.stat().st_size} B"
        lines = []
        for entry in sorted(target.iterdir(), key=lambda p: (not p.is_dir(), p.name)):
            if entry.name in SKIPPED_DIRS:
                continue
            if entry.is_dir():
                lines.append(f"{entry.name}/")
            else:
                lines.append(f"{entry.name}  {_size(entry)}")
            if len(lines) >= LS_MAX_ENTRIES:
                lines.append("... (more entries; narrow the path)")
                break
        return "\n".join(lines) if lines else "(empty)"

    def read_file(self, path: str, offset: int = 0, limit: int = 2000) -> str:
        target = self.resolve(path)
        if not target.is_file():
            raise WorkspaceError(f"Error: {path!r} is not a file in the workspace")
        offset, limit = max(0, int(offset)), max(1, int(limit))
        out = []
        total = 0
        with open(target, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                total = number
                if number <= offset:
                    continue
                if len(out) < limit:
                    out.append(f"{number:6d}\t{line.rstrip(chr(10))}")
        if not out:
            return f"(no lines after line {offset}; the file has {total} lines)"
        if total > offset + len(out):
            out.append(f"... ({total - offset - len(out)} more lines; read_file({path!r}, offset={offset + len(out)}))")
        return "\n".join(out)

    def write_file(self, path: str, content: str) -> str:
        target = self.resolve(path)
        if target == self.root or target.is_dir():
            raise WorkspaceError(f"Error: {path!r} is a directory")
        data = content if isinstance(content, str) else str(content)
        target.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(target, data)
        size = target.stat().st_size
        if self.on_write:
            self.on_write(self.relative(target), size)
        return f"Wrote {size} bytes to {self.relative(target)}"

    def edit_file(self, path: str, old: str, new: str, replace_all: bool = False) -> str:
        target = self.resolve(path)
        if not target.is_file():
            raise WorkspaceError(f"Error: {path!r} is not a file in the workspace")
        if not old:
            raise WorkspaceError("Error: `old` must not be empty")
        text = target.read_text(encoding="utf-8")
        count = text.count(old)
        if count == 0:
            raise WorkspaceError(f"Error: the text to replace was not found in {path!r}")
        if count > 1 and not replace_all:
            raise WorkspaceError(
                f"Error: the text to replace occurs {count} times in {path!r}; "
                "give more context to make it unique, or pass replace_all=True"
            )
        updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        _atomic_write(target, updated)
        if self.on_write:
            self.on_write(self.relative(target), target.stat().st_size)
        return f"Replaced {count if replace_all else 1} occurrence(s) in {self.relative(target)}"

    def glob(self, pattern: str) -> list[str]:
        if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            raise WorkspaceError(f"Error: pattern {pattern!r} must stay inside the workspace")
        matches = []
        for found in sorted(self.root.glob(pattern)):
            try:
                resolved = self.resolve(found.relative_to(self.root))
            except WorkspaceError:
                continue  # a symlink pointing out of the workspace
            if any(part in SKIPPED_DIRS for part in found.relative_to(self.root).parts):
                continue
            matches.append(self.relative(resolved) if resolved == found else found.relative_to(self.root).as_posix())
            if len(matches) >= GLOB_MAX:
                break
        return matches

    def grep(self, pattern: str, path: str = ".", glob: str | None = None) -> str:
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise WorkspaceError(f"Error: invalid regular expression {pattern!r}: {exc}") from None
        start = self.resolve(path)
        files = [start] if start.is_file() else self._walk_files(start)
        hits = []
        for file in files:
            rel = self.relative(file)
            if glob and not (fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(file.name, glob)):
                continue
            try:
                with open(file, encoding="utf-8", errors="strict") as handle:
                    for number, line in enumerate(handle, start=1):
                        if regex.search(line):
                            text = line.rstrip("\n")
                            if len(text) > GREP_MAX_LINE:
                                text = text[:GREP_MAX_LINE] + "..."
                            hits.append(f"{rel}:{number}: {text}")
                            if len(hits) >= GREP_MAX_MATCHES:
                                hits.append(f"... (stopped at {GREP_MAX_MATCHES} matches; narrow the pattern)")
                                return "\n".join(hits)
            except (UnicodeDecodeError, OSError):
                continue  # binary or unreadable files are skipped
        return "\n".join(hits) if hits else "(no matches)"

    def _walk_files(self, start: Path):
        for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
            for name in sorted(filenames):
                file = Path(dirpath) / name
                try:
                    self.resolve(file.relative_to(self.root))
                except WorkspaceError:
                    continue
                yield file

    def tree(self, max_entries: int = 2000) -> list[tuple[str, int]]:
        """(relative path, size) for every file, for displays."""
        out = []
        for file in self._walk_files(self.root):
            try:
                out.append((self.relative(file), file.stat().st_size))
            except OSError:
                continue
            if len(out) >= max_entries:
                break
        return out


def _atomic_write(target: Path, data: str) -> None:
    """Write to a temporary file beside ``target`` and rename it over: never half a file."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _size(path: Path) -> str:
    try:
        size = path.stat().st_size
    except OSError:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"
