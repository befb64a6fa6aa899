"""tuning/examples.py: notebook examples and metrics in the shapes DSPy's evaluation and optimisers expect."""

from __future__ import annotations

import math

import dspy
import pytest

from deepagent_magics.errors import UserError
from deepagent_magics.tuning.examples import ExamplesError, Metric, as_examples


def test_dicts_and_examples_become_examples_whose_inputs_are_task_and_context():
    examples = as_examples([{"task": "a", "answer": "1"}, dspy.Example(task="b", context="c", answer="2")])
    assert set(examples[0].inputs().keys()) == {"task"} and set(examples[1].inputs().keys()) == {"task", "context"}
    assert examples[1].labels().answer == "2"


@pytest.mark.parametrize("items, says", [("text", "must be a list"), ({"task": "a"}, "must be a list"), ([], "is empty"),
                                         ([3], "dev[0] is a int"), ([{"answer": 1}], "dev[0] has no 'task' text"),
                                         ([{"task": "  "}], "has no 'task' text")])
def test_examples_of_the_wrong_shape_say_what_to_fix(items, says):
    with pytest.raises(ExamplesError) as caught:
        as_examples(items, "dev")
    assert says in str(caught.value)
    assert issubclass(ExamplesError, UserError)


def test_a_metric_is_called_with_the_arguments_it_takes():
    seen = []
    two = Metric(lambda example, pred: seen.append(2) or 1)
    three = Metric(lambda example, pred, trace: seen.append(3) or True)
    anything = Metric(lambda *args: seen.append(len(args)) or 0.5)
    example, pred = dspy.Example(task="t"), dspy.Prediction(result="r")
    assert [m.score(example, pred, None, "p", []).score for m in (two, three, anything)] == [1.0, 1.0, 0.5]
    assert seen == [2, 3, 5]


def test_a_metric_that_raises_or_returns_nonsense_scores_zero_and_keeps_why():
    broken = Metric(lambda e, p: 1 / 0, "ratio")
    assert broken.score(dspy.Example(task="t"), None).score == 0.0
    assert broken.errors == ["ratio raised ZeroDivisionError: division by zero"]
    odd = Metric(lambda e, p: "great", "words")
    assert odd.score(dspy.Example(task="t"), None).error.startswith("words returned 'great'")
    assert Metric(lambda e, p: math.nan).score(dspy.Example(task="t"), None).score == 0.0
    with pytest.raises(TypeError):
        Metric(3)


def test_feedback_reaches_gepa_and_a_number_reaches_bootstrap():
    metric = Metric(lambda e, p: dspy.Prediction(score=0.25, feedback="too long"))
    gold = dspy.Example(task="t")
    assert metric.for_bootstrap(gold, None) == 0.25
    assert metric.for_gepa(gold, None).feedback == "too long"
    assert Metric(lambda e, p: 1).for_gepa(gold, None).feedback == "The answer scored 1."
