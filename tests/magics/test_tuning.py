"""magics/tuning.py: ``%deepagent_eval`` and ``%deepagent_optimize``: notebook examples and metric checked, the
table stored, the metric's failures said (the evaluation and optimisers themselves: tests/tuning/)."""

from __future__ import annotations

import logging

import pytest
from IPython.core.error import UsageError

from deepagent_magics.magics.tuning import _check_metric, _check_threads, _quiet_dspy
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tuning.evaluate import Evaluation
from deepagent_magics.tuning.examples import Metric


def test_threads_must_be_positive():
    _check_threads(1)
    with pytest.raises(UsageError, match="--threads must be positive, got 0"):
        _check_threads(0)


def rows(*errors):
    return [{"system": "deep agent", "example": i, "task": "t", "score": 0.0, "steps": 1, "tokens": 0, "error": error,
             "cost": None, "seconds": 0.0, "result": None, "trajectory": []} for i, error in enumerate(errors)]


def test_a_metric_that_failed_everywhere_is_a_usage_error_and_somewhere_a_line(capsys):
    metric = Metric(lambda example, pred: 1 / 0, "ratio")
    metric.errors.append("ZeroDivisionError: division by zero")
    with pytest.raises(UsageError, match="the metric failed on every example, e.g. ZeroDivisionError"):
        _check_metric(Evaluation(rows("ZeroDivisionError: division by zero"), ["deep agent"]), metric)
    _check_metric(Evaluation(rows("ZeroDivisionError: division by zero", None), ["deep agent"]), metric)
    assert "ratio raised on 1 of 2 runs; those score 0" in capsys.readouterr().out


def test_the_optimisers_log_is_quiet_unless_verbose_and_put_back():
    logger = logging.getLogger("dspy")
    before = logger.level
    with _quiet_dspy(True):
        assert logger.level == logging.ERROR
    assert logger.level == before
    with _quiet_dspy(False):
        assert logger.level == before


def test_an_evaluation_from_the_notebook_is_stored_and_bad_inputs_are_one_line(ip):
    ip.user_ns.update(lm=ScriptedLM([("Answer.", "SUBMIT(result='4')")]), dev=[{"task": "Double 2", "answer": "4"}],
                      exact=lambda example, pred: float(pred.result == example.answer), n=3)
    table = ip.run_line_magic("deepagent_eval", "--devset dev --metric exact --lm lm --threads 1 --out scores")
    assert ip.user_ns["scores"] is table is ip.user_ns["_deepagent_eval"] and table.score() == 1.0
    with pytest.raises(UsageError, match="--metric n: 'n' is a int, not a function"):
        ip.run_line_magic("deepagent_eval", "--devset dev --metric n --lm lm")
    with pytest.raises(UsageError, match="--devset nope: there is no notebook variable"):
        ip.run_line_magic("deepagent_eval", "--devset nope --metric exact --lm lm")
    with pytest.raises(UsageError, match="--baselines: unknown magic"):
        ip.run_line_magic("deepagent_eval", "--devset dev --metric exact --lm lm --baselines magic")
    with pytest.raises(UsageError, match="--max-metric-calls must be positive"):
        ip.run_line_magic("deepagent_optimize", "--trainset dev --metric exact --lm lm --max-metric-calls 0")
