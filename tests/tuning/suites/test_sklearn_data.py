"""tuning/suites/sklearn_data.py: the offline suite made from the installed scikit-learn, one question of each kind
first, a file-writing question needing its file."""

from __future__ import annotations

import dspy

from deepagent_magics.core.run.run import Run
from deepagent_magics.tuning.suites.sklearn_data import LOOKED_AT, SklearnData, files_written, halves, interleaved
from deepagent_magics.tuning.suites.sklearn_questions import QUESTIONS


def test_nothing_is_downloaded_and_the_first_tasks_are_one_of_each_kind(tmp_path):
    suite = SklearnData()
    tasks = suite.load(tmp_path)
    kinds = {question.kind for question in QUESTIONS}
    assert [task.meta["kind"] for task in tasks[:len(kinds)]] == list(dict.fromkeys(q.kind for q in QUESTIONS))
    assert suite.present(tmp_path / "sklearn", "all")
    task = tasks[0]
    assert task.prompt.endswith("nothing else.") and suite.score(task, task.gold) == 1.0
    variables = task.prepare(tmp_path / "ws")
    assert set(variables) == set(next(q for q in QUESTIONS if q.id == task.id).datasets)


def test_a_question_that_asks_for_a_file_scores_only_with_the_file_written(tmp_path):
    suite = SklearnData()
    task = next(task for task in suite.load(tmp_path) if task.meta["writes"])
    run = Run("t")
    assert suite.score_prediction(task, dspy.Prediction(result=task.gold, run=run)) == 0.0
    run.record_file(task.meta["writes"][0], 10)
    assert suite.score_prediction(task, dspy.Prediction(result=task.gold, run=run)) == 1.0
    react = dspy.Prediction(trajectory={"tool_name_0": "write_file", "tool_args_0": {"path": "sub/out.png"}})
    assert files_written(react) == {"out.png"}


def test_interleaving_takes_each_kind_in_turn():
    order = [question.kind for question in interleaved(QUESTIONS)]
    kinds = list(dict.fromkeys(question.kind for question in QUESTIONS))
    assert order[:len(kinds)] == kinds and sorted(order) == sorted(question.kind for question in QUESTIONS)


HELD_OUT = ["agg-2", "agg-5", "agg-6", "agg-7", "agg-9", "corr-2", "corr-3", "corr-5", "file-2", "group-2", "group-4",
            "group-5", "group-7", "model-3", "model-5", "model-6", "out-1", "out-2", "out-4", "query-2", "sub-2"]


def test_the_halves_are_even_stratified_fixed_and_the_questions_already_read_are_not_held_out(tmp_path):
    half = halves(QUESTIONS)
    assert sorted(each for each in half if half[each] == "held-out") == HELD_OUT  # the rule's split, never redrawn
    strata = {(question.kind, question.level) for question in QUESTIONS}
    for stratum in strata:  # every kind and level split evenly, the odd one out on either side
        sides = [half[q.id] for q in QUESTIONS if (q.kind, q.level) == stratum]
        assert abs(sides.count("dev") - sides.count("held-out")) <= 1, stratum
    assert {half[each] for each in LOOKED_AT} == {"dev"}  # nobody has read a run of a held-out question
    tasks = SklearnData().load(tmp_path, where={"half": "held-out"})
    assert len(tasks) == len(QUESTIONS) // 2 and {task.meta["half"] for task in tasks} == {"held-out"}
    first = [task.id for task in SklearnData().load(tmp_path, where={"half": "dev"}, limit=3)]
    assert first == list(LOOKED_AT)  # the development half's first three are the three measured before
