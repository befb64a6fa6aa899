"""core/loop/inputs_view.py: the task, its context and the variables view, each whole up to its budget, never a line
cut in half (what the model reads at length: tests/core/loop/test_what_the_model_reads.py)."""

from __future__ import annotations

from deepagent_magics.core.loop.inputs_view import CONTEXT_HEAD, TASK_HEAD, VARIABLES_HEAD, fit, render


def test_the_parts_are_shown_under_their_heads_and_empty_ones_left_out():
    assert render("Count", "", None) == f"{TASK_HEAD}\nCount"
    text = render("Count", "earlier turns", "- sales: list")
    assert text == f"{TASK_HEAD}\nCount\n\n{CONTEXT_HEAD}\nearlier turns\n\n{VARIABLES_HEAD}\n- sales: list"


def test_a_long_part_keeps_its_first_and_last_whole_lines_and_says_how_to_print_the_rest():
    text = "\n".join(f"line {i:04d}" for i in range(1000))
    shown = fit(text, 200, "context")
    lines = shown.splitlines()
    assert lines[0] == "line 0000" and lines[-1] == "line 0999" and len(shown) < 300
    marker = next(line for line in lines if line.startswith("[..."))
    begin, end = (int(n) for n in marker.split("print(context[")[1].split("])")[0].split(":"))
    assert text[begin:end].startswith("line 00") and text[begin:end].endswith("\n")
    assert all(line.startswith("line ") or line == marker for line in lines)


def test_a_single_line_longer_than_the_budget_is_left_out_whole_and_said_so():
    shown = fit("x" * 10_000, 100, "task")
    assert shown == "[... 1 line (10,000 chars) left out here: print(task[0:10000]) shows them]"
    assert fit("short\n", 100, "task") == "short"
