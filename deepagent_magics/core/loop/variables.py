"""The variables view: what the model is told the notebook holds, ranked and within a budget.

The agent should know what the notebook holds (``sales: pandas.DataFrame, shape (1200, 5),
columns object: region; float64: q3, q4``) without being sent the data. The view is rendered
by us into the request (`inputs_view`), never cut mid-line, and ranked:

1. the names the task mentions, in full detail (every column of a table up to `MAX_COLUMNS`);
2. the user's own names, newest first, while the budget lasts; past it, compact (type and
   shape), then by name only: every user variable is at least named, up to `MAX_NAMED`, and
   past that one line says how many more and the code that lists them;
3. functions, classes and modules, by name;
4. names earlier agent runs made (loop variables, scratch results), by name, on one line; what their
   ``import`` bound (modules, library functions and classes) on another.

Tables that share their columns list them once: ``same 30 columns as `X_test` ``, or how they differ
(```bc_X`'s 30 columns and int64: target``). Closed files and other dead objects are left out.

Describing a value is cheap and safe whatever it holds: no ``str()``/``repr()`` of an unknown or
large object, no iteration of one, no copy. Only exact builtin types are repr'd; a subclass's
size is read with the builtin's own method (its overrides never run); a table's columns, a
``shape`` or a ``dtype`` are read only from the array and table libraries (`TRUSTED`), or when
``shape`` is plain data on the object (read without running a property or ``__getattr__``).
"""

from __future__ import annotations

import inspect
import re
import types
from typing import Any, Iterable, Mapping

from .value_kinds import dead as _dead, imported as _imported

BUDGET = 3000  # characters of described variables (names-only lines come on top, bounded by MAX_NAMED)
MAX_NAMED = 300  # user variables named at least; past that, one line with how many more
MAX_COLUMNS = 60  # a table's columns shown with their dtypes
PREVIEW_CHARS = 80
FULL_PREVIEW_CHARS = 300  # a variable the task mentions
HEAD_ROWS = 3  # of a pandas table the task mentions
RELATED_CHANGES = 10  # columns a table may add or lack and still be described by another table's
NAMES_CHARS = 600  # each names-only line (functions, modules, earlier runs' names)
HIDDEN = {"In", "Out", "exit", "quit", "get_ipython", "open"}
TRUSTED = {"numpy", "pandas", "polars", "pyarrow", "torch", "jax", "jaxlib", "scipy", "xarray", "tensorflow",
           "cupy", "dask", "sparse", "modin"}
LIST_ALL = "print([n for n in globals() if not n.startswith('_')])"
WORD = re.compile(r"[^\W\d]\w*")
_SCALARS = (bool, int, float, complex, type(None))
_CONTAINERS = (list, tuple, set, frozenset, dict)
_CALLABLES = (types.FunctionType, types.BuiltinFunctionType, type, types.MethodType)


def variables_view(
    namespace: Mapping[str, Any],
    *,
    task: str = "",
    exclude: Iterable[str] = (),
    agent_names: Iterable[str] = (),
    budget: int = BUDGET,
    max_named: int = MAX_NAMED,
) -> str:
    """The view of ``namespace`` for a run on ``task`` (see the module docstring)."""
    excluded = set(exclude) | HIDDEN
    made = set(agent_names)
    names = [name for name in list(namespace) if isinstance(name, str) and not name.startswith("_")
             and name not in excluded]
    values = {name: namespace.get(name) for name in names}
    names = [name for name in names if not _dead(values[name])]
    imported = [n for n in names if n in made and _imported(values[n])]
    modules = [n if values[n].__name__ == n else f"{n}={values[n].__name__}" for n in names
               if type(values[n]) is types.ModuleType and n not in imported]
    callables = [n for n in names if issubclass(type(values[n]), _CALLABLES) and n not in made]
    data = [n for n in names if type(values[n]) is not types.ModuleType and n not in callables
            and n not in imported]
    earlier = [n for n in data if n in made]
    users = [n for n in reversed(data) if n not in made]  # newest first: a dict keeps the order names came in
    mentioned = [n for n in dict.fromkeys(WORD.findall(task or "")) if n in values and n in users]
    users = mentioned + [n for n in users if n not in mentioned]

    shown_compact: set[str] = set()  # sources the budget left without their columns: the others refer elsewhere
    while True:
        sources = _sources(users[:max_named], values, shown_compact)
        lines, plain, compact = _described(users[:max_named], values, mentioned, budget, sources)
        if not compact & set(sources):
            break
        shown_compact |= compact & set(sources)
    if plain:
        lines.append("- also: " + ", ".join(plain))
    if len(users) > max_named:
        lines.append(f"- ... and {len(users) - max_named:,} more variables: {LIST_ALL} lists them")
    if callables:
        lines.append("Functions and classes: " + _names(callables))
    if modules:
        lines.append("Modules: " + _names(modules))
    if earlier:
        lines.append("Made by earlier agent runs: " + _names(earlier))
    if imported:
        lines.append("Imported by earlier agent runs: " + _names(imported))
    return "\n".join(lines) if lines else "(none yet)"


