"""first_use.py: a package's names, each imported from its module the first time it is asked for.

A package of the test's own (written to a temporary folder) so that what is imported when is seen
from the outside, in ``sys.modules``; the package's own use of it: tests/test_start_fast.py."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from deepagent_magics.first_use import first_use


@pytest.fixture
def package(tmp_path, monkeypatch):
    """``lazy_pkg`` whose ``__init__`` names ``Thing`` (in ``heavy``) and ``helper`` (in ``sub.tools``)."""
    root = tmp_path / "lazy_pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text(textwrap.dedent("""
        from deepagent_magics.first_use import first_use

        ON_FIRST_USE = {"Thing": "heavy", "helper": "sub.tools"}
        __getattr__, __dir__ = first_use(__name__, ON_FIRST_USE)
    """))
    (root / "heavy.py").write_text("LOADS = []\nclass Thing:\n    pass\nLOADS.append('heavy')\n")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "tools.py").write_text("def helper():\n    return 'helped'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "lazy_pkg"
    for name in [name for name in sys.modules if name == "lazy_pkg" or name.startswith("lazy_pkg.")]:
        del sys.modules[name]


def test_a_name_is_imported_when_first_asked_for_and_once(package):
    lazy = importlib.import_module(package)
    assert "lazy_pkg.heavy" not in sys.modules and "lazy_pkg.sub.tools" not in sys.modules
    from lazy_pkg import Thing  # noqa: the from-import goes through the module's __getattr__

    heavy = sys.modules["lazy_pkg.heavy"]
    assert Thing is heavy.Thing and lazy.Thing is Thing
    assert "Thing" in vars(lazy)  # kept: the next use does not ask again
    assert lazy.helper() == "helped" and "lazy_pkg.sub.tools" in sys.modules
    assert heavy.LOADS == ["heavy"]


def test_an_unknown_name_is_an_attribute_error_and_dir_lists_the_names_not_yet_imported(package):
    lazy = importlib.import_module(package)
    with pytest.raises(AttributeError, match="module 'lazy_pkg' has no attribute 'Nothing'"):
        lazy.Nothing  # noqa: B018
    with pytest.raises(ImportError):
        exec("from lazy_pkg import Nothing", {})
    assert {"Thing", "helper", "ON_FIRST_USE"} <= set(dir(lazy))
    assert not hasattr(lazy, "Nothing")  # hasattr and getattr(..., default) work as for any module
    assert "lazy_pkg.heavy" not in sys.modules  # dir() imports nothing


def test_a_name_whose_module_cannot_be_imported_says_so_each_time(package, tmp_path):
    (tmp_path / "lazy_pkg" / "heavy.py").write_text("raise ImportError('a library is missing')\n")
    lazy = importlib.import_module(package)
    for _ in range(2):
        with pytest.raises(ImportError, match="a library is missing"):
            lazy.Thing  # noqa: B018


def test_the_functions_are_those_of_one_package():
    getattr_, dir_ = first_use("deepagent_magics", {"DeepAgent": "core.loop.agent"})
    assert getattr_("DeepAgent").__name__ == "DeepAgent"
    assert "DeepAgent" in dir_() and "load_ipython_extension" in dir_()


@pytest.fixture
def shadowing(tmp_path, monkeypatch):
    """``shadow_pkg`` naming ``evaluate``, the function of its own submodule ``evaluate.py`` (as tuning does)."""
    root = tmp_path / "shadow_pkg"
    root.mkdir()
    (root / "__init__.py").write_text(textwrap.dedent("""
        from deepagent_magics.first_use import first_use

        ON_FIRST_USE = {"evaluate": "evaluate"}
        __getattr__, __dir__ = first_use(__name__, ON_FIRST_USE)
    """))
    (root / "evaluate.py").write_text("def evaluate():\n    return 'scored'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "shadow_pkg"
    for name in [name for name in sys.modules if name == "shadow_pkg" or name.startswith("shadow_pkg.")]:
        del sys.modules[name]


def test_a_name_that_is_also_a_submodules_stays_the_function_whatever_imports_the_submodule(shadowing):
    """Importing ``shadow_pkg.evaluate`` sets the package's attribute to the module; the name stays the function
    (as an eager ``from .evaluate import evaluate`` left it), and a stand-in a test sets is kept."""
    package = importlib.import_module(shadowing)
    module = importlib.import_module("shadow_pkg.evaluate")  # the import system sets package.evaluate = module
    assert package.evaluate is module.evaluate and package.evaluate() == "scored"
    from shadow_pkg import evaluate

    assert evaluate is module.evaluate
    package.evaluate = lambda: "stand-in"
    importlib.reload(module)  # the submodule imported again: the stand-in stays
    assert package.evaluate() == "stand-in" and isinstance(package, type(sys))
