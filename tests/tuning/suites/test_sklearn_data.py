"""tuning/suites/sklearn_data.py: the offline suite made from the installed scikit-learn, one question of each kind
first, a file-writing question needing its file."""

from __future__ import annotations

import dspy

from deepagent_magics.core.run.run import Run
from deepagent_magics.tuning.suites.sklearn_data import SklearnData, files_written, interleaved
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
