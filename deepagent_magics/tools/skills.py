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

import re
from typing import Any

from ..core.loop.capability import Capability, ToolLine
from ..core.run import session as _session
from ..core.workspace.skills import SKILL_FILE, Skill, find_skills
from ..core.workspace.workspace import Workspace, WorkspaceError
from .tool_call import tool

LISTED = 100  # skills named in the prompt; past that, one line says how many more list_skills() lists
LISTED_CHARS = 2400  # of whole descriptions in the prompt; past it, the less relevant skills are named only
COMMON_WORDS = {"the", "and", "for", "with", "from", "that", "this", "use", "used", "when", "what", "which", "are",
                "its", "into", "your", "you", "all", "any", "each", "one", "how", "asked", "about", "not"}


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
    try:
        path = file if isinstance(file, str) and file.strip() else "."
        if folder.resolve(path).is_dir():
            return _in_skill(folder.ls(path), skill.name)
        return _in_skill(folder.read_file(path, offset, limit, read_on=f"read_skill({skill.name!r}, "), skill.name)
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
    within a budget (`listing`)."""
    session = _session.active()  # the run being set up (none when %deepagent_prompt shows the prompt)
    task = str(session.run.task or "") if session is not None else ""
    return listing(find_skills(root, getattr(agent, "skills_dir", None))[0], task)


def listing(skills: list[Skill], task: str = "") -> str:
    """What the agent's prompt gets: each skill's whole description (never cut) while `LISTED_CHARS` lasts, the
    skills most relevant to ``task`` first (`ranked`); past it the rest by name, then how many more there are."""
    if not skills:
        return ""
    lines = ["## Skills (before work a skill covers: `print(read_skill(\"NAME\"))`)"]
    named, used = [], 0
    for skill in ranked(skills, task)[:LISTED]:
        line = f"- {skill.name}: {' '.join(skill.description.split())}"
        if used + len(line) <= LISTED_CHARS and not named:
            lines.append(line)
            used += len(line) + 1
        else:
            named.append(skill.name)
    if named:
        lines.append(f"- also (`list_skills()` describes them): {', '.join(named)}")
    if len(skills) > LISTED:
        lines.append(f"- ... {len(skills) - LISTED} more: `list_skills()` lists them all")
    return "\n".join(lines)


def ranked(skills: list[Skill], task: str) -> list[Skill]:
    """The skills, those sharing the most words with ``task`` (in their name or description) first; ties
    keep their order."""
    words = {word for word in re.findall(r"[a-z0-9]+", task.lower()) if len(word) > 2} - COMMON_WORDS
    if not words:
        return list(skills)

    def shared(skill: Skill) -> int:
        return len(words & set(re.findall(r"[a-z0-9]+", f"{skill.name} {skill.description}".lower())))

    return sorted(skills, key=shared, reverse=True)


SKILLS = Capability("skills", tools=[list_skills, read_skill], instructions=offer_skills,
                    # said with the skills a run has (`listing`), not in the tool list
                    lines={"list_skills": ToolLine(order=90, brief=True, listed=False),
                           "read_skill": ToolLine(order=90, beside="list_skills", brief=True, listed=False)})
