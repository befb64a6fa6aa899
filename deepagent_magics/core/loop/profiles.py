"""Agent profiles: the prompt files in ``prompts/`` and the instructions built from them.

A profile is one Markdown file. Its text is the agent's instructions, except for
three marked sections of which only one is used, chosen by the agent's depth in
the delegation tree::

    <!-- depth: root -->     ... guidance for the agent the user talks to
    <!-- depth: sub -->      ... guidance for a sub-agent that may delegate further
    <!-- depth: deepest -->  ... guidance for a sub-agent at the depth limit
    <!-- end depth -->

Hand-tuning (`%%deepagent_prompt`) replaces a profile's text for this process;
`reset_profile` restores the packaged file.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import UserError

PROMPTS_DIR = Path(__file__).parent / "prompts"
PROFILE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a profile is a name, never a path
_SECTION = re.compile(r"<!-- depth: (root|sub|deepest) -->(.*?)(?=<!-- depth: |<!-- end depth -->)", re.S)
_SECTIONS_BLOCK = re.compile(r"<!-- depth: .*<!-- end depth -->\n?", re.S)
_overrides: dict[str, str] = {}


class UnknownProfile(UserError, ValueError):
    pass


@dataclass(frozen=True)
class Profile:
    name: str
    text: str

    def instructions(self, depth: int = 0, max_depth: int = 2) -> str:
        """The profile's text with the one depth section that applies."""
        sections = {level: body.strip() for level, body in _SECTION.findall(self.text)}
        level = "root" if depth == 0 else ("deepest" if depth >= max_depth else "sub")
        chosen = sections.get(level, "")
        if not sections:
            return self.text.strip()
        return _SECTIONS_BLOCK.sub(chosen + "\n\n" if chosen else "", self.text).strip()

    @property
    def packaged_text(self) -> str:
        return packaged_text(self.name)

    @property
    def is_modified(self) -> bool:
        return self.text != self.packaged_text


def available_profiles() -> list[str]:
    return sorted(path.stem for path in PROMPTS_DIR.glob("*.md"))


def check_name(name: object) -> str:
    """``name`` if it is a profile name (letters, digits, ``_`` and ``-``); else `UnknownProfile`."""
    if not isinstance(name, str) or not PROFILE_NAME.fullmatch(name):
        raise UnknownProfile(f"{name!r} is not a profile name (letters, digits, '_' and '-'); "
                             f"choose one of: {', '.join(available_profiles())}")
    return name


def packaged_text(name: str) -> str:
    path = PROMPTS_DIR / f"{check_name(name)}.md"
    if not path.is_file():
        raise UnknownProfile(f"unknown profile {name!r}; choose one of: {', '.join(available_profiles())}")
    return path.read_text(encoding="utf-8")


def load_profile(name: str = "default") -> Profile:
    check_name(name)
    if name in _overrides:
        return Profile(name, _overrides[name])
    return Profile(name, packaged_text(name))


def set_profile_text(name: str, text: str) -> None:
    """Use ``text`` as profile ``name``'s instructions for this process (hand-tuning)."""
    packaged_text(name)  # refuse unknown names
    _overrides[name] = text


def reset_profile(name: str) -> None:
    _overrides.pop(name, None)


def instructions_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