def _described(users: list[str], values: Mapping[str, Any], mentioned: list[str], budget: int,
               sources: dict[str, list[tuple[str, str]]]) -> tuple[list[str], list[str], set[str]]:
    """One line per user variable while the budget lasts (then compact, then named only); and which were
    shown compactly. A table whose columns are a source's refers to it."""
    lines: list[str] = []
    plain: list[str] = []
    compact: set[str] = set()
    used = 0
    for name in users:
        tables = {other: columns for other, columns in sources.items() if other != name}
        for detail in (("full", "compact") if name in mentioned else ("normal", "compact")):
            line = f"- {name}: {describe(values[name], detail, tables)}"
            if used + len(line) + 1 <= budget or (name in mentioned and not lines):
                lines.append(line)
                used += len(line) + 1
                if detail == "compact":
                    compact.add(name)
                break
        else:
            plain.append(name)
            compact.add(name)
    return lines, plain, compact


def _sources(users: list[str], values: Mapping[str, Any], left_out: set[str]) -> dict[str, list[tuple[str, str]]]:
    """The tables that list their columns: of tables that share most of their columns, the one with the most
    (the oldest of equals: the table the others were made from); the others say how they differ from it."""
    tables = [(name, columns) for name in reversed(users)
              if name not in left_out and (columns := _columns(values[name])) is not None]
    tables.sort(key=lambda item: -len(item[1]))  # stable: the oldest first among tables of one width
    sources: dict[str, list[tuple[str, str]]] = {}
    for name, columns in tables:
        if _related(columns, sources) is None:
            sources[name] = columns
    return sources


def summarize_namespace(namespace: Mapping[str, Any], *, exclude: Iterable[str] = (),
                        max_variables: int = MAX_NAMED, max_chars: int = BUDGET) -> str:
    """The view without a task (the bench and older callers)."""
    view = variables_view(namespace, exclude=exclude, budget=max_chars, max_named=max_variables)
    return "(the notebook has no user variables yet)" if view == "(none yet)" else view


def describe(value: Any, detail: str = "normal", tables: Mapping[str, list[tuple[str, str]]] | None = None) -> str:
    """``value``'s type, size and a short preview, computed in O(1)-ish time without running its code.

    ``detail``: ``full`` (a longer preview), ``normal``, or ``compact`` (type and size only). ``tables``: the
    columns of tables already described, by name: a table sharing them says so instead of listing them again."""
    cls = type(value)
    kind = _type_name(cls)
    preview_chars = FULL_PREVIEW_CHARS if detail == "full" else PREVIEW_CHARS
    if cls in _SCALARS:
        return f"{kind} = {_clip(repr(value))}"
    if issubclass(cls, str):
        head = str.__getitem__(value, slice(0, preview_chars + 2))
        size = f"{kind}, {str.__len__(value):,} chars"
        return size if detail == "compact" else f"{size} = {_clip(repr(str(head)), preview_chars)}"
    if issubclass(cls, (bytes, bytearray)):
        return f"{kind}, {(bytes.__len__ if issubclass(cls, bytes) else bytearray.__len__)(value):,} bytes"
    table = _table(value, cls, kind, detail, tables or {})
    if table:
        return table
    shape = _shape(value, cls)
    if shape is not None:
        dtype = _dtype(value, cls)
        return f"{kind}, shape {shape}" + (f", dtype {dtype}" if dtype else "")
    for base in _CONTAINERS:
        if issubclass(cls, base):
            size = f"{kind}, {base.__len__(value):,} items"
            if detail == "compact" or cls is not base:
                return size
            return f"{size} = {_preview(value, 0, 8 if detail == 'full' else 4, preview_chars)}"
    if cls.__module__ in ("collections", "builtins") and hasattr(cls, "__len__"):
        try:
            return f"{kind}, {len(value):,} items"
        except Exception:  # a user's __len__ may raise anything: the kind alone
            return kind
    return kind


