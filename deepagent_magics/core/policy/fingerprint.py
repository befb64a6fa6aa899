"""Cheap fingerprints and bounded snapshots of the user's objects, to see what a run changed in place.

`fingerprint(obj)` is a digest of an object's content for the common mutable types (lists,
dicts, sets, numpy arrays, pandas DataFrames and Series) and for the user's own objects (by
their attributes: ``__dict__`` and ``__slots__``), computed without copying the data: an array's
buffer is hashed where it lies, a DataFrame through ``pandas.util.hash_pandas_object`` (8 bytes a
row), a container or an object through its items' own digests (nested containers and objects to
`MAX_DEPTH`, at most `MAX_ITEMS` items; other objects by identity). None for a type it does not
know (modules, classes, functions, and the objects of IPython, Jupyter, DSPy and the standard
library's machinery, which change under their own steam).

`snapshot(obj, limit)` copies an object whose estimated size is at most ``limit`` bytes (None:
too big, or not copyable), remembering which original each copied part came from; `restore(obj,
snapshot)` puts it back *into* the same object, and every inner list, dict, set, array or object
back into its own original too, so every other reference to the object or to a part of it sees
the restored content (False when it cannot be done in place).
"""

from __future__ import annotations

import copy
import hashlib
import sys
import types
from typing import Any

MAX_DEPTH = 3
MAX_ITEMS = 1_000_000
CHUNK_BYTES = 1 << 20  # a non-contiguous array is hashed in blocks of rows of about this size
CHUNK_ROWS = 65_536  # a DataFrame is hashed in blocks of this many rows
_SCALARS = (int, float, complex, str, bytes, bool, type(None))
_NOT_OBJECTS = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                types.CodeType, types.FrameType, types.GeneratorType, types.CoroutineType, property)
# Objects of these packages are machinery (a shell, an LM whose history every call grows): not tracked.
_MACHINERY = {"builtins", "IPython", "ipykernel", "ipywidgets", "traitlets", "jupyter_client", "zmq", "tornado",
              "asyncio", "threading", "_thread", "logging", "io", "_io", "functools", "dspy", "litellm",
              "deepagent_magics", "numpy", "pandas", "weakref", "_weakrefset", "collections", "typing"}


def kind(obj: Any) -> str | None:
    """``list``, ``dict``, ``set``, ``ndarray``, ``DataFrame``, ``Series``, ``object`` (an object with
    attributes of the user's own), or None (not tracked)."""
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
    if _is_users_object(obj, module):
        return "object"
    return None


def _is_users_object(obj: Any, module: str) -> bool:
    if isinstance(obj, _NOT_OBJECTS + _SCALARS + (tuple, frozenset)) or module.split(".")[0] in _MACHINERY:
        return False
    try:
        return isinstance(getattr(obj, "__dict__", None), dict) or bool(slot_names(type(obj)))
    except Exception:  # a proxy whose attribute lookup fails: not one we can read
        return False


def slot_names(cls: type) -> list[str]:
    names: list[str] = []
    for klass in getattr(cls, "__mro__", ()):
        slots = klass.__dict__.get("__slots__", ())
        for name in ([slots] if isinstance(slots, str) else slots):
            if name not in ("__dict__", "__weakref__") and name not in names:
                names.append(name)
    return names


def attributes(obj: Any) -> dict[str, Any]:
    """An object's attributes: its ``__dict__`` and the ``__slots__`` that are set."""
    state = dict(vars(obj)) if isinstance(getattr(obj, "__dict__", None), dict) else {}
    for name in slot_names(type(obj)):
        try:
            state[name] = object.__getattribute__(obj, name)
        except AttributeError:
            pass
    return state


