"""The user in control: approval settings, the cell's summary of what a run changed, ``%deepagent_why``
and ``%deepagent_undo``.

``--approve`` takes a policy name or the name of a notebook function ``(proposal) -> decision``
(`core.approval`); ``--approve-rules`` the risk rules (`core.risk`). A bad one is one line.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from ..core.approval import POLICIES, check_policy
from ..core.risk import UnknownRule, parse_rules


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
    """Check ``--approve`` and ``--approve-rules`` before any setting sticks (a UsageError if bad)."""
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


def summarize(run: Any) -> None:
    """The cell's summary after a run: approvals refused or a stop, and what the run changed."""
    refused = [entry for entry in run_tree_approvals(run) if entry["decision"] == "refused"]
    if run.status == "stopped":
        print(f"deepagent: the run was {run.error or 'stopped'}; its steps and variables are kept "
              "(_deepagent_run)")
    if refused:
        print(f"deepagent: {len(refused)} block(s) were not run without your approval "
              "(_deepagent_run.approvals says which and why)")


def run_tree_approvals(run: Any) -> list[dict[str, Any]]:
    """Every approval decision of ``run`` and its sub-agents, oldest first."""
    entries = [entry for each in run.walk() for entry in getattr(each, "approvals", [])]
    return sorted(entries, key=lambda entry: entry["time"])
