"""magics/inputs/interpolation.py: ``{name}`` in a cell replaced by the user's value, and what the cell says of it."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from deepagent_magics.magics.inputs.interpolation import (
    MAX_INTERPOLATED_CHARS,
    expansion_line,
    interpolate,
    interpolate_task,
)


def test_names_are_replaced_by_their_values_and_double_braces_are_literal():
    assert interpolate("Sum {xs} into {{total}}", {"xs": [1, 2]}) == "Sum [1, 2] into {total}"


def test_a_name_an_agent_made_is_left_as_written_and_said_so():
    text, expanded, kept = interpolate_task("use {mine} and {made}", {"mine": 1, "made": 2}, agent_names=["made"])
    assert text == "use 1 and {made}" and expanded == ["mine"] and kept == ["made"]


def test_an_unknown_name_is_one_usage_error_line():
    with pytest.raises(UsageError, match=r"\{nope\} in the cell is not a notebook variable"):
        interpolate("{nope}", {})


def test_a_value_whose_str_fails_is_one_line_naming_its_type():
    class Broken:
        def __str__(self):
            raise RuntimeError("no text\nsecond line")

    with pytest.raises(UsageError) as caught:
        interpolate("{b}", {"b": Broken()})
    assert "str() of the Broken failed (RuntimeError: no text)" in str(caught.value)


def test_a_long_value_is_cut_and_names_the_variable():
    text = interpolate("{big}", {"big": "x" * (MAX_INTERPOLATED_CHARS * 3)})
    assert text.startswith("x" * MAX_INTERPOLATED_CHARS)
    assert text.endswith("(truncated; the full value is the variable `big`)")
    assert len(text) < MAX_INTERPOLATED_CHARS + 100


def test_the_cell_says_what_it_expanded_and_what_it_left():
    assert expansion_line({}, [], []) is None
    line = expansion_line({"a": 1, "b": "x"}, ["a", "b", "a"], ["m"])
    assert line == ("deepagent: expanded {a} (int), {b} (str); left {m} as written (an agent run made it, not you)")
    many = expansion_line({f"v{i}": i for i in range(10)}, [f"v{i}" for i in range(10)], [])
    assert many.endswith("and 2 more")
