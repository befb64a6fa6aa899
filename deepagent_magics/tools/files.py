"""The file tools: the agent's view of its workspace (`core.workspace.workspace.Workspace`).

Paths are relative to the workspace and never leave it; see the Workspace for how. The
walks (ls, glob, grep) stop early once the session is cancelled (a sub-agent past its time
limit: ``session.cancelled``, an Event, when the session has one).

Skills are offered in every later root prompt (tools/skills.py), so only the user and root runs
add them: a sub-agent's ``write_file``/``edit_file`` under ``<workspace>/skills/`` is refused with
one ``Error:`` line unless the user allowed it (``DeepAgent.subagent_skills``, ``%deepagent_config
--subagent-skills on``).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Iterator

from ..core.loop.capability import ToolLine
from ..core.run import session as _session
from ..core.workspace.skills import WORKSPACE_FOLDER
from ..core.workspace.workspace import HostStatePath, WorkspaceError
from .tool_call import tool


def _should_stop(session: Any) -> Callable[[], bool] | None:
    cancelled = getattr(session, "cancelled", None)
    return cancelled.is_set if cancelled is not None else None


@tool
def ls(path: str = ".") -> str:
    """List a folder."""
    session = _session.current()
    return session.workspace.ls(path, should_stop=_should_stop(session))


@tool
def read_file(path: str, offset: int = 0, limit: int = 2000) -> str:
    """A text file as numbered lines.

    Lines from offset+1, at most ``limit`` of them.

    A binary file (an image, a pickle, a parquet file) is refused with an Error: read it with the
    library that understands it (pandas, PIL, ...) from its workspace path."""
    return _session.current().workspace.read_file(path, offset, limit, read_on="read_file(")


def _writable(session: Any, path: str) -> None:
    """Refuse a sub-agent's write into the workspace's skills folder (unless the user allowed it)."""
    if session.run.depth == 0 or getattr(session.agent, "subagent_skills", False):
        return
    parts = session.workspace.resolve(path).relative_to(session.workspace.root).parts
    if parts and parts[0] == WORKSPACE_FOLDER:
        raise WorkspaceError(f"Error: {path!r} is in {WORKSPACE_FOLDER}/, which only the user and the root agent "
                             "write; return what you learned in your result instead")


@contextlib.contextmanager
def _memory_hint() -> Iterator[None]:
    """A write refused in the host's folder says where a memory goes instead."""
    try:
        yield
    except HostStatePath as exc:
        raise HostStatePath(f"{exc} (use remember() for a memory)") from None


@tool
def write_file(path: str, content: str) -> str:
    """Create or replace a text file (`content`: a str).

    The file is replaced atomically and its parent folders are created. ``content`` must be text:
    bytes, a DataFrame or another object is refused with an Error that says how to write it."""
    session = _session.current()
    if not isinstance(content, str):
        raise ValueError(not_text(content, path, session.workspace.root))
    _writable(session, path)
    with _memory_hint():
        return session.workspace.write_file(path, content)


@tool
def edit_file(path: str, old: str, new: str, replace_all: bool = False) -> str:
    """Replace `old` with `new`.

    ``old`` must be found once, unless ``replace_all``."""
    session = _session.current()
    _writable(session, path)
    with _memory_hint():
        return session.workspace.edit_file(path, old, new, replace_all)


@tool
def glob(pattern: str) -> list[str]:
    """Paths matching e.g. '**/*.csv'."""
    session = _session.current()
    return session.workspace.glob(pattern, should_stop=_should_stop(session))


@tool
def grep(pattern: str, path: str = ".", glob: str | None = None) -> str:
    """Regex search; one 'file:line: text' per match.

    The expression is RE2 syntax (no backreferences or lookarounds); the matches are capped.
    ``glob`` filters the file names searched, e.g. '*.py'."""
    session = _session.current()
    return session.workspace.grep(pattern, path, glob, should_stop=_should_stop(session))


WORKSPACE_TOOLS: list[Callable[..., Any]] = [ls, read_file, write_file, edit_file, glob, grep]
WORKSPACE_LINES = {"ls": ToolLine(order=20), "glob": ToolLine(order=20, beside="ls"), "read_file": ToolLine(order=21),
                   "write_file": ToolLine(order=22), "edit_file": ToolLine(order=23), "grep": ToolLine(order=24)}
write_file.writes = edit_file.writes = True  # refused to a read-only agent (tool_call)


def not_text(content: Any, path: Any, root: Any) -> str:
    """The error for a `write_file` whose content is not text: what it is, and how to write it instead."""
    kind = type(content)
    name = f"{kind.__module__.split('.')[0]}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__qualname__
    where = os.path.join(str(root), str(path)) if isinstance(path, str) else os.path.join(str(root), "NAME")
    if isinstance(content, (bytes, bytearray)):
        return (f"content is {name} ({len(content):,} bytes), and write_file writes text: decode it "
                f"(content.decode()) if it is text, else write the bytes with open({where!r}, 'wb').write(data)")
    if kind.__module__.split(".")[0] in ("pandas", "polars") and kind.__name__ in ("DataFrame", "Series"):
        return (f"content is a {name}, and write_file writes text: write it with its own method, e.g. "
                f"df.to_csv({where!r}) or df.to_parquet(...), or pass df.to_csv() (the text)")
    if kind.__module__.split(".")[0] == "numpy":
        return f"content is a {name}, and write_file writes text: save it with numpy.save({where!r}, array)"
    if isinstance(content, (dict, list, tuple)):
        return f"content is a {name}, and write_file writes text: pass json.dumps(value) (or str(value))"
    return f"content is a {name}, and write_file writes text: pass a str (e.g. str(value))"
