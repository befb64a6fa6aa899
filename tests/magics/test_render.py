"""magics/render.py: a notebook value as text, bounded, without building the whole ``str()`` of a huge container."""

from __future__ import annotations

from collections import deque

import pytest

from deepagent_magics.magics.render import bounded_str


@pytest.mark.parametrize("value", [[1, "a", (2,)], (3,), {"k": [1, 2]}, {1}, frozenset(), deque([1, 2]), [], {}, ()])
def test_a_small_container_reads_as_str_does(value):
    assert bounded_str(value, 1000) == str(value)


def test_a_huge_list_stops_when_the_budget_is_spent_and_says_how_many_more():
    text = bounded_str(list(range(10_000_000)), 50)
    assert text.startswith("[0, 1, 2") and "more)" in text and len(text) < 120


def test_a_huge_string_is_cut_before_it_is_copied():
    assert bounded_str("y" * 1_000_000, 10) == "y" * 11


def test_deep_nesting_ends_in_an_ellipsis():
    value: list = []
    for _ in range(50):
        value = [value]
    assert "..." in bounded_str(value, 10_000)


def test_other_objects_render_through_their_own_str_and_a_wrong_str_is_a_type_error():
    class Named:
        def __str__(self):
            return "named!"

    class Wrong:
        def __str__(self):
            return 3

    assert bounded_str(Named(), 5) == "named!"
    with pytest.raises(TypeError):
        bounded_str(Wrong(), 5)
