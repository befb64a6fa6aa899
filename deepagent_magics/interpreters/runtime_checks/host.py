"""The root agent's runtime checks: which of its steps are watched, and how a question reaches the user.

`step_scope` is called by `ShellInterpreter` for each step of the agent's code. A step is watched
(registered with the audit hook, `hook`) when its run tree asks for approval (any policy but
``never``: the user's rules decide what is asked) or has spend caps (then the threads its code
starts are followed, so `lm_calls` can hold their LM calls to the caps); otherwise nothing is
registered and the hook is not even installed. A question goes to `core.policy.approval`'s
``review_action``, like a block's: the same policy, the same person, recorded on the run. While
the user thinks, the step's time limit is paused as for a tool (``away``). Once the run has ended,
a thread its code left running is asked nothing more (`hook` stops treating it as the agent's).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable

from ...core.policy import approval, spend
from ...core.run.stopping import StopRun
from ..kernel_side import exec_step
from . import hook

_install, _scope, _STEP_CODE = hook.install, hook.scope, exec_step.__code__  # as they were at import


def install(host_codes: tuple = ()) -> None:
    """The hook, once per process (it cannot be taken out again: it costs the user's code a set lookup
    per audit event from then on)."""
    _install(_STEP_CODE, host_codes)


def step_scope(run: Any, code: str, away: Callable[[], contextlib.AbstractContextManager],
               host_codes: tuple = ()) -> dict | None:
    """The `hook.scope` of a root step running ``code`` for ``run`` (None: nothing to watch)."""
    approver = approval.checking(run)
    budget = spend.budget_of(run)
    if approver is None and (budget is None or not budget.capped):
        return None
    install(host_codes)
    if approver is None:
        return _scope(run=run)  # followed for the spend caps only: nothing is asked
    return _scope(ask=_asker(run, code, away), workspace=approver.workspace, rules=approver.rules,
                  approved=approval.approved_rules(run), run=run)


def _asker(run: Any, code: str, away: Callable[[], contextlib.AbstractContextManager]) -> Callable[[dict], Any]:
    def ask(action: dict) -> Any:
        if run.ended_at is not None:
            return "Not allowed: the run that started this code has ended, so no one is asked."
        try:
            with away():
                return approval.review_action(run, action["rule"], action["action"], code)
        except StopRun as stop:
            return StopRun(str(stop))  # raised in the agent's code; the next step does not start

    return ask
