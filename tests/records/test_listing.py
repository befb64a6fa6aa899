"""records/listing.py: the table of runs and one step of a run as text, read from records."""

from __future__ import annotations

import pytest

from deepagent_magics.records.listing import NoSuchStep, format_step, head, runs_table
from deepagent_magics.records.well_formed import normalize

RECORD = normalize({
    "id": "run1", "task": "Total the sales\nand more", "status": "finished", "started_at": 1_700_000_000,
    "usage": {"lm_calls": 2, "input_tokens": 1000, "output_tokens": 234, "cost": 0.0123},
    "steps": [{"reasoning": "Look.", "code": "print(1)", "output": "1",
               "children": [{"id": "sub1", "task": "count words", "status": "finished", "result": "42", "steps": [{}]}]},
              {"reasoning": "Done.", "code": "SUBMIT(result=1)", "output": None}]})


def test_head_is_the_first_non_blank_line_cut():
    assert head("\n  first line \nsecond", 50) == "first line"
    assert head("abcdef", 4) == "abc…" and head(None, 3) == ""


def test_the_table_has_a_row_per_run_with_its_tree_usage_and_unsigned_ones_say_so():
    unsigned = {**normalize({"id": "planted", "steps": [], "status": "finished"}), "_host_written": False}
    lines = runs_table([RECORD, unsigned]).splitlines()
    assert lines[0].split()[:3] == ["id", "time", "status"]
    row = lines[1].split()
    assert row[0] == "run1" and "finished" in row and "(+1" in lines[1] and "1,234" in lines[1]
    assert "Total the sales" in lines[1] and "and more" not in lines[1]
    assert "finished (unsigned)" in lines[2]


def test_a_step_shows_reasoning_code_output_and_its_sub_agents():
    text = format_step(RECORD, 1)
    assert text.startswith("Step 1/2 of run run1")
    assert "Reasoning:\nLook." in text and "Code:\nprint(1)" in text and "Output:\n1" in text
    assert "Sub-agent sub1 (finished, 1 steps): count words\n  result: 42" in text
    assert "Output:\n(none)" in format_step(RECORD, 2)


@pytest.mark.parametrize("number", [0, 3, -1])
def test_a_step_out_of_range_names_the_range(number):
    with pytest.raises(NoSuchStep, match="run run1 has steps 1 to 2, not"):
        format_step(RECORD, number)