# ---------------------------------------------------------------- tables, arrays
def _trusted(cls: type) -> bool:
    return str(getattr(cls, "__module__", "")).split(".")[0] in TRUSTED


def _table(value: Any, cls: type, kind: str, detail: str, tables: Mapping[str, list[tuple[str, str]]]) -> str | None:
    """pandas- and polars-style tables: shape, then every column with its dtype up to `MAX_COLUMNS` (or how they
    relate to the columns of a table already described)."""
    if not _trusted(cls) or cls.__name__ != "DataFrame":
        return None
    shape = _shape(value, cls)
    if shape is None or len(shape) != 2:
        return None
    if detail == "compact":
        return f"{kind}, shape {shape}"
    columns = _columns(value)
    if columns is None:
        return f"{kind}, shape {shape}"
    related = _related(columns, tables) if shape[1] == len(columns) else None
    more = f"; ... {shape[1] - len(columns):,} more (.columns lists them)" if shape[1] > len(columns) else ""
    text = f"{kind}, shape {shape}, {related or 'columns ' + _grouped(columns)}{more}"
    return text + _head(value) if detail == "full" and cls.__module__.split(".")[0] == "pandas" else text


def _columns(value: Any) -> list[tuple[str, str]] | None:
    """A trusted table's first `MAX_COLUMNS` columns as (label, dtype); None for anything else."""
    cls = type(value)
    if not _trusted(cls) or cls.__name__ != "DataFrame":
        return None
    try:
        names = list(value.columns[:MAX_COLUMNS])
        dtypes = value.dtypes
        kinds = list(dtypes.iloc[:MAX_COLUMNS]) if hasattr(dtypes, "iloc") else list(dtypes[:MAX_COLUMNS])
    except Exception:  # a user's frame may raise anything when read: no columns shown
        return None
    return [(_label(name), _clip(str(dtype), 40)) for name, dtype in zip(names, kinds)]


def _grouped(columns: list[tuple[str, str]]) -> str:
    """``float64: a, b; int64: target``: the columns grouped by dtype, in the order they come."""
    groups: dict[str, list[str]] = {}
    for label, dtype in columns:
        groups.setdefault(dtype, []).append(label)
    return "; ".join(f"{dtype}: {', '.join(labels)}" for dtype, labels in groups.items())


def _related(columns: list[tuple[str, str]], tables: Mapping[str, list[tuple[str, str]]]) -> str | None:
    """How ``columns`` relate to a table already described: the same ones, or theirs with a few more or fewer
    (at most `RELATED_CHANGES`); None when no described table is that close."""
    best: tuple[int, str] | None = None
    mine = dict(columns)
    for name, theirs in tables.items():
        other = dict(theirs)
        if len(other) < 2 or any(mine[label] != other[label] for label in mine.keys() & other.keys()):
            continue
        extra = [(label, dtype) for label, dtype in columns if label not in other]
        missing = [label for label, _ in theirs if label not in mine]
        if extra and missing or len(extra) + len(missing) > RELATED_CHANGES:
            continue
        if not extra and not missing:
            text = (f"same {len(columns)} columns as `{name}`" if columns == theirs
                    else f"the {len(columns)} columns of `{name}`, in another order")
        elif extra:
            text = f"the {len(theirs)} columns of `{name}` and {_grouped(extra)}"
        else:
            text = f"the columns of `{name}` but {', '.join(missing)}"
        if best is None or len(extra) + len(missing) < best[0]:
            best = (len(extra) + len(missing), text)
    return best[1] if best else None


