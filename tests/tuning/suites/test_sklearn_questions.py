"""tuning/suites/sklearn_questions.py: each question's reference answer computed from the data, in its format."""

from __future__ import annotations

from deepagent_magics.tuning.suites.sklearn_data import SklearnData, read_data
from deepagent_magics.tuning.suites.sklearn_questions import QUESTIONS, r


def test_every_question_has_a_reference_answer_on_the_real_data(tmp_path):
    suite = SklearnData()
    suite.download(tmp_path, "all")
    data = read_data(tmp_path)
    answers = {question.id: str(question.reference(data)) for question in QUESTIONS}
    assert all(answer.strip() for answer in answers.values())
    assert len(set(question.id for question in QUESTIONS)) == len(QUESTIONS)
    assert {question.level for question in QUESTIONS} <= {"easy", "hard"}
    assert r(3.14159, 2) == "3.14"


def test_a_reference_reads_the_data_it_is_given():
    iris = next(question for question in QUESTIONS if "iris" in question.datasets and question.kind == "aggregate")
    import pandas as pd
    from sklearn.datasets import load_iris

    frame = load_iris(as_frame=True).frame
    first = str(iris.reference({"iris": frame}))
    assert first != str(iris.reference({"iris": pd.concat([frame, frame * 2])}))
