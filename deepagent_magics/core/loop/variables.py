"""A compact summary of the notebook's variables, for the agent's prompt.

The agent should know what the notebook holds (``sales: DataFrame (1200, 5)
columns region:object, q3:float64 ...``) without being sent the data. The summary
is bounded in size and cheap to compute whatever a variable holds: it never calls
``str()`` or ``repr()`` on a large or unknown object, never copies, and only reads
attributes that are O(1) on common containers (``len``, ``shape``, ``dtype``).
"""

from __future__ import annotations

import types
from typing import Any, Iterable, Mapping

MAX_VARIABLES = 60
MAX_CHARS = 6000
PREVIEW_CHARS = 80
HIDDEN = {"In", "Out", "exit", "quit", "get_ipython", "open"}
_SCALARS = (bool, int, float, complex, type(None))


def summarize_namespace(
    namespace: Mapping[str, Any],
    *,
    exclude: Iterable[str] = (),
    max_variables: int = MAX_VARIABLES,
    max_chars: int = MAX_CHARS,
) -> str:
    """One line per user variable, then the modules and callables by name only."""
    excluded = set(exclude) | HIDDEN
    lines: list[str] = []
    modules: list[str] = []
    callables: list[str] = []
    skipped = 0
    used = 0
    for name, value in list(namespace.items()):
        if name.startswith("_") or name in excluded:
            continue
        if isinstance(value, types.ModuleType):
            modules.append(name if value.__name__ == name else f"{name}={value.__name__}")
            continue
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type, types.MethodType)):
            callables.append(name)
            continue
        if len(lines) >= max_variables or used >= max_chars:
            skipped += 1
            continue
        line = f"- {name}: {describe(value)}"
        lines.append(line)
        used += len(line) + 1
    if skipped:
        lines.append(f"- ... and {skipped} more variables (list them with code if you need them)")
    if callables:
        lines.append("Functions and classes: " + _join_capped(callables, 600))
    if modules:
        lines.append("Modules: " + _join_capped(modules, 400))
    if not lines:
        return "(the notebook has no user variables yet)"
    return "\n".join(lines)


def describe(value: Any) -> str:
    """``type``, size, and a short preview of ``value``, computed in O(1)-ish time."""
    kind = _type_name(value)
    if isinstance(value, _SCALARS):
        return f"{kind} = {_clip(repr(value))}"
    if isinstance(value, str):
        return f"str, {len(value):,} chars = {_clip(repr(value[:PREVIEW_CHARS + 2]))}"
    if isinstance(value, (bytes, bytearray)):
        return f"{kind}, {len(value):,} bytes"
    frame = _dataframe_like(value, kind)
    if frame:
        return frame
    shape = _shape(value)
    if shape is not None:
        dtype = getattr(value, "dtype", None)
        dtype_text = f", dtype {dtype}" if dtype is not None and _cheap_str(dtype) else ""
        return f"{kind}, shape {shape}{dtype_text}"
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return f"{kind}, {len(value):,} items = {_preview(value)}"
    if hasattr(type(value), "__len__") and type(value).__module__ in ("collections", "builtins"):
        return f"{kind}, {len(value):,} items"
    return kind


def _type_name(value: Any) -> str:
    cls = type(value)
    module = cls.__module__
    if module in ("builtins", "__main__"):
        return cls.__qualname__
    return f"{module.split('.')[0]}.{cls.__qualname__}"


def _shape(value: Any) -> tuple | None:
    shape = getattr(type(value), "shape", None)
    if shape is None:
        return None
    try:
        shape = value.shape
    except Exception:
        return None
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        return shape
    return None


def _dataframe_like(value: Any, kind: str) -> str | None:
    """pandas/polars-style tables: shape and the first column names with dtypes."""
    columns = getattr(type(value), "columns", None)
    dtypes = getattr(type(value), "dtypes", None)
    shape = _shape(value)
    if columns is None or dtypes is None or shape is None or len(shape) != 2:
        return None
    try:
        names = list(value.columns[:12])
        kinds = value.dtypes
        pairs = []
        for position, name in enumerate(names):
            dtype = kinds.iloc[position] if hasattr(kinds, "iloc") else kinds[position]
            pairs.append(f"{name}:{dtype}")
    except Exception:
        return f"{kind}, shape {shape}"
    more = f", ... ({shape[1] - len(names)} more)" if shape[1] > len(names) else ""
    return f"{kind}, shape {shape}, columns " + _clip(", ".join(map(str, pairs)), 300) + more


def _preview(value: Any, depth: int = 0) -> str:
    """A bounded repr: the first few items of containers, type names for everything else."""
    if isinstance(value, _SCALARS):
        return _clip(repr(value), 30)
    if isinstance(value, str):
        return _clip(repr(value[:32]), 34)
    if depth >= 2:
        return "..." if isinstance(value, (list, tuple, set, frozenset, dict)) else _type_name(value)
    if isinstance(value, dict):
        items = []
        for position, (key, item) in enumerate(value.items()):
            if position == 4:
                items.append("...")
                break
            items.append(f"{_preview(key, depth + 1)}: {_preview(item, depth + 1)}")
        return _clip("{" + ", ".join(items) + "}")
    if isinstance(value, (list, tuple)):
        items = [_preview(item, depth + 1) for item in value[:4]]
        if len(value) > 4:
            items.append("...")
        open_, close = ("[", "]") if isinstance(value, list) else ("(", ")")
        return _clip(open_ + ", ".join(items) + close)
    if isinstance(value, (set, frozenset)):
        items = []
        for position, item in enumerate(value):
            if position == 4:
                items.append("...")
                break
            items.append(_preview(item, depth + 1))
        return _clip("{" + ", ".join(items) + "}")
    return _type_name(value)


def _cheap_str(value: Any) -> bool:
    return len(str(value)) < 40


def _clip(text: str, limit: int = PREVIEW_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _join_capped(names: list[str], limit: int) -> str:
    text = ", ".join(names)
    return _clip(text, limit)