def _head(frame: Any) -> str:
    """A pandas table's first rows, indented under its line (a table the task names: the model sees its data
    is already here); nothing when a row would be wide."""
    try:
        lines = frame.head(HEAD_ROWS).to_string(max_cols=12, max_colwidth=24).splitlines()
    except Exception:  # a user's frame may raise anything when rendered: no rows shown
        return ""
    if not lines or any(len(line) > 160 for line in lines):
        return ""
    return "".join(f"\n    {line}" for line in lines)


def _shape(value: Any, cls: type) -> tuple | None:
    """``value.shape`` when it is safe to read: a trusted library's, or plain data on the object."""
    if _trusted(cls):
        try:
            shape = value.shape
        except Exception:  # a user's object may raise anything when read: no shape shown
            return None
    else:
        try:
            shape = inspect.getattr_static(value, "shape", None)
        except Exception:  # a user's class may raise anything, even when read statically: no shape shown
            return None
        if isinstance(shape, (property, types.MemberDescriptorType, types.GetSetDescriptorType)) \
                or hasattr(type(shape), "__get__"):
            return None  # code would run to compute it
    if type(shape) is tuple and all(type(n) is int for n in shape):
        return shape
    return None


def _dtype(value: Any, cls: type) -> str | None:
    if not _trusted(cls):
        return None
    try:
        text = str(value.dtype)
    except Exception:  # a user's dtype may raise anything when shown: no dtype shown
        return None
    return text if len(text) < 40 else None


def _label(name: Any) -> str:
    """A column name as it reads in the view: plain when it is a simple word, else its (bounded) repr."""
    if type(name) is str and re.fullmatch(r"[\w./-]{1,60}", name):
        return name
    if type(name) in (str, int, float, bool) or type(name) is tuple and all(type(p) in (str, int) for p in name):
        return _clip(repr(name), 60)
    return f"<{type(name).__name__}>"


# ---------------------------------------------------------------- previews
def _preview(value: Any, depth: int, items: int, limit: int) -> str:
    """A bounded repr of an exact builtin value: the first few items of containers, type names otherwise."""
    cls = type(value)
    if cls in _SCALARS:
        return _clip(repr(value), 30)
    if cls is str:
        return _clip(repr(value[:32]), 34)
    if depth >= 2 or cls not in _CONTAINERS:
        return "..." if cls in _CONTAINERS else _type_name(cls)
    parts = []
    pairs = value.items() if cls is dict else value
    for position, item in enumerate(pairs):
        if position == items:
            parts.append("...")
            break
        parts.append(f"{_preview(item[0], depth + 1, items, limit)}: {_preview(item[1], depth + 1, items, limit)}"
                     if cls is dict else _preview(item, depth + 1, items, limit))
    opening, closing = {list: "[]", tuple: "()", dict: "{}"}.get(cls, "{}")
    return _clip(opening + ", ".join(parts) + closing, limit)


def _type_name(cls: type) -> str:
    module = str(getattr(cls, "__module__", "") or "")
    name = str(getattr(cls, "__qualname__", cls.__name__))
    if module in ("builtins", "__main__"):
        return name
    return f"{module.split('.')[0]}.{name}"


def _clip(text: str, limit: int = PREVIEW_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _names(names: list[str], limit: int = NAMES_CHARS) -> str:
    """Names joined, never one cut in half: past ``limit``, how many more."""
    shown, used = [], 0
    for name in names:
        if used + len(name) + 2 > limit:
            return ", ".join(shown) + f", ... {len(names) - len(shown):,} more"
        shown.append(name)
        used += len(name) + 2
    return ", ".join(shown)
