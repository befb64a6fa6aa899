"""interpreters/wire.py: what can travel between the host and a kernel as JSON, converted as DSPy converts it;
never a value silently turned into its str."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import ipaddress
import json
import math
import pathlib
import uuid

import pytest

from deepagent_magics.interpreters.wire import NotCarried, as_data, as_text, dumps, to_wire


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: tuple


Pair = collections.namedtuple("Pair", "a b")


def test_common_python_values_become_plain_json_data():
    value = {"p": Point(1, (2, 3)), "pair": Pair(1, 2), "s": {3, 1}, "d": collections.deque([1]),
             "when": datetime.date(2024, 1, 2), "dt": datetime.timedelta(minutes=1), "c": Color.RED,
             "u": uuid.UUID(int=1), "dec": decimal.Decimal("1.5"), "path": pathlib.PurePosixPath("/a"),
             "ip": ipaddress.IPv4Address("127.0.0.1"), "b": b"text", 1: "int key", None: "none key"}
    wired = to_wire(value)
    assert wired == {"p": {"x": 1, "y": [2, 3]}, "pair": {"a": 1, "b": 2}, "s": [1, 3], "d": [1],
                     "when": "2024-01-02", "dt": 60.0, "c": "red", "u": str(uuid.UUID(int=1)), "dec": "1.5",
                     "path": "/a", "ip": "127.0.0.1", "b": "text", "1": "int key", "null": "none key"}
    assert json.loads(dumps(value)) == wired


@pytest.mark.parametrize("value, says", [(math.nan, "which JSON cannot carry"), (object(), "cannot travel as JSON"),
                                         (b"\xff", "not UTF-8"), ({(1, 2): 3}, "dict key of type tuple"),
                                         (decimal.Decimal("inf"), "cannot carry")])
def test_what_json_cannot_carry_is_refused_by_name(value, says):
    with pytest.raises(NotCarried, match=says):
        to_wire(value, "the result")


def test_too_deep_is_refused():
    deep: list = []
    for _ in range(150):
        deep = [deep]
    with pytest.raises(NotCarried, match="nested too deeply"):
        to_wire(deep)


def test_as_data_sends_what_json_cannot_carry_as_text_that_says_so():
    data = as_data({"ok": 1, "bad": object(), "nan": math.nan, (1, 2): "tuple key"})
    assert data["ok"] == 1 and data["bad"].startswith("<object, sent as text> ")
    assert data["nan"] == "<float, sent as text> nan"
    assert "<tuple, sent as text> (1, 2)" in data
    assert as_text("x" * 200_000).endswith("more characters)")
