"""The skill tools: ``list_skills`` and ``read_skill``, and the skills listed in each run's context.

Skills (`core.workspace.skills`) live in ``<workspace>/skills/`` and in a user-wide folder outside the
workspace, which the workspace tools cannot reach. ``read_skill(name, file)`` reads a skill's
``SKILL.md`` or any file in its folder, read-only and confined to that folder exactly as the
workspace tools are confined to the workspace (a `Workspace` rooted at the skill folder: no
``..``, no absolute path, no symlink out, no race). Works the same from a sub-agent's kernel
(the tool runs on the host).

Finding and reading skills is core/workspace/skills.py; the user's magic is magics/skills.py.
"""

from __future__ import annotations

from typing import Any

from ..core.run import session as _session
from ..core.workspace.skills import SKILL_FILE, find_skills, listing
from ..core.workspace.workspace import Workspace, WorkspaceError
from .tool_call import tool


def _skills() -> list:
    session = _session.current()
    return find_skills(session.workspace.root, getattr(session.agent, "skills_dir", None))[0]


@tool
def list_skills() -> list[dict]:
    """Skills: instructions for kinds of work.

    A list of {"name", "description", "where"}.

    ``where`` is "workspace" or "user". Read one with read_skill(name)."""
    return [{"name": skill.name, "description": skill.description, "where": skill.where} for skill in _skills()]


@tool
def read_skill(name: str, file: str = SKILL_FILE, offset: int = 0, limit: int = 2000) -> str:
    """Read one.

    Its SKILL.md, or another file of its folder, as numbered lines.

    ``file`` is a path inside the skill's folder (e.g. "scripts/clean.py"); a folder path lists its
    files. Read-only; errors start with "Error:"."""
    skills = {skill.name: skill for skill in _skills()}
    skill = skills.get(str(name))
    if skill is None:
        known = ", ".join(skills) or "none"
        raise ValueError(f"no skill named {str(name)[:80]!r}; the skills are: {known}")
    folder = Workspace(skill.folder)
    shown = f"read_skill({skill.name!r}, "
    try:
        path = file if isinstance(file, str) and file.strip() else "."
        if folder.resolve(path).is_dir():
            return _in_skill(folder.ls(path), skill.name)
        return _in_skill(folder.read_file(path, offset, limit), skill.name).replace("read_file(", shown)
    except WorkspaceError as exc:
        raise ValueError(_in_skill(str(exc).removeprefix("Error: "), skill.name)) from None


def _in_skill(text: str, name: str) -> str:
    return text.replace("outside the workspace", f"outside the skill {name!r}").replace(
        "relative to the workspace", "relative to the skill's folder").replace(
        "a file in the workspace", f"a file of the skill {name!r}")


def skill_tools() -> list:
    return [list_skills, read_skill]


def offer_skills(agent: Any, root: Any) -> str:
    """For each run's prompt: the skills' names and whole descriptions, the most relevant to the run's task first,
    within a budget (`core.workspace.skills.listing`)."""
    session = _session.active()  # the run being set up (none when %deepagent_prompt shows the prompt)
    task = str(session.run.task or "") if session is not None else ""
    return listing(find_skills(root, getattr(agent, "skills_dir", None))[0], task)
