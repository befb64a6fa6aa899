"""What a notebook value is, read from its type without running its code: dead, imported, importable again.

The variables view (`variables`) leaves out what is `dead` (a closed file, a dead weak reference) and lists
apart what an agent run `imported`; a run's record keeps `imports_of` the user's namespace, so an export of
the run can import those names again (records/rerun.py).
"""

from __future__ import annotations

import io
import socket
import types
import weakref
from typing import Any, Mapping


def dead(value: Any) -> bool:
    """A closed file or socket, a dead weak reference, a finished generator: nothing the model can use."""
    cls = type(value)
    try:
        if issubclass(cls, io.IOBase) and cls.__module__ in ("_io", "io"):
            return bool(value.closed)
        if cls is socket.socket:
            return socket.socket.fileno(value) == -1
        if cls is weakref.ref:
            return value() is None
        if cls is types.GeneratorType:
            return value.gi_frame is None
    except Exception:  # a user's object may raise anything when looked at: not taken for a dead one
        return False
    return False


def imports_of(namespace: Mapping[str, Any], most: int = 200) -> list[str]:
    """How the names the user had imported can be imported again: ``pd=pandas`` for a module,
    ``load_iris=sklearn.datasets._base:load_iris`` for a library function or class (read without running
    the object's code); for a run's record, so an export of the run imports them again."""
    entries = []
    for name, value in list(namespace.items()):
        if not isinstance(name, str) or name.startswith("_") or not name.isidentifier():
            continue
        cls = type(value)
        try:
            if cls is types.ModuleType:
                module, qualname = value.__name__, None
            elif cls in (types.FunctionType, types.BuiltinFunctionType):
                module, qualname = value.__module__, value.__qualname__
            elif issubclass(cls, type):
                module = type.__dict__["__module__"].__get__(value, type)
                qualname = type.__dict__["__qualname__"].__get__(value, type)
            else:
                continue
        except Exception:  # a module without a __name__, a class whose __dict__ lost __module__
            continue
        if not isinstance(module, str) or module == "__main__" or qualname is not None and (
                not isinstance(qualname, str) or not qualname.isidentifier()):
            continue
        entries.append(f"{name}={module}" + (f":{qualname}" if qualname else ""))
        if len(entries) >= most:
            break
    return entries


def imported(value: Any) -> bool:
    """A module, or a function or class defined outside the notebook (read without running the object's code)."""
    cls = type(value)
    if cls is types.ModuleType:
        return True
    try:
        if cls in (types.FunctionType, types.BuiltinFunctionType):
            module = value.__module__
        elif issubclass(cls, type):
            module = type.__dict__["__module__"].__get__(value, type)  # not a metaclass's own attribute lookup
        else:
            return False
    except Exception:  # a user's class may raise anything when looked at: not importable by name
        return False
    return isinstance(module, str) and module != "__main__"
