"""The active program of each profile: what ``%%deepagent`` runs with in this kernel.

A profile starts as its packaged prompt file. Two things can change it, and
`%deepagent_prompt --reset` undoes both:

- **Hand-tuning** replaces the profile's text (`profiles.set_profile_text`), so
  every agent built from the profile, sub-agents included, uses the new text.
- **A tuned program** (from an optimiser, or loaded from JSON) is the DSPy state
  of a root `DeepAgent`: each predictor's instructions and demos. `apply` loads it
  into every root agent built from the profile.

Editing the text while a tuned program is active keeps the program's demos and
takes the instructions from the new text.
"""

from __future__ import annotations

import contextvars
import copy
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from ..core.loop.profiles import load_profile, packaged_text, reset_profile, set_profile_text

if TYPE_CHECKING:
    from ..core.loop.agent import DeepAgent


@dataclass
class TunedProgram:
    state: dict[str, Any]  # DeepAgent.dump_state(): per predictor, its signature and demos
    source: str  # how it came to be: "optimized with gepa", "loaded from tuned.json"
    own_instructions: bool = True  # False after a hand edit: instructions come from the profile text

    @property
    def demos(self) -> int:
        return sum(len(predictor.get("demos") or []) for predictor in self.state.values())


_tuned: dict[str, TunedProgram] = {}
_suspended: contextvars.ContextVar[bool] = contextvars.ContextVar("deepagent_untuned", default=False)


def tuned(profile: str) -> TunedProgram | None:
    return _tuned.get(profile)


def install(profile: str, agent: "DeepAgent", source: str) -> TunedProgram:
    """Make ``agent``'s instructions and demos the active program of ``profile``."""
    program = TunedProgram(agent.dump_state(), source)
    _tuned[profile] = program
    return program


def apply(agent: "DeepAgent") -> "DeepAgent":
    """Load the profile's tuned program into a freshly built root agent (sub-agents keep their profile text)."""
    program = _tuned.get(agent.profile)
    if program is None or agent.depth != 0 or _suspended.get():
        return agent
    state = copy.deepcopy(program.state)
    if not program.own_instructions:
        for name, predictor in agent.named_predictors():
            if name in state:
                state[name]["signature"]["instructions"] = predictor.signature.instructions
    agent.load_state(state)
    return agent


@contextmanager
def untuned() -> Iterator[None]:
    """Build agents from the profile text alone (the 'before' side of a comparison)."""
    token = _suspended.set(True)
    try:
        yield
    finally:
        _suspended.reset(token)


def set_instructions(profile: str, text: str) -> None:
    """Hand-tuning: ``text`` becomes the profile's text; a tuned program keeps only its demos."""
    set_profile_text(profile, text)
    program = _tuned.get(profile)
    if program is not None:
        program.own_instructions = False
        program.source += ", instructions edited by hand"


def reset(profile: str) -> None:
    """Back to the packaged prompt file: no edits, no tuned program."""
    packaged_text(profile)  # refuse unknown names
    reset_profile(profile)
    _tuned.pop(profile, None)


def drop(profile: str) -> None:
    """Forget ``profile``'s tuned program (a user's sub-agent type has no packaged file to go back to)."""
    _tuned.pop(profile, None)


def describe(profile: str) -> str:
    """One line: where the profile's active program comes from."""
    parts = []
    if load_profile(profile).is_modified:
        parts.append("text edited in this kernel")
    program = _tuned.get(profile)
    if program is not None:
        parts.append(program.source + (f", {program.demos} demos" if program.demos else ""))
    return "; ".join(parts) if parts else f"packaged (prompts/{profile}.md)"
