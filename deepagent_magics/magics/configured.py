"""What the magics after ``%%deepagent`` share: the configured `DeepAgentMagics`, and the agent it would build."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

import dspy
from IPython.core.error import UsageError
from IPython.core.magic import Magics

from ..core.loop.agent import DeepAgent
from ..core.model.lm import NoLMError, resolve_lm
from ..core.loop.profiles import available_profiles
from ..errors import UserError


class _PreviewLM(dspy.BaseLM):
    """Stands in for the LM when the prompt is only shown: the prompt does not depend on the model."""

    def __init__(self):
        super().__init__(model="(no LM: prompt preview)")

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NoLMError("the prompt preview has no LM")


class AgentMagicsBase(Magics):
    """Reads the settings of ``%deepagent_config`` and builds agents exactly as ``%%deepagent`` does."""

    def _core(self) -> Any:
        core = self.shell.magics_manager.registry.get("DeepAgentMagics")
        if core is None:
            raise UsageError("the deepagent magics are not loaded: run %load_ext deepagent_magics")
        return core

    def _profile(self, name: str | None) -> str:
        profile = name or self._core().profile
        known = available_profiles() + list(getattr(self._core(), "agent_types", {}))  # packaged, then the user's types
        if profile not in known:
            raise UsageError(f"unknown profile {profile!r}; choose one of: {', '.join(known)}")
        return profile

    def _agent(self, profile: str, lm: str | None = None, *, need_lm: bool = True) -> DeepAgent:
        """The agent ``%%deepagent --profile profile`` would run (a UsageError when no LM is set and one is needed)."""
        core = self._core()
        args = Namespace(profile=profile, lm=lm)
        if not need_lm:
            try:
                resolve_lm(lm, core.lm, namespace=self.shell.user_ns)
            except UserError:  # no LM, or not one: the preview needs none
                args.lm = _PreviewLM()
        return core.build_agent(args)

    def _variable(self, name: str, flag: str) -> Any:
        if name not in self.shell.user_ns:
            raise UsageError(f"{flag} {name}: there is no notebook variable {name!r}; define it first")
        return self.shell.user_ns[name]
