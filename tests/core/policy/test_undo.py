"""core/policy/undo.py: taking a run back, only what is still as it left it (through real runs:
tests/adversarial/test_undo_only_the_run.py)."""

from __future__ import annotations

import pytest

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.policy.undo import AlreadyUndone, UndoReport, undo, why


def run_code(tmp_path, namespace, code):
    lm = ScriptedLM([("Do it.", code), ("Done.", "SUBMIT(result='ok')")])
    return DeepAgent(lm=lm, workspace=tmp_path).run("change things", namespace=namespace)


def test_what_the_run_made_goes_and_what_it_changed_in_place_comes_back(tmp_path):
    namespace = {"rows": [1, 2, 3]}
    original = namespace["rows"]
    run = run_code(tmp_path, namespace, "total = 6\nrows.append(4)")
    report = undo(run, namespace)
    assert report.removed == ["total"] and report.restored == ["rows"]
    assert "total" not in namespace and namespace["rows"] is original and original == [1, 2, 3]
    with pytest.raises(AlreadyUndone):
        undo(run, namespace)


def test_what_the_user_set_or_changed_since_is_kept_and_named(tmp_path):
    namespace = {"rows": [1]}
    run = run_code(tmp_path, namespace, "made = [0]\nrows.append(2)")
    namespace["made"].append("mine")
    namespace["rows"].append(3)
    report = undo(run, namespace)
    assert report.changed_since == ["made (by you)", "rows (by you)"]
    assert namespace["made"] == [0, "mine"] and namespace["rows"] == [1, 2, 3]


def test_a_later_runs_change_is_taken_back_first(tmp_path):
    namespace = {"rows": [1]}
    first = run_code(tmp_path, namespace, "rows.append(2)")
    second = run_code(tmp_path, namespace, "rows.append(3)")
    report = undo(first, namespace, later=[second])
    assert report.changed_since == [f"rows (by run {second.id}: undo it first)"]
    undo(second, namespace)
    assert namespace["rows"] == [1, 2]
    assert undo(first, namespace, later=[second]).restored == ["rows"]  # asked again: what waited is done
    assert namespace["rows"] == [1]


def test_why_finds_the_newest_change_to_a_name(tmp_path):
    namespace = {}
    first = run_code(tmp_path, namespace, "x = 1")
    second = run_code(tmp_path, namespace, "x = 2")
    found_run, change = why([first, second], "x")
    assert found_run is second and change["kind"] in ("created", "rebound")
    assert why([first], "y") is None


def test_the_report_says_each_kind_of_outcome_in_a_line():
    report = UndoReport(removed=["a"], not_restored=["big"])
    assert report.parts() == ["removed the names it created: a",
                              "changed in place and NOT restored (no snapshot: bigger than the undo limit, or not "
                              "copyable): big"]
