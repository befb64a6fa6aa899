"""What can travel between the host and a sub-agent's kernel: JSON values, converted as DSPy converts them.

Variables sent to a kernel, tool arguments and results, and SUBMIT values all cross
the process boundary as JSON. `to_wire` turns a value into plain JSON data the way
DSPy's own interpreters do (``dspy.PythonInterpreter``): pydantic models by
``model_dump(mode="json")``, dataclasses as dicts, namedtuples as dicts, tuples as
lists (deques too), sets as sorted lists, dates and times in ISO format, durations in
seconds, enums by value, UUIDs, decimals, paths and IP addresses as strings, UTF-8
bytes as text. Anything else, and a float that is not finite (JSON has no NaN),
raises `NotCarried`: a value is never silently turned into its ``str``.

Standard library only: the kernel side runs this file too (the kernel may be any
Python kernel, without this package installed).
"""

import collections
import dataclasses
import datetime
import decimal
import enum
import ipaddress
import json
import math
import pathlib
import uuid

MAX_DEPTH = 100
TEXT_CHARS = 100_000  # of a value sent as text (`as_data`)


class NotCarried(TypeError):
    """A value that cannot travel as JSON between the host and a kernel."""


def to_wire(value, what="value"):
    """``value`` as JSON data (dicts, lists, str, int, finite float, bool, None); `NotCarried` if it cannot be."""
    return _convert(value, what, 0)


def dumps(value, what="value"):
    """``value`` as a JSON text (see `to_wire`)."""
    return json.dumps(to_wire(value, what), allow_nan=False)


def as_data(value, what="value"):
    """``value`` as JSON data like `to_wire`, except that a part JSON cannot carry (a DataFrame, NaN, an
    object) becomes text that says so, ``"<DataFrame, sent as text> ..."``: what a sub-agent SUBMITs always
    reaches its parent, as data where it can be."""
    return _convert(value, what, 0, lenient=True)


def as_text(value, kind=None):
    """A value that cannot travel as JSON, as bounded text that names what it was."""
    kind = kind or type(value).__name__
    try:
        text = str(value)
    except Exception as exc:  # noqa: BLE001 - a value whose str() fails still arrives, as what it was
        text = f"(its str() failed: {type(exc).__name__})"
    if len(text) > TEXT_CHARS:
        text = text[:TEXT_CHARS] + f"... ({len(text) - TEXT_CHARS:,} more characters)"
    return f"<{kind}, sent as text> {text}"


def _convert(value, what, depth, lenient=False):
    try:
        return _converted(value, what, depth, lenient)
    except NotCarried:
        if not lenient:
            raise
        return as_text(value)


def _converted(value, what, depth, lenient):
    if depth > MAX_DEPTH:
        raise NotCarried(f"{what} is nested too deeply to travel as JSON")
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotCarried(f"{what} contains {value!r}, which JSON cannot carry")
        return float(value)
    if isinstance(value, dict):
        return {_key(key, what, lenient): _convert(item, what, depth + 1, lenient) for key, item in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_asdict") and hasattr(value, "_fields"):
        return _convert(dict(value._asdict()), what, depth + 1, lenient)
    if isinstance(value, (list, tuple, collections.deque)):
        return [_convert(item, what, depth + 1, lenient) for item in value]
    if isinstance(value, (set, frozenset)):
        items = [_convert(item, what, depth + 1, lenient) for item in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    dump = getattr(type(value), "model_dump", None)  # a pydantic model
    if callable(dump) and not isinstance(value, type):
        try:
            return _convert(value.model_dump(mode="json"), what, depth + 1, lenient)
        except Exception as exc:
            raise NotCarried(f"{what} ({type(value).__name__}) could not be dumped as JSON: {exc}") from None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _convert(dataclasses.asdict(value), what, depth + 1, lenient)
    if isinstance(value, enum.Enum):
        return _convert(value.value, what, depth + 1, lenient)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (uuid.UUID, pathlib.PurePath, ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise NotCarried(f"{what} contains bytes that are not UTF-8 text, which JSON cannot carry") from None
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise NotCarried(f"{what} contains {value!r}, which JSON cannot carry")
        return str(value)
    raise NotCarried(f"{what} of type {type(value).__name__} cannot travel as JSON between the host and the "
                     "kernel; convert it to str, numbers, lists or dicts first")


def _key(key, what, lenient=False):
    if lenient and not isinstance(key, (str, bool, int, float, enum.Enum)) and key is not None:
        return as_text(key)
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int)) or isinstance(key, float) and math.isfinite(key):
        return json.dumps(key) if not isinstance(key, str) else key
    if isinstance(key, enum.Enum):
        return _key(key.value, what)
    raise NotCarried(f"{what} has a dict key of type {type(key).__name__}; JSON keys are strings")
