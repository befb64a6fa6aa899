"""The notebook summary in the prompt: informative, bounded, and never touching the data."""

from __future__ import annotations

import sys

from deepagent_magics.core.loop.variables import describe, summarize_namespace


class Untouchable:
    """Fails the test if the summary stringifies or iterates it."""

    shape = (10_000_000, 3)

    def __repr__(self):
        raise AssertionError("repr() of a large object")

    __str__ = __repr__

    def __iter__(self):
        raise AssertionError("iterated a large object")


def test_each_variable_gets_its_type_size_and_a_preview():
    ns = {
        "n": 42,
        "name": "Ada Lovelace",
        "rows": [{"region": "N", "q3": 1.5}] * 3,
        "lookup": {"a": 1, "b": 2},
        "blob": b"x" * 2048,
        "_private": 1,
        "sys": sys,
        "helper": lambda: 1,
    }
    text = summarize_namespace(ns)
    assert "- n: int = 42" in text
    assert "- name: str, 12 chars = 'Ada Lovelace'" in text
    assert "- rows: list, 3 items = [{'region': 'N', 'q3': 1.5}, " in text
    assert "- lookup: dict, 2 items = {'a': 1, 'b': 2}" in text
    assert "- blob: bytes, 2,048 bytes" in text
    assert "_private" not in text
    assert "Modules: sys" in text and "Functions and classes: helper" in text


def test_large_objects_are_described_without_being_stringified_or_iterated():
    ns = {"frame": Untouchable(), "nested": [Untouchable(), [Untouchable()]]}
    text = summarize_namespace(ns)
    label = f"{Untouchable.__module__.split('.')[0]}.Untouchable"  # the top-level module, as for pandas.DataFrame
    assert f"frame: {label}, shape (10000000, 3)" in text
    assert f"nested: list, 2 items = [{label}, [{label}]]" in text


def test_long_strings_are_previewed_not_copied():
    text = describe("x" * 50_000_000)
    assert text.startswith("str, 50,000,000 chars = 'xxxx")
    assert len(text) < 150


def test_the_summary_is_bounded_however_many_variables_there_are():
    ns = {f"v{i}": list(range(100)) for i in range(1000)}
    text = summarize_namespace(ns)
    assert len(text) < 8000
    assert "more variables" in text


def test_an_empty_notebook_says_so():
    assert summarize_namespace({"In": [], "Out": {}}) == "(the notebook has no user variables yet)"
