"""What the magics after ``%%deepagent`` share: the configured `DeepAgentMagics`, and the agent it would build.

Like every magic's module, it imports the agent (and DSPy) when a magic first needs it, not when the
extension loads (tests/test_start_fast.py).
"""

from __future__ import annotations

from argparse import Namespace
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics

from ..core.loop.profiles import available_profiles
from ..errors import UserError

if TYPE_CHECKING:
    from ..core.loop.agent import DeepAgent


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
        from ..core.model.lm import PreviewLM, resolve_lm

        core = self._core()
        args = Namespace(profile=profile, lm=lm)
        if not need_lm:
            try:
                resolve_lm(lm, core.lm, namespace=self.shell.user_ns)
            except UserError:  # no LM, or not one: the preview needs none
                args.lm = PreviewLM()
        return core.build_agent(args)

    def _variable(self, name: str, flag: str) -> Any:
        if name not in self.shell.user_ns:
            raise UsageError(f"{flag} {name}: there is no notebook variable {name!r}; define it first")
        return self.shell.user_ns[name]
