"""Cheap fingerprints and bounded snapshots of the user's objects, to see what a run changed in place.

`fingerprint(obj)` is a digest of an object's content for the common mutable types (lists,
dicts, sets, numpy arrays, pandas DataFrames and Series), computed without copying the data:
an array's buffer is hashed where it lies, a DataFrame through ``pandas.util.hash_pandas_object``
(8 bytes a row), a container through its items' own digests (nested containers to `MAX_DEPTH`,
at most `MAX_ITEMS` items; other objects by identity). None for a type it does not know.

`snapshot(obj, limit)` copies an object whose estimated size is at most ``limit`` bytes (None:
too big, or not copyable), and `restore(obj, copy)` puts such a copy back *into* the same object,
so every other reference to it sees the restored content (False when it cannot be done in place).
"""

from __future__ import annotations

import copy
import hashlib
import sys
from typing import Any

MAX_DEPTH = 3
MAX_ITEMS = 1_000_000
CHUNK_BYTES = 1 << 20  # a non-contiguous array is hashed in blocks of rows of about this size
CHUNK_ROWS = 65_536  # a DataFrame is hashed in blocks of this many rows
_SCALARS = (int, float, complex, str, bytes, bool, type(None))


def kind(obj: Any) -> str | None:
    """``list``, ``dict``, ``set``, ``ndarray``, ``DataFrame``, ``Series``, or None (not tracked)."""
    if isinstance(obj, list):
        return "list"
    if isinstance(obj, dict):
        return "dict"
    if isinstance(obj, set):
        return "set"
    module = type(obj).__module__ or ""
    name = type(obj).__name__
    if module.startswith("numpy") and name == "ndarray":
        return "ndarray"
    if module.startswith("pandas") and name in ("DataFrame", "Series"):
        return name
    return None


def fingerprint(obj: Any) -> str | None:
    what = kind(obj)
    if what is None:
        return None
    digest = hashlib.blake2b(digest_size=16)
    try:
        if what == "ndarray":
            _array(digest, obj)
        elif what in ("DataFrame", "Series"):
            _pandas(digest, obj)
        else:
            _container(digest, obj, 0, [0])
    except Exception as exc:  # an object whose items cannot be read: by identity and the error
        digest.update(f"{id(obj)}:{type(exc).__name__}".encode())
    return digest.hexdigest()


