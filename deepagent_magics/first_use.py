"""Names a package gives on first use (PEP 562): its module imported when a name is first asked for.

A package's ``__init__`` that named its classes by importing their modules would load them, and
everything they import (DSPy, LiteLLM, Jupyter's clients), for whoever imports anything of the
package: ``deepagent --help`` would wait seconds for a library it never calls. Such a package
declares its names instead, each with the module (relative to the package) that defines it:

    ON_FIRST_USE = {"DeepAgent": "loop.agent", "Run": "run.run"}
    __getattr__, __dir__ = first_use(__name__, ON_FIRST_USE)

``from package import DeepAgent`` and ``package.DeepAgent`` work as before; the module is imported
the first time, once. `tests/test_architecture.py` reads ``ON_FIRST_USE`` as imports of the package,
so the rooms' rules hold for them too.

A name that is also a submodule's (``tuning.evaluate``, the function of ``tuning/evaluate.py``)
needs one thing more: importing the submodule sets the package's attribute of that name to the
module, which an eager ``__init__`` overwrote with the function but a lazy one would not. For such
names the package's module becomes a subclass of its type whose property keeps the function in its
place (what it was: `ModuleType`, with nothing outside the package changed).
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path
from typing import Any, Callable, Mapping


def first_use(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` giving ``names`` (name -> its module)."""
    module = sys.modules[package]

    def load(name: str) -> Any:
        return getattr(importlib.import_module(f"{package}.{names[name]}"), name)

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = load(name)
        setattr(module, name, value)  # the next use finds it without asking
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(module), *names})

    folder = Path(module.__file__).parent
    shadowed = [name for name in names if (folder / f"{name}.py").exists() or (folder / name).is_dir()]
    if shadowed:
        module.__class__ = _kept_in_place(module, shadowed, load)
    return __getattr__, __dir__


def _kept_in_place(module: types.ModuleType, names: list[str], load: Callable[[str], Any]) -> type:
    """A subclass of the module's type with a property per name: the package's value, whatever a submodule's
    import sets (a value the user sets is kept: a test's stand-in)."""
    held: dict[str, Any] = {}

    def attribute(name: str) -> property:
        def get(self: types.ModuleType) -> Any:
            if name not in held:
                held[name] = load(name)
            return held[name]

        def put(self: types.ModuleType, value: Any) -> None:
            if not (isinstance(value, types.ModuleType) and value.__name__ == f"{module.__name__}.{name}"):
                held[name] = value  # (the import system naming the submodule changes nothing)

        return property(get, put)

    return type(type(module).__name__, (type(module),), {name: attribute(name) for name in names})
