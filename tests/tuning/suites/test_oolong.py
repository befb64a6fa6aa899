"""tuning/suites/oolong.py: OOLONG-synth's answer extraction and partial credit (the long context end to end:
tests/adversarial/test_bench_suites.py)."""

from __future__ import annotations

from deepagent_magics.tuning.suites.oolong import gold_value, parse_answer, synth_score


def test_the_answer_is_taken_as_the_benchmark_takes_it():
    assert parse_answer("Answer: location") == "location"
    assert parse_answer("Label: **[entity]**") == "entity"
    assert parse_answer("short") == "short"
    assert parse_answer("a very long answer without a colon: it is the location that is more common than entity") == \
        "more common"


def test_numbers_get_partial_credit_and_comparisons_must_match():
    row = {"answer": "[12]", "answer_type": "ANSWER_TYPE.NUMERIC"}
    assert synth_score(row, "Answer: 12") == 1.0
    assert synth_score(row, "Answer: 14") == 0.75 ** 2
    assert synth_score(row, "Answer: many") == 0.0
    assert synth_score({"answer": "['more common']", "answer_type": "ANSWER_TYPE.COMPARISON"}, "Answer: more common") == 1.0
    assert synth_score({"answer": "['less common']", "answer_type": "ANSWER_TYPE.COMPARISON"}, "Answer: more common") == 0.0
    assert gold_value("[datetime.date(2023, 1, 5)]").day == 5