def _array(digest: Any, array: Any) -> None:
    import numpy as np

    digest.update(f"{array.shape}{array.dtype.str}".encode())
    if array.dtype.hasobject:
        _container(digest, array.ravel().tolist(), 0, [0])
    elif array.flags.c_contiguous:
        digest.update(memoryview(array).cast("B"))
    elif array.ndim:
        rows = max(1, CHUNK_BYTES // max(1, array[:1].nbytes))
        for start in range(0, array.shape[0], rows):  # a block of rows at a time: no copy of the whole array
            digest.update(memoryview(np.ascontiguousarray(array[start:start + rows])).cast("B"))


def _pandas(digest: Any, obj: Any) -> None:
    import pandas as pd

    digest.update(repr((obj.shape, getattr(obj, "name", None))).encode())
    if isinstance(obj, pd.DataFrame):
        digest.update(repr((list(obj.columns), [str(t) for t in obj.dtypes])).encode())
    else:
        digest.update(str(obj.dtype).encode())
    try:
        for start in range(0, len(obj), CHUNK_ROWS):  # in blocks of rows: the hashes of a block at a time
            block = pd.util.hash_pandas_object(obj.iloc[start:start + CHUNK_ROWS], index=True).to_numpy()
            digest.update(memoryview(block).cast("B"))
    except TypeError:  # unhashable cells (lists): row by row through the containers' digests
        rows = obj.itertuples(index=True) if isinstance(obj, pd.DataFrame) else obj.items()
        _container(digest, [list(row) for row in rows], 0, [0])


def _container(digest: Any, obj: Any, depth: int, seen: list[int]) -> None:
    if isinstance(obj, dict):
        digest.update(f"d{len(obj)}".encode())
        items = obj.items()
    elif isinstance(obj, (set, frozenset)):
        digest.update(f"s{len(obj)}:{hash(frozenset(obj))}".encode())
        return
    else:
        digest.update(f"l{len(obj)}".encode())
        items = enumerate(obj)
    for key, value in items:
        seen[0] += 1
        if seen[0] > MAX_ITEMS:
            return
        if not isinstance(key, int):
            digest.update(repr(key).encode()[:200])
        if isinstance(value, _SCALARS):
            digest.update(f"{type(value).__name__}:{hash(value)};".encode())
        elif isinstance(value, (list, tuple, dict, set, frozenset)) and depth < MAX_DEPTH:
            _container(digest, value, depth + 1, seen)
        elif kind(value) is not None and depth < MAX_DEPTH:
            digest.update((fingerprint(value) or "").encode())
        else:
            digest.update(f"id{id(value)};".encode())


def size_of(obj: Any, limit: int) -> int:
    """An estimate of ``obj``'s size in bytes; stops counting past ``limit``."""
    what = kind(obj)
    if what == "ndarray":
        return int(obj.nbytes) if not obj.dtype.hasobject else _walk(obj.ravel().tolist(), limit)
    if what in ("DataFrame", "Series"):
        try:
            total = obj.memory_usage(index=True, deep=True)
            return int(total.sum() if hasattr(total, "sum") else total)
        except Exception:
            return limit + 1
    return _walk(obj, limit)


def _walk(obj: Any, limit: int) -> int:
    total, stack = 0, [obj]
    while stack and total <= limit:
        item = stack.pop()
        total += sys.getsizeof(item, 64)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
    return total


def snapshot(obj: Any, limit: int) -> Any:
    """A copy of ``obj`` if it is no bigger than ``limit`` bytes, else None."""
    if limit <= 0 or kind(obj) is None or size_of(obj, limit) > limit:
        return None
    try:
        if kind(obj) in ("ndarray", "DataFrame", "Series"):
            return obj.copy()
        return copy.deepcopy(obj)
    except Exception:
        return None


def restore(obj: Any, saved: Any) -> bool:
    """Put ``saved`` (a `snapshot`) back into ``obj`` itself; False if that cannot be done in place."""
    what = kind(obj)
    try:
        if what == "list":
            obj[:] = saved
        elif what in ("dict", "set"):
            obj.clear()
            obj.update(saved)
        elif what == "ndarray":
            if obj.shape != saved.shape or obj.dtype != saved.dtype or not obj.flags.writeable:
                return False
            obj[...] = saved
        elif what in ("DataFrame", "Series"):
            obj._update_inplace(saved.copy())  # pandas' own in-place replacement (as inplace=True does)
        else:
            return False
    except Exception:
        return False
    return fingerprint(obj) == fingerprint(saved)


class Ref:
    """How a run remembers an object without keeping a big one alive: a weak reference where the type
    allows it, the object itself when it is small (at most ``limit`` bytes), else only its identity."""

    def __init__(self, obj: Any, limit: int):
        import weakref

        self._weak: Any = None
        self._strong: Any = None
        self._kept = False
        self._id, self._type = id(obj), type(obj)
        try:
            self._weak = weakref.ref(obj)
        except TypeError:
            if isinstance(obj, _SCALARS) or size_of(obj, limit) <= limit:
                self._strong, self._kept = obj, True

    def get(self) -> Any:
        """The object, or None when it is gone or was not kept."""
        return self._weak() if self._weak is not None else self._strong

    def matches(self, obj: Any) -> bool:
        """``obj`` is the remembered object (by id and type when only those were kept: a big list)."""
        if self._weak is not None or self._kept:
            return self.get() is obj
        return id(obj) == self._id and type(obj) is self._type
