"""``{name}`` in a cell: replaced by the notebook's value of ``name`` (``{{`` and ``}}`` are literal braces).

Only names the user defined expand; a name an agent run made is left as written, and the cell says
which it expanded and which it left (`expansion_line`). A name that is not defined, or whose ``str()``
fails, is one `UsageError` line; a long value is cut at `MAX_INTERPOLATED_CHARS`.
"""

from __future__ import annotations

import re
from typing import Any

from IPython.core.error import UsageError

from ..render import bounded_str
from .flags import one_line

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
MAX_INTERPOLATED_CHARS = 10_000


def interpolate(text: str, namespace: dict[str, Any]) -> str:
    """Replace ``{name}`` with the notebook value of ``name``; ``{{`` and ``}}`` are literal braces."""
    return interpolate_task(text, namespace)[0]


def interpolate_task(text: str, namespace: dict[str, Any], agent_names: Any = ()) -> tuple[str, list[str], list[str]]:
    """``text`` with each ``{name}`` of a variable the user defined replaced by its value; a name an agent
    run made (``agent_names``) is left as written. Returns (text, the names expanded, the names left)."""
    made = set(agent_names)
    expanded: list[str] = []
    kept: list[str] = []

    def substitute(match: re.Match) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        name = match.group(1)
        if name in made and name in namespace:
            kept.append(name)
            return token
        if name not in namespace:
            raise UsageError(f"{{{name}}} in the cell is not a notebook variable; define it or use --no-interpolate")
        expanded.append(name)
        try:
            value = bounded_str(namespace[name], MAX_INTERPOLATED_CHARS)
        except Exception as exc:
            raise UsageError(f"{{{name}}}: str() of the {type(namespace[name]).__name__} failed "
                             f"({type(exc).__name__}: {one_line(exc, 120)}); pass a string or use --no-interpolate"
                             ) from None
        if len(value) > MAX_INTERPOLATED_CHARS:
            value = value[:MAX_INTERPOLATED_CHARS] + f"... (truncated; the full value is the variable `{name}`)"
        return value

    return _PLACEHOLDER.sub(substitute, text), expanded, kept


def expansion_line(namespace: dict[str, Any], expanded: list[str], kept: list[str]) -> str | None:
    """The one line a cell prints about its ``{name}``s: what it expanded, and what it left as written."""
    if not expanded and not kept:
        return None
    parts = []
    if expanded:
        shown = [f"{{{name}}} ({type(namespace.get(name)).__name__})" for name in dict.fromkeys(expanded)]
        parts.append("expanded " + ", ".join(shown[:8]) + (f" and {len(shown) - 8} more" if len(shown) > 8 else ""))
    if kept:
        names = ", ".join(f"{{{name}}}" for name in dict.fromkeys(kept))
        parts.append(f"left {names} as written (an agent run made it, not you)")
    return "deepagent: " + "; ".join(parts)
