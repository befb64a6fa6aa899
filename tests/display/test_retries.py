"""display/retries.py: the one line a retry shows, the note a step keeps after it, and the run's waiting area.

Through a whole run in the dashboard see ``tests/adversarial/test_retry_display.py``.
"""

from __future__ import annotations

from types import SimpleNamespace

import ipywidgets as W

from deepagent_magics.core.loop.attempts import FORMAT_RETRIES, REPLY_RETRY
from deepagent_magics.core.run.event_kinds import PROVIDER_RETRY
from deepagent_magics.display.retries import (LINE_CHARS, NOTE_CLASS, RETRY_CLASS, Waiting, line_html, note_html,
                                              retry_line, waiting_area)


def test_a_provider_fault_says_the_cause_the_wait_and_which_attempt_of_how_many():
    data = {"attempt": 1, "wait": 2.5, "cause": "rate limited (429)", "retries": 3}
    assert retry_line(PROVIDER_RETRY, data, "step 2") == "step 2: rate limited (429): retrying in 2.5 s, attempt 2 of 4"


def test_without_a_retry_count_only_the_attempt_is_said():
    line = retry_line(PROVIDER_RETRY, {"attempt": 2, "wait": 1, "cause": "server error (500): boom"},
                      "llm_query in step 1")
    assert line == "llm_query in step 1: server error (500): boom: retrying in 1 s, attempt 3"


def test_an_unreadable_reply_says_the_problem_and_whether_it_is_asked_again():
    first = retry_line(REPLY_RETRY, {"attempt": 1, "problem": "no code field"}, "step 3")
    assert first == f"step 3: reply 1 of {FORMAT_RETRIES + 1} unreadable (no code field): asking again"
    last = retry_line(REPLY_RETRY, {"attempt": FORMAT_RETRIES + 1, "problem": "no code"}, "step 3")
    assert last.endswith(": giving up")


def test_the_line_is_one_line_and_bounded():
    line = retry_line(PROVIDER_RETRY, {"attempt": 1, "wait": 0, "cause": "a\n\n  b " + "x" * 1000}, "step 1")
    assert "\n" not in line and line.startswith("step 1: a b x") and len(line) == LINE_CHARS and line[-1] == "…"


def test_the_providers_text_is_escaped_not_parsed():
    html = line_html("step 1: <img src=x onerror=alert(1)>")
    assert html.startswith(f'<div class="{RETRY_CLASS}">⟳ ') and "<img" not in html and "&lt;img" in html


def test_the_note_a_step_keeps_counts_the_retries_and_shows_the_last():
    assert note_html([]) == ""
    assert f'class="{NOTE_CLASS}"' in note_html(["one"]) and "⟳ recovered: one" in note_html(["one"])
    assert "recovered after 2 retries (last): <b>" not in note_html(["a", "<b>"])
    assert "recovered after 2 retries (last): &lt;b&gt;" in note_html(["a", "<b>"])
    assert "⟳ retried: q" in note_html(["q"], during=True)
    assert "retried 3 times (last): c" in note_html(["a", "b", "c"], during=True)


def test_the_waiting_area_shows_the_newest_retry_and_hands_them_all_to_the_step():
    area = Waiting()
    assert area.widget.layout.display == "none" and area.take() == []
    area.show("first")
    area.show("second")
    assert "second" in area.widget.value and "first" not in area.widget.value
    assert area.widget.layout.display is None
    assert area.take() == ["first", "second"]
    assert area.widget.value == "" and area.widget.layout.display == "none" and area.take() == []


def test_the_waiting_area_is_added_below_a_views_steps_once():
    steps = W.HTML("steps")
    view = SimpleNamespace(widget=W.VBox([steps]))
    area = waiting_area(view)
    assert view.widget.children == (steps, area.widget)
    assert waiting_area(view) is area and len(view.widget.children) == 2
