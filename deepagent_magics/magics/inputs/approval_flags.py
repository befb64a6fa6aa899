"""``--approve`` and ``--approve-rules``: a policy name or the name of a notebook function ``(proposal) -> decision``
(`core.policy.approval`), and the risk rules (`core.policy.risk`), checked before any setting sticks; a bad one
is one line."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from ...core.policy.approval import POLICIES, check_policy
from ...core.policy.risk import UnknownRule, parse_rules


def resolve_policy(value: Any, namespace: dict[str, Any]) -> Any:
    """``value`` as a policy: a policy name, a callable, or a notebook variable holding a callable."""
    if callable(value) or value in POLICIES:
        return value
    text = str(value).strip()
    if text in POLICIES:
        return text
    if text.isidentifier() and text in namespace:
        candidate = namespace[text]
        if callable(candidate):
            return candidate
        raise UsageError(f"--approve {text}: the notebook variable {text!r} is a {type(candidate).__name__}, "
                         "not a function (proposal) -> decision")
    raise UsageError(f"unknown approval policy {text!r}; use never, risky, always, or the name of a notebook "
                     "function (proposal) -> decision")


def check_approval(updates: dict[str, Any], namespace: dict[str, Any]) -> None:
    """Check ``--approve`` and ``--approve-rules`` before any setting sticks (a UsageError if bad; ``--undo-limit``'s
    bounds: ``settings.py``)."""
    if "approve" in updates:
        check_policy(resolve_policy(updates["approve"], namespace))
        updates["approve"] = str(updates["approve"]).strip()
    if "approve_rules" in updates:
        check_rules(updates["approve_rules"])


def check_rules(value: str | None) -> None:
    try:
        parse_rules(value or None)
    except UnknownRule as exc:
        raise UsageError(str(exc)) from None
