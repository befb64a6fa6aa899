"""core/policy/fingerprint.py: content digests of the user's objects and snapshots put back into the same objects."""

from __future__ import annotations

import numpy as np
import pandas as pd

from deepagent_magics.core.policy.fingerprint import Ref, fingerprint, kind, restore, size_of, snapshot


class Point:
    def __init__(self, x):
        self.x = x


class Slotted:
    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a


def test_what_is_tracked_and_what_is_not():
    assert [kind(v) for v in ([], {}, set(), np.zeros(2), pd.DataFrame(), pd.Series(dtype=int), Point(1), Slotted(1))] == [
        "list", "dict", "set", "ndarray", "DataFrame", "Series", "object", "object"]
    assert kind(3) is None and kind((1,)) is None and kind(len) is None and kind(np) is None


def test_a_fingerprint_changes_with_content_not_identity():
    assert fingerprint([1, [2]]) == fingerprint([1, [2]]) != fingerprint([1, [3]])
    assert fingerprint(np.arange(4)) != fingerprint(np.arange(4)[::-1].copy())
    assert fingerprint(pd.DataFrame({"a": [1]})) != fingerprint(pd.DataFrame({"a": [2]}))
    assert fingerprint(Point(1)) != fingerprint(Point(2)) and fingerprint(Slotted(1)) != fingerprint(Slotted(2))
    assert fingerprint("text") is None


def test_a_snapshot_puts_content_back_into_the_same_object_and_its_parts():
    inner = [1]
    outer = {"inner": inner, "n": 1}
    saved = snapshot(outer, 10_000)
    inner.append(2)
    outer["n"] = 5
    outer["new"] = 0
    assert restore(outer, saved)
    assert outer == {"inner": [1], "n": 1} and outer["inner"] is inner
    part = {"k": 1}
    rows = [part, 2]
    saved = snapshot(rows, 10_000)
    part["k"] = 9
    rows.append(3)
    assert restore(rows, saved) and rows == [{"k": 1}, 2] and rows[0] is part  # the user's reference sees it


def test_arrays_frames_and_objects_are_restored_in_place():
    array, frame, point = np.arange(3), pd.DataFrame({"a": [1, 2]}), Point([1])
    saved = [snapshot(value, 10_000) for value in (array, frame, point)]
    array[0] = 99
    frame.loc[0, "a"] = 99
    point.x.append(2)
    point.y = 3
    assert all(restore(value, snap) for value, snap in zip((array, frame, point), saved))
    assert array.tolist() == [0, 1, 2] and frame["a"].tolist() == [1, 2] and point.x == [1] and not hasattr(point, "y")


def test_too_big_or_untracked_has_no_snapshot():
    assert snapshot(list(range(100_000)), 1000) is None
    assert snapshot(3, 1000) is None
    assert size_of(list(range(10)), 10 ** 9) > 0


def test_a_ref_keeps_big_unreferenceable_objects_only_by_identity():
    big = list(range(10_000))
    ref = Ref(big, limit=100)
    assert ref.get() is None and ref.matches(big) and not ref.matches(list(big))
    small = [1]
    assert Ref(small, limit=10_000).get() is small
    point = Point(1)
    assert Ref(point, limit=0).get() is point  # weakly
