"""tuning/suites/dabstep.py: DABstep's scorer (numbers, lists, text) and its tasks over the payments data."""

from __future__ import annotations

import pytest

from deepagent_magics.tuning.suites.dabstep import DABstep, first_number, looks_numeric, question_scorer
from tests.adversarial import bench_data


@pytest.mark.parametrize("answer, gold, right", [
    ("3730.75", "3730.75", True), ("3,730.75", "3730.75", True), ("3730.7", "3730.75", True),
    ("3740", "3730.75", False), ("3731", "3730.75", True), ("BE, NL", "NL, BE", True),
    ("crossfit_hanna.", "Crossfit_Hanna", True),
    ("0.12345", "0.1235", True), ("Belgium", "Netherlands", False), (None, "1", False), ("42", None, False),
])
def test_the_benchmarks_own_rule(answer, gold, right):
    assert question_scorer(answer, gold) is right


def test_numbers_are_found_as_the_rule_finds_them():
    assert looks_numeric("1,000") and looks_numeric("0,99") and not looks_numeric("12")
    assert first_number("$1,234.5 EUR") == 1234.5 and first_number("none") is None


def test_tasks_come_with_the_context_files_and_a_withheld_split_has_no_answers(tmp_path):
    right = bench_data.dabstep(tmp_path)
    suite = DABstep()
    tasks = {task.id: task for task in suite.load(tmp_path, split="dev")}
    assert suite.score(tasks["2"], right["2"]) == 1.0 and suite.score(tasks["2"], "3000") == 0.0
    variables = tasks["1"].prepare(tmp_path / "ws")
    assert "payments" in variables and (tmp_path / "ws" / "payments.csv").is_file()
    assert all(task.gold in (None, "") for task in suite.load(tmp_path, split="default"))
