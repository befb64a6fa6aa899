"""The quality benchmark scores each suite by the suite's own published rule, edge cases included.

DABstep: near-exact match (numbers with thousands separators, currency and percent signs,
rounding to the shorter answer's decimals, 1e-4 tolerance; lists in any order; case and
punctuation). InfiAgent-DABench: ``@name[value]`` parts, 1e-6 on numbers, every part right.
OOLONG: the answer after the last colon, 0.75**|error| partial credit on counts, dates.
"""

from __future__ import annotations

import pytest

from deepagent_magics.tuning.suites.suite import Task
from deepagent_magics.tuning.suites.dabench import DABench, extract, sub_answers
from deepagent_magics.tuning.suites.dabstep import question_scorer
from deepagent_magics.tuning.suites.oolong import parse_answer, synth_score

DABSTEP_RIGHT = [
    ("1000", "1,000"), ("1,000", "1000"), ("12345.67", "12,345.67"), ("$1,234.50", "1234.5"),
    ("45.5%", "45.5"), ("3.14159", "3.14"),
    ("3730.80", "3730.75"),  # the scorer rounds both to the shorter answer's decimals (3730.8): its own leniency
    ("1000050.0", "1000000.0"), ("0.12345", "0.1234"),
    ("The fee is 12 euros", "12"), ("BE, NL", "NL, BE"), ("[A, B]", "A, B"), ("A; B", "A, B"),
    ("1.0, 2", "1, 2.00"), ("crossfit_hanna", "Crossfit_Hanna"), ("NexPay.", "nexpay"),
    ("GlobalCard", "The card scheme is GlobalCard"), ("  Not Applicable ", "not applicable"),
]
DABSTEP_WRONG = [
    ("13", "12"), ("3.15", "3.14159"), ("0.124", "0.1234"), ("1,100", "1000"), ("BE", "BE, NL"),
    ("A, B, C", "A, B"), ("NL, FR", "NL, BE"), ("", "12"), (None, "12"), ("Belles_cookbook_store", "Crossfit_Hanna"),
    ("1200000.0", "1000000.0"),
]


@pytest.mark.parametrize("answer, gold", DABSTEP_RIGHT)
def test_dabstep_counts_the_answers_its_own_scorer_counts(answer, gold):
    assert question_scorer(answer, gold) is True


@pytest.mark.parametrize("answer, gold", DABSTEP_WRONG)
def test_dabstep_refuses_the_answers_its_own_scorer_refuses(answer, gold):
    assert question_scorer(answer, gold) is False


def test_dabstep_scores_an_answer_that_is_not_text():
    assert question_scorer(3, "3") and question_scorer(3730.75, "3,730.75") and not question_scorer(["x"], "y")


def _dabench_task(labels):
    return Task("0", "q", labels)


@pytest.mark.parametrize("answer, score", [
    ("@mean_fare[20.00]", 1.0),
    ("The mean is @mean_fare[20.0000000001].", 1.0),  # within 1e-6
    ("@mean_fare[20.01]", 0.0),
    ("mean_fare = 20.00", 0.0),  # not in the @name[value] form
    ("@mean_fare[1,000]", 0.0),  # the grader compares text or floats: a thousands separator is wrong
    ("", 0.0),
    (None, 0.0),
])
def test_dabench_grades_one_part_as_its_auto_grader(answer, score):
    assert DABench().score(_dabench_task({"mean_fare": "20.00"}), answer) == score


def test_dabench_counts_a_question_only_when_every_part_is_right():
    labels = {"mean_close_price": "7.00", "is_normal": "yes"}
    task = _dabench_task(labels)
    assert DABench().score(task, "@mean_close_price[7] @is_normal[yes]") == 1.0
    assert DABench().score(task, "@mean_close_price[7] @is_normal[Yes]") == 0.0  # text compares exactly
    assert DABench().score(task, "@mean_close_price[7]") == 0.0  # a missing part
    assert sub_answers("@mean_close_price[7] @is_normal[no]", labels) == {"mean_close_price": True, "is_normal": False}
    assert extract("@a[1] then @a[2]") == {"a": "2"}


@pytest.mark.parametrize("output, gold, kind, score", [
    ("Label: entity", "['entity']", "ANSWER_TYPE.LABEL", 1.0),
    ("Label: **[entity]**", "['entity']", "ANSWER_TYPE.LABEL", 1.0),
    ("**Label:** entity", "['entity']", "ANSWER_TYPE.LABEL", 0.0),  # as the benchmark's parser: a space is left
    ("entity", "['entity']", "ANSWER_TYPE.LABEL", 1.0),
    ("After counting every line, the most common label is entity", "['entity']", "ANSWER_TYPE.LABEL", 1.0),
    ("Label: location", "['entity']", "ANSWER_TYPE.LABEL", 0.0),
    ("Answer: 40", "[40]", "ANSWER_TYPE.NUMERIC", 1.0),
    ("Answer: 42", "[40]", "ANSWER_TYPE.NUMERIC", 0.75 ** 2),
    ("Answer: 30", "[40]", "ANSWER_TYPE.NUMERIC", 0.75 ** 10),
    ("Answer: many", "[40]", "ANSWER_TYPE.NUMERIC", 0.0),
    ("Answer: 40.0", "[40]", "ANSWER_TYPE.NUMERIC", 0.0),
    ("Answer: the label entity is more common than location", "['more common than']", "ANSWER_TYPE.COMPARISON", 1.0),
    ("Answer: the label entity is less common than location", "['more common than']", "ANSWER_TYPE.COMPARISON", 0.0),
    ("Date: Jan 5, 2023", "[datetime.date(2023, 1, 5)]", "ANSWER_TYPE.DATE", 1.0),
    ("Date: Jan 6, 2023", "[datetime.date(2023, 1, 5)]", "ANSWER_TYPE.DATE", 0.0),
    ("Date: someday", "[datetime.date(2023, 1, 5)]", "ANSWER_TYPE.DATE", 0.0),
    ("", "[3]", "ANSWER_TYPE.NUMERIC", 0.0),
])
def test_oolong_scores_as_its_synth_scorer(output, gold, kind, score):
    assert synth_score({"answer": gold, "answer_type": kind}, output) == pytest.approx(score)


def test_oolong_takes_the_answer_after_the_last_colon():
    assert parse_answer("Reasoning: lots. Answer: 7") == "7"
    assert parse_answer("x" * 30) == "x" * 30  # long and without a colon: its last word
    assert parse_answer("word " * 10 + "last") == "last"
