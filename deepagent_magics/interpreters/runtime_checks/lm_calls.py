"""LM calls the root agent's code makes itself, held to the run tree's spend caps like every other call.

The agent's steps, ``llm_query`` and the facade's predictors are admitted where they start
(`core.policy.spend`). The root agent's code can also call an LM object directly: ``lm("hi")``,
from a thread of its own (a ``ThreadPoolExecutor``), where DSPy's thread-local settings are not the
run's, so nothing would check or count the call. While a run with caps is live, `held` replaces
``dspy.BaseLM.__call__`` and ``acall`` (reference-counted, like `guards`): a call made by the
agent's code (`hook.which_run`: the step's thread or a thread its code started) that no admission
holds yet is admitted on its own, and counted on the run (its usage sink is put into DSPy's
settings for the call when the thread's settings lack one): a `calls.DIRECT` call through the pipeline,
whose ``spend admission`` and ``usage`` layers do that (`core.loop.pipeline`). Calls of the host and of the user's
code pass through untouched. An LM class that overrides ``__call__`` without calling
``BaseLM.__call__`` is not seen.
"""

from __future__ import annotations

from typing import Any

from dspy.clients.base_lm import BaseLM

from ...core.loop.pipeline import through
from ...core.model.calls import DIRECT, ModelCall
from ..guards import Patches
from .hook import which_run


def _patches(patches: Patches) -> list[tuple[Any, str, Any]]:
    call, acall_original = BaseLM.__dict__["__call__"], BaseLM.__dict__["acall"]

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not patches.active():
            return call(self, *args, **kwargs)
        direct = ModelCall(None, None, {}, self, False, DIRECT, which_run())
        return through(direct, lambda *a, **k: call(self, *a, **k))(*args, **kwargs)

    async def acall(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not patches.active():
            return await acall_original(self, *args, **kwargs)
        direct = ModelCall(None, None, {}, self, True, DIRECT, which_run())
        return await through(direct, lambda *a, **k: acall_original(self, *a, **k))(*args, **kwargs)

    __call__.__wrapped__ = call  # type: ignore[attr-defined]
    acall.__wrapped__ = acall_original  # type: ignore[attr-defined]
    return [(BaseLM, "__call__", __call__), (BaseLM, "acall", acall)]


held = Patches(_patches)  # ``with held:`` while a run with spend caps is live
