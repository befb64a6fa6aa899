"""Examples and metrics from the notebook, in the shapes DSPy's evaluation and optimisers expect.

An example is a dict or a ``dspy.Example`` with a ``task`` (and optionally a
``context``); its other fields are what the metric compares against. A metric
is ``metric(example, pred)`` (or ``(example, pred, trace)``) returning a number, a
bool, or ``dspy.Prediction(score=..., feedback=...)``; ``pred.result`` is the
system's answer. A metric that raises scores that example zero and the error is kept.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import dspy

from ..errors import UserError

INPUTS = ("task", "context")


class ExamplesError(UserError, ValueError):
    """Examples of the wrong shape; the message says what to fix."""


def as_examples(items: Any, name: str = "examples") -> list[dspy.Example]:
    """``items`` as ``dspy.Example``s whose inputs are ``task`` (and ``context`` when present)."""
    if isinstance(items, (str, bytes, dict)) or not isinstance(items, Iterable):
        raise ExamplesError(f"{name} must be a list of examples (dicts or dspy.Example with a 'task'), "
                            f"not {type(items).__name__}")
    examples = []
    for index, item in enumerate(items):
        if isinstance(item, dspy.Example):
            fields = dict(item.items(include_dspy=False))
        elif isinstance(item, dict):
            fields = dict(item)
        else:
            raise ExamplesError(f"{name}[{index}] is a {type(item).__name__}; each example must be a dict "
                                "or dspy.Example with a 'task'")
        if not isinstance(fields.get("task"), str) or not fields["task"].strip():
            raise ExamplesError(f"{name}[{index}] has no 'task' text; each example needs a 'task' "
                                "(what the agent is asked) and the fields your metric expects")
        examples.append(dspy.Example(**fields).with_inputs(*[key for key in INPUTS if key in fields]))
    if not examples:
        raise ExamplesError(f"{name} is empty: give it at least one example")
    return examples


@dataclass
class Score:
    score: float
    feedback: str | None = None
    error: str | None = None  # the metric raised: the score is zero


class Metric:
    """A user's metric, callable the ways evaluation and each DSPy optimiser call it."""

    def __init__(self, fn: Callable[..., Any], name: str = "metric"):
        if not callable(fn):
            raise TypeError(f"{name} must be a function metric(example, pred) -> score, not {type(fn).__name__}")
        self.fn = fn
        self.name = name
        self.errors: list[str] = []
        self._arity = _positional_arity(fn)

    def score(self, example: dspy.Example, pred: Any, trace: Any = None,
              pred_name: str | None = None, pred_trace: Any = None) -> Score:
        args = (example, pred, trace, pred_name, pred_trace)[: self._arity]
        try:
            value = self.fn(*args)
        except Exception as exc:  # the user's metric may raise anything: a zero score saying why
            message = f"{self.name} raised {type(exc).__name__}: {exc}"
            self.errors.append(message)
            return Score(0.0, feedback=message, error=message)
        feedback = None
        if isinstance(value, dspy.Prediction) or isinstance(value, dict):
            feedback = value.get("feedback")
            value = value.get("score")
        try:
            number = float(value)
        except (TypeError, ValueError):
            message = f"{self.name} returned {value!r}; return a number, a bool or dspy.Prediction(score=..., feedback=...)"
            self.errors.append(message)
            return Score(0.0, feedback=message, error=message)
        if math.isnan(number):
            number = 0.0
        return Score(number, feedback=feedback)

    def for_bootstrap(self, example: dspy.Example, pred: Any, trace: Any = None) -> float:
        return self.score(example, pred, trace).score

    def for_gepa(self, gold: dspy.Example, pred: Any, trace: Any = None,
                 pred_name: str | None = None, pred_trace: Any = None) -> dspy.Prediction:
        result = self.score(gold, pred, trace, pred_name, pred_trace)
        feedback = result.feedback or f"The answer scored {result.score:g}."
        return dspy.Prediction(score=result.score, feedback=feedback)


def _positional_arity(fn: Callable[..., Any]) -> int:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return 5
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return max(2, min(5, len(positional)))
