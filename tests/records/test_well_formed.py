"""records/well_formed.py: whatever JSON sits in the runs folder becomes a record every reader can use, or a ValueError."""

from __future__ import annotations

import pytest

from deepagent_magics.records.well_formed import MAX_DEPTH, normalize


@pytest.mark.parametrize("raw", [None, [], "x", {"steps": []}, {"id": "a", "steps": "many"}])
def test_what_is_not_a_run_record_is_a_value_error(raw):
    with pytest.raises(ValueError, match="not a deepagent run record"):
        normalize(raw)


def test_a_minimal_record_gets_every_field_its_readers_expect():
    record = normalize({"id": 7, "steps": []})
    assert record["id"] == "7" and record["task"] == "" and record["status"] == "unknown"
    assert record["profile"] == "default" and record["depth"] == 0 and record["error"] is None
    assert record["todos"] == [] and record["files"] == {} and record["orphans"] == []
    assert set(record["usage"]) >= {"lm_calls", "input_tokens", "output_tokens", "cost"}


def test_fields_of_the_wrong_type_are_coerced_or_dropped():
    record = normalize({
        "id": "r", "task": ["not", "text"], "status": 3, "steps": [
            {"index": "x", "reasoning": None, "code": 5, "output": {"a": 1}, "children": "none"}, "not a step"],
        "usage": {"lm_calls": "3", "cost": [1], "input_tokens": 10}, "todos": [{"content": 1}, "x"],
        "files": {"a.txt": 12, "b": "12", "c": float("nan")}, "started_at": "yesterday", "depth": "2"})
    assert isinstance(record["task"], str) and isinstance(record["status"], str)
    assert len(record["steps"]) == 1
    step = record["steps"][0]
    assert step["index"] == 1 and step["reasoning"] == "" and step["code"] == "5" and isinstance(step["output"], str)
    assert record["todos"] == [{"content": "1", "status": "pending"}]
    assert record["files"] == {"a.txt": 12, "b": 0, "c": 0}  # numbers only, finite
    assert record["started_at"] is None and record["depth"] == 0  # text is no number
    assert all(isinstance(value, (int, float)) for value in record["usage"].values())


def test_sub_agents_nested_past_the_bound_are_dropped():
    raw = {"id": "leaf", "steps": []}
    for level in range(MAX_DEPTH + 5):
        raw = {"id": f"r{level}", "steps": [{"children": [raw]}]}
    record, depth = normalize(raw), 0
    while record["steps"] and record["steps"][0]["children"]:
        record, depth = record["steps"][0]["children"][0], depth + 1
    assert depth <= MAX_DEPTH
