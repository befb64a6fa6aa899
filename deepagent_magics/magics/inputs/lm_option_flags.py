"""``%deepagent_config --lm-option KEY=VALUE``: the values over the options set before, and how the settings list
shows them (a key or token never printed). Each value is read by `core.model.lm_options`."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from ...core.model.lm_options import LMOptionError, parse_lm_options


def lm_option_values(values: list[str], current: dict[str, Any]) -> dict[str, Any]:
    """``%deepagent_config --lm-option KEY=VALUE`` (repeatable) over the options set before (a later value for a
    key wins); ``--lm-option off`` clears them; a malformed one is one `UsageError` line and changes nothing."""
    if [value.strip() for value in values] == ["off"]:
        return {}
    try:
        return {**current, **parse_lm_options(values)}
    except LMOptionError as exc:
        raise UsageError(str(exc)) from None


def shown_lm_options(options: dict[str, Any]) -> str:
    """``timeout=600, max_tokens=4000`` as the settings list prints them; a key or token never printed."""
    if not options:
        return "(none)"
    return ", ".join(f"{key}={'(set)' if 'key' in key.lower() or 'token' in key.lower() else repr(value)}"
                     for key, value in options.items())
