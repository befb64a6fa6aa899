"""A notebook value as text, bounded: ``{big}`` in a cell must not build a 200 MB ``str()`` to keep 10 KB.

Builtin containers (list, tuple, dict, set, frozenset, deque) are rendered the way ``str()``
renders them, item by item, stopping as soon as the budget is spent ("... (N more)"); a
string is cut before it is copied. Other objects render through their own ``__str__`` (NumPy
and pandas already summarise large ones), as elements through their ``__repr__``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

MAX_DEPTH = 8
CONTAINERS = (list, tuple, dict, set, frozenset, deque)


def bounded_str(value: Any, budget: int) -> str:
    """``str(value)``, or its first ``budget``-odd characters for a large builtin container or string."""
    if type(value) is str:
        return value[: budget + 1]
    if type(value) in CONTAINERS:
        return _container(value, budget, 0)
    text = str(value)
    if not isinstance(text, str):
        raise TypeError(f"__str__ returned {type(text).__name__}, not str")
    return text


def _item(value: Any, budget: int, depth: int) -> str:
    if type(value) is str:
        return repr(value[: budget + 1])
    if type(value) in CONTAINERS:
        return _container(value, budget, depth + 1)
    return repr(value)


def _container(value: Any, budget: int, depth: int) -> str:
    kind = type(value)
    if depth > MAX_DEPTH:
        return "..."
    if not value:
        return {list: "[]", tuple: "()", dict: "{}", set: "set()", frozenset: "frozenset()", deque: "deque([])"}[kind]
    opening, closing = {list: ("[", "]"), tuple: ("(", ")"), dict: ("{", "}"), set: ("{", "}"),
                        frozenset: ("frozenset({", "})"), deque: ("deque([", "])")}[kind]
    parts: list[str] = []
    used = len(opening) + len(closing)
    items = value.items() if kind is dict else value
    for position, item in enumerate(items):
        if used >= budget:
            parts.append(f"... ({len(value) - position} more)")
            break
        if kind is dict:
            text = f"{_item(item[0], budget - used, depth)}: {_item(item[1], budget - used, depth)}"
        else:
            text = _item(item, budget - used, depth)
        parts.append(text)
        used += len(text) + 2
    if kind is tuple and len(value) == 1:
        return f"({parts[0]},)"
    return opening + ", ".join(parts) + closing
