"""_compat.py: the old module paths, found through the package's own ``__path__`` (no import hook), each with a
warning naming the new path (that importing changes nothing outside the package: tests/test_init.py)."""

from __future__ import annotations

import importlib
import sys

import pytest

import deepagent_magics
from deepagent_magics import _compat
from deepagent_magics._compat import MOVED, OLD_PATHS, _MovedFinder, old_paths


@pytest.fixture
def fresh():
    names = []
    yield names
    for name in names:
        sys.modules.pop(name, None)


def test_an_old_path_holds_the_new_modules_names_the_first_ones_winning(fresh):
    fresh.append("deepagent_magics.run")
    sys.modules.pop("deepagent_magics.run", None)
    with pytest.warns(DeprecationWarning, match="deepagent_magics.run moved to deepagent_magics.core.run.run; the old "
                                                "path goes away in the next release"):
        old = importlib.import_module("deepagent_magics.run")
    from deepagent_magics.core.run.run import Run
    from deepagent_magics.interpreters.step_execution import StepInterpreter

    assert old.Run is Run and old.StepInterpreter is StepInterpreter
    assert old.__doc__ == "Deprecated alias of deepagent_magics.core.run.run."


def test_the_entry_is_on_the_path_of_each_package_whose_modules_moved_once():
    for parent in {old.rpartition(".")[0] for old in MOVED} - {"magics"}:
        package = importlib.import_module(f"deepagent_magics.{parent}" if parent else "deepagent_magics")
        assert package.__path__.count(OLD_PATHS) == 1
    import deepagent_magics.magics

    assert deepagent_magics.magics.__path__.count(OLD_PATHS) == 1
    assert old_paths(["a", OLD_PATHS]) == ["a", OLD_PATHS] and old_paths(["a"]) == ["a", OLD_PATHS]
    assert deepagent_magics.__spec__.submodule_search_locations.count(OLD_PATHS) == 0  # the spec is left as it was


def test_only_moved_names_of_this_package_are_served_and_a_cache_reset_keeps_them():
    finder = _MovedFinder()
    assert finder.find_spec("deepagent_magics.no_such_module") is None
    assert finder.find_spec("other_package.kernel_pool") is None
    assert finder.find_spec("deepagent_magics.kernel_pool") is not None
    importlib.invalidate_caches()
    assert isinstance(sys.path_importer_cache[OLD_PATHS], _MovedFinder)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("deepagent_magics.no_such_module")
    assert _compat.PACKAGE == deepagent_magics.__name__
