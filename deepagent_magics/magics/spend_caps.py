"""The spend-cap flags of the magics (``--max-cost``, ``--max-tokens``, ``--max-time``): read and checked.

A cap comes as the flag's text (or a traitlet's number); `core.policy.spend.check_cap` decides what is a
cap, and a bad one is one `UsageError` line before anything runs or a setting sticks.
``%deepagent_config --max-cost off`` removes a configured cap.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from ..core.policy.spend import CAPS, check_cap

OFF = ("off", "none")


def checked(settings: dict[str, Any], unset_with_off: bool = False) -> dict[str, Any]:
    """The caps among ``settings``, each checked (``off`` is None when ``unset_with_off``)."""
    caps = {}
    for name in CAPS:
        if name not in settings:
            continue
        value = settings[name]
        if unset_with_off and isinstance(value, str) and value.strip().lower() in OFF:
            caps[name] = None
            continue
        try:
            caps[name] = check_cap(name, value)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    return caps
