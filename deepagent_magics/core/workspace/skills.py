"""Skills: folders with a ``SKILL.md`` (the Agent Skills layout), found in the workspace and user-wide.

A skill is a folder whose ``SKILL.md`` starts with YAML front matter naming it and saying when to
use it, followed by its instructions; the folder may hold any files those need::

    skills/
      csv-cleanup/
        SKILL.md        ---
                        name: csv-cleanup
                        description: Clean messy CSV exports (dates, thousands separators).
                        ---
                        # How to clean ...
        normalise.py

Skills are found in ``<workspace>/skills/`` and in a user-wide folder (`user_dir`: the agent's
``skills_dir``, else ``DEEPAGENT_SKILLS_DIR``, else ``~/.deepagent/skills``); a workspace skill
wins over a user-wide one of the same name. The agent's prompt lists each skill's name and
description only, bounded, and the agent reads a skill on demand (both are the skills capability's,
``tools/skills.py``). A folder that is not a well-formed skill is skipped, with one line saying
why (`find_skills` returns them). The front matter is read with a small YAML subset parser
(`front_matter`): ``key: value`` lines, quoted values, ``|`` and ``>`` blocks, and nested blocks
(kept as text); no dependency.

The agent's tools over skills are tools/skills.py; the user's magic is magics/skills.py.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import DeepAgentError

SKILL_FILE = "SKILL.md"
WORKSPACE_FOLDER = "skills"  # <workspace>/skills/: only the user and root runs write here (tools/files.py)
SKILL_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_FOLDERS = 500  # scanned per root: a huge folder is not a skill library
MAX_HEAD = 64 * 1024  # bytes of SKILL.md read for its front matter
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)\s*:(?:\s+(.*)|\s*)$")


class SkillError(DeepAgentError, ValueError):
    """A folder that is not a well-formed skill (the message is one line)."""


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    folder: Path
    where: str  # "workspace" or "user"


def user_dir(configured: str | os.PathLike | None = None) -> Path:
    """The user-wide skills folder: ``configured``, else ``DEEPAGENT_SKILLS_DIR``, else ``~/.deepagent/skills``."""
    value = configured or os.environ.get("DEEPAGENT_SKILLS_DIR") or "~/.deepagent/skills"
    return Path(os.path.expanduser(str(value)))


def roots(workspace: str | os.PathLike, configured: str | os.PathLike | None = None) -> list[tuple[str, Path]]:
    return [("workspace", Path(workspace) / WORKSPACE_FOLDER), ("user", user_dir(configured))]


def find_skills(workspace: str | os.PathLike, configured: str | os.PathLike | None = None
                ) -> tuple[list[Skill], list[str]]:
    """Every skill (sorted by name, workspace first on a clash) and one line per folder skipped."""
    found: dict[str, Skill] = {}
    problems: list[str] = []
    for where, root in roots(workspace, configured):
        try:
            if not root.is_dir():
                continue
            entries = sorted(os.scandir(root), key=lambda entry: entry.name)[:MAX_FOLDERS]
        except OSError as exc:
            problems.append(f"{root}: cannot list the folder ({exc.strerror or exc})")
            continue
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=True):
                continue
            try:
                skill = load_skill(Path(entry.path), where)
            except SkillError as exc:
                problems.append(f"{where} skill {entry.name}: {exc}")
                continue
            found.setdefault(skill.name, skill)
    return sorted(found.values(), key=lambda skill: skill.name), problems


def load_skill(folder: Path, where: str) -> Skill:
    """The skill in ``folder``; `SkillError` (one line) when it is not a well-formed one."""
    if folder.is_symlink():
        raise SkillError("the folder is a symbolic link; put the skill itself there")
    path = folder / SKILL_FILE
    if path.is_symlink() or not path.is_file():
        raise SkillError(f"no {SKILL_FILE} in {folder}")
    try:
        with open(path, "rb") as handle:  # the front matter only: stop at its closing line
            data = handle.read(4096)
            while b"\n---" not in data[3:] and len(data) < MAX_HEAD:
                more = handle.read(4096)
                if not more:
                    break
                data += more
            head = data[:MAX_HEAD].decode("utf-8", errors="strict") if b"\n---" not in data[3:] else \
                data[: data.index(b"\n---", 3) + 4].decode("utf-8")
    except UnicodeDecodeError:
        raise SkillError(f"{SKILL_FILE} is not UTF-8 text") from None
    except OSError as exc:
        raise SkillError(f"cannot read {SKILL_FILE} ({exc.strerror or exc})") from None
    fields = front_matter(head)
    name, description = fields.get("name"), fields.get("description")
    if not isinstance(name, str) or not name.strip():
        raise SkillError(f"{SKILL_FILE} front matter has no name")
    name = name.strip()
    if len(name) > MAX_NAME or not SKILL_NAME.fullmatch(name):
        raise SkillError(f"name {name[:80]!r} is not lowercase letters, digits and single hyphens (at most {MAX_NAME})")
    if name != folder.name:
        raise SkillError(f"name {name!r} is not the folder's name {folder.name!r}")
    description = " ".join(str(description or "").split())
    if not description:
        raise SkillError(f"{SKILL_FILE} front matter has no description (say what the skill does and when to use it)")
    if len(description) > MAX_DESCRIPTION:
        raise SkillError(f"the description is {len(description)} characters; at most {MAX_DESCRIPTION}")
    return Skill(name, description, folder, where)


def front_matter(text: str) -> dict[str, str]:
    """The top-level ``key: value`` fields of the YAML front matter at the start of ``text``."""
    text = text.lstrip("\ufeff")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise SkillError(f"{SKILL_FILE} does not start with '---' front matter")
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() in ("---", "..."))
    except StopIteration:
        raise SkillError(f"{SKILL_FILE} front matter is not closed with '---'") from None
    fields: dict[str, str] = {}
    body = lines[1:end]
    i = 0
    while i < len(body):
        line = body[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t":
            raise SkillError(f"front matter line {i + 1} is indented where a 'key: value' was expected")
        match = _KEY.match(line.rstrip())
        if match is None:
            raise SkillError(f"front matter line {i + 1} is not 'key: value': {line.strip()[:60]!r}")
        key, value = match.group(1), (match.group(2) or "").strip()
        block = []
        while i < len(body) and (not body[i].strip() or body[i][0] in " \t"):
            block.append(body[i].strip())
            i += 1
        if key in fields:
            raise SkillError(f"front matter gives {key!r} twice")
        fields[key] = _value(value, block, key)
    return fields


def _value(value: str, block: list[str], key: str) -> str:
    if value[:1] in ("|", ">"):
        joiner = "\n" if value[0] == "|" else " "
        return joiner.join(block).strip()
    if value[:1] in ("'", '"'):
        quote = value[0]
        if len(value) < 2 or not value.endswith(quote):
            raise SkillError(f"front matter {key!r}: the quoted value is not closed")
        inner = value[1:-1]
        return inner.replace("''", "'") if quote == "'" else inner.replace('\\"', '"')
    return " ".join([value] + [line for line in block if line]).strip() if value or not block else "\n".join(block)
