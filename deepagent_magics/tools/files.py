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

from typing import Any, Callable

from ..core.run import session as _session
from ..core.workspace.skills import WORKSPACE_FOLDER
from ..core.workspace.workspace import WorkspaceError
from .tool_call import tool


def _should_stop(session: Any) -> Callable[[], bool] | None:
    cancelled = getattr(session, "cancelled", None)
    return cancelled.is_set if cancelled is not None else None


@tool
def ls(path: str = ".") -> str:
    """List a workspace directory: one entry per line, directories end with '/', files show their size."""
    session = _session.current()
    return session.workspace.ls(path, should_stop=_should_stop(session))


@tool
def read_file(path: str, offset: int = 0, limit: int = 2000) -> str:
    """Read a workspace text file as numbered lines, starting after line `offset`, at most `limit` lines."""
    return _session.current().workspace.read_file(path, offset, limit)


def _writable(session: Any, path: str) -> None:
    """Refuse a sub-agent's write into the workspace's skills folder (unless the user allowed it)."""
    if session.run.depth == 0 or getattr(session.agent, "subagent_skills", False):
        return
    parts = session.workspace.resolve(path).relative_to(session.workspace.root).parts
    if parts and parts[0] == WORKSPACE_FOLDER:
        raise WorkspaceError(f"Error: {path!r} is in {WORKSPACE_FOLDER}/, which only the user and the root agent "
                             "write; return what you learned in your result instead")


@tool
def write_file(path: str, content: str) -> str:
    """Create or overwrite a workspace file with `content` (atomically; parent folders are created)."""
    session = _session.current()
    _writable(session, path)
    return session.workspace.write_file(path, content)


@tool
def edit_file(path: str, old: str, new: str, replace_all: bool = False) -> str:
    """Replace the exact text `old` with `new` in a workspace file. `old` must occur exactly once unless replace_all=True."""
    session = _session.current()
    _writable(session, path)
    return session.workspace.edit_file(path, old, new, replace_all)


@tool
def glob(pattern: str) -> list[str]:
    """Workspace paths matching a glob pattern such as '**/*.md' (sorted, relative to the workspace)."""
    session = _session.current()
    return session.workspace.glob(pattern, should_stop=_should_stop(session))


@tool
def grep(pattern: str, path: str = ".", glob: str | None = None) -> str:
    """Search workspace files for a regular expression (RE2 syntax: no backreferences or lookarounds); one 'file:line: text' per match (capped). `glob` filters file names, e.g. '*.py'."""
    session = _session.current()
    return session.workspace.grep(pattern, path, glob, should_stop=_should_stop(session))


WORKSPACE_TOOLS: list[Callable[..., Any]] = [ls, read_file, write_file, edit_file, glob, grep]