def set_attributes(obj: Any, state: dict[str, Any]) -> None:
    """Give ``obj`` exactly the attributes ``state`` (as `attributes` reads them), bypassing ``__setattr__``."""
    slots = slot_names(type(obj))
    own = getattr(obj, "__dict__", None)
    if isinstance(own, dict):
        for name in [name for name in own if name not in state]:
            del own[name]
        own.update({name: value for name, value in state.items() if name not in slots})
    for name in slots:
        if name in state:
            object.__setattr__(obj, name, state[name])
        else:
            try:
                object.__delattr__(obj, name)
            except AttributeError:
                pass


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
    if kind(obj) == "object":
        digest.update(f"o{type(obj).__qualname__}".encode())
        obj = attributes(obj)
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
        elif (isinstance(value, (list, tuple, dict, set, frozenset)) or kind(value) == "object") and depth < MAX_DEPTH:
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
        except Exception:  # a user's frame may raise anything when measured: taken as too big to copy
            return limit + 1
    return _walk(obj, limit)


def _walk(obj: Any, limit: int) -> int:
    total, stack = 0, [obj]
    while stack and total <= limit:
        item = stack.pop()
        total += sys.getsizeof(item, 64)
        if kind(item) == "object":
            stack.append(attributes(item))
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
    return total


class Snapshot:
    """A deep copy of an object (of its attributes, for an object), the fingerprint it had, and for each
    copied part the original it came from, so that `restore` puts the originals back by identity."""

    def __init__(self, copied: Any, pairs: list[tuple[Any, Any]], print_: str | None):
        self.copy = copied
        self.pairs = pairs  # (copy, original): both kept, so that their ids stay theirs
        self.print = print_


def snapshot(obj: Any, limit: int) -> Snapshot | None:
    """A `Snapshot` of ``obj`` if it is no bigger than ``limit`` bytes, else None (too big, or not copyable)."""
    what = kind(obj)
    if limit <= 0 or what is None or size_of(obj, limit) > limit:
        return None
    memo: dict[int, Any] = {}
    try:
        if what in ("ndarray", "DataFrame", "Series"):
            return Snapshot(obj.copy(), [], fingerprint(obj))
        copied = copy.deepcopy(attributes(obj) if what == "object" else obj, memo)
    except Exception:  # a user's object may refuse to be copied in any way: not kept for undo
        return None
    originals = memo.pop(id(memo), [])  # deepcopy keeps every original it copied here
    pairs = [(memo[id(original)], original) for original in originals if id(original) in memo]
    return Snapshot(copied, pairs, fingerprint(obj))


def restore(obj: Any, saved: Snapshot) -> bool:
    """Put ``saved`` back into ``obj`` itself, inner parts into their originals; False if that cannot be done."""
    back = {id(part): original for part, original in saved.pairs}
    try:
        if not _put_back(obj, saved.copy, back, set()):
            return False
    except Exception:  # a user's object may refuse to be restored in any way: undo says it could not
        return False
    return fingerprint(obj) == saved.print


def _put_back(target: Any, saved: Any, back: dict[int, Any], done: set[int]) -> bool:
    if id(target) in done:
        return True
    done.add(id(target))
    what = kind(target)

    def original(part: Any) -> Any:
        found = back.get(id(part))
        if found is None:
            return part  # not copied (immutable), or new: as saved
        if kind(found) is not None:
            _put_back(found, part, back, done)
        elif isinstance(found, tuple):
            for item in part:
                original(item)  # a tuple cannot change, its lists and dicts can
        return found

    if what == "list":
        target[:] = [original(item) for item in saved]
    elif what == "dict":
        items = [(original(key), original(value)) for key, value in saved.items()]
        target.clear()
        target.update(items)
    elif what == "set":
        items = [original(item) for item in saved]
        target.clear()
        target.update(items)
    elif what == "ndarray":
        if target.shape != saved.shape or target.dtype != saved.dtype or not target.flags.writeable:
            return False
        target[...] = saved
    elif what in ("DataFrame", "Series"):
        target._update_inplace(saved.copy())  # pandas' own in-place replacement (as inplace=True does)
    elif what == "object":
        state = saved if type(saved) is dict else attributes(saved)
        set_attributes(target, {name: original(value) for name, value in state.items()})
    else:
        return False
    return True


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
