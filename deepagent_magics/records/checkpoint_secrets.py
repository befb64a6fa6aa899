"""Whether a value about to be written into a checkpoint holds a secret.

Pickle stores a Python string as UTF-8, so the pickled bytes read as Latin-1 show any secret a
plain string, list or dict holds. Arrays do not: NumPy keeps text as UCS-4 (``"sk-..."`` is
``s\\0\\0\\0k\\0\\0\\0...`` on disk), and a DataFrame written as Parquet is compressed. So the texts
inside NumPy arrays and pandas objects (their values, index and column names), and inside the
containers holding them, are read out as text and checked too, within `MAX_ITEMS` values; a value
too big to check whole is checked up to that bound, and its pickled bytes as well.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

MAX_DEPTH = 6
MAX_ITEMS = 2_000_000  # strings read out of arrays and containers per value
CHUNK = 2_000  # strings checked together
# name = "value" where the name looks secret (api_key="...", OPENAI_TOKEN: '...'): the value is scrubbed
SECRET_ASSIGNMENT = re.compile(r"""(?i)(\b\w*(?:key|token|secret|password|passwd|credential)\w*["']?\s*[=:]\s*)(["'])[^"'\n]*\2""")


def scrub_assignments(code: str) -> str:
    """``api_key = "..."`` becomes ``api_key = "[REDACTED]"``."""
    return SECRET_ASSIGNMENT.sub(r"\1\2[REDACTED]\2", code)


def holds_secret(value: Any, redact: Any, pickled: bytes | None = None) -> bool:
    """Whether ``value`` (or its ``pickled`` bytes) holds a secret ``redact`` would hide."""
    if pickled is not None:
        text = pickled.decode("latin-1")
        if redact.text(text) != text:
            return True
    batch: list[str] = []
    for text in _texts(value, 0, [MAX_ITEMS]):
        batch.append(text)
        if len(batch) >= CHUNK:
            if _any_secret(batch, redact):
                return True
            batch = []
    return _any_secret(batch, redact)


def _any_secret(texts: list[str], redact: Any) -> bool:
    joined = "\n".join(texts)
    return bool(joined) and redact.text(joined) != joined


def _texts(value: Any, depth: int, left: list[int]) -> Iterator[str]:
    """The strings ``value`` holds, as text (bytes as Latin-1), at most ``left[0]`` of them."""
    if left[0] <= 0 or depth > MAX_DEPTH:
        return
    if isinstance(value, str):
        left[0] -= 1
        yield value
        return
    if isinstance(value, (bytes, bytearray, memoryview)):
        left[0] -= 1
        yield bytes(value).decode("latin-1")
        return
    module = type(value).__module__.split(".")[0]
    if module == "numpy":
        yield from _array_texts(value, depth, left)
    elif module == "pandas":
        yield from _pandas_texts(value, depth, left)
    elif isinstance(value, dict):
        for key, item in list(value.items()):
            yield from _texts(key, depth + 1, left)
            yield from _texts(item, depth + 1, left)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in list(value):
            yield from _texts(item, depth + 1, left)


def _array_texts(value: Any, depth: int, left: list[int]) -> Iterator[str]:
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind not in ("U", "S", "O", "T") or not hasattr(value, "ravel"):  # T: NumPy 2's StringDType
        return  # numbers hold no text (a NumPy str_ scalar is a str)
    for item in value.ravel()[: max(left[0], 0)].tolist():
        if left[0] <= 0:
            return
        yield from _texts(item, depth + 1, left)


def _pandas_texts(value: Any, depth: int, left: list[int]) -> Iterator[str]:
    kind = type(value).__name__
    if kind == "DataFrame":
        yield from _texts(list(value.columns), depth + 1, left)
        yield from _pandas_texts(value.index, depth, left)
        for column in value.columns:
            yield from _pandas_texts(value[column], depth, left)
    elif kind == "Series" or kind.endswith("Index"):
        if kind == "Series":
            yield from _pandas_texts(value.index, depth, left)
        try:
            array = value.to_numpy(dtype=object) if str(getattr(value, "dtype", "")) in ("string", "str") else \
                value.to_numpy()
        except Exception:  # a column that cannot become an array: its texts are not searched
            return
        yield from _array_texts(array, depth + 1, left)
