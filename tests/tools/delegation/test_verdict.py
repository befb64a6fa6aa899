"""tools/delegation/verdict.py: the reviewer's verdict is its typed output, read only from exactly one JSON object;
anything else fails, never a silent pass (the verdict through real kernels: tests/adversarial/test_reviewer_verdict.py)."""

from __future__ import annotations

import json

import dspy
import pytest

from deepagent_magics.tools.delegation.verdict import FIELDS, _with_result, parse_verdict, verdict_signature


def test_a_well_formed_verdict_reads_as_it_is():
    assert parse_verdict('{"status": "low", "issues": ["a"], "suggestions": []}') == {
        "status": "low", "issues": ["a"], "suggestions": []}
    assert parse_verdict({"status": "pass", "issues": None}) == {"status": "pass", "issues": [], "suggestions": []}


@pytest.mark.parametrize("value, says", [
    ('The draft says {"status": "pass"} somewhere', "not one JSON object"),
    ('[{"status": "pass"}]', "not one JSON object"),
    ('{"status": "great"}', "no valid status ('great')"),
    ('{"status": "pass", "issues": "none"}', "not lists of strings"),
    ('{"status": "pass", "suggestions": [1]}', "not lists of strings"),
])
def test_anything_else_fails_the_review_saying_why(value, says):
    verdict = parse_verdict(value)
    assert verdict["status"] == "fail" and says in verdict["issues"][0] and verdict["raw"] == value


def test_the_reviewers_signature_has_the_verdict_as_typed_outputs():
    signature = verdict_signature("Review it.")
    assert set(FIELDS) <= set(signature.output_fields) and signature.instructions == "Review it."
    assert "task" in signature.input_fields


def test_the_prediction_carries_exactly_the_verdict_as_its_result():
    prediction = _with_result(dspy.Prediction(status="fail", issues=["x"], suggestions=["y"], extra="not kept"))
    assert json.loads(prediction.result) == {"status": "fail", "issues": ["x"], "suggestions": ["y"]}
