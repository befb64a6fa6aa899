"""display/streaming.py: the "writing" panel and line while a step is written, and an llm_query's block and line.

In a real browser see ``tests/display/test_streaming_in_browser.py``; through whole runs
``tests/adversarial/test_streaming.py``.
"""

from __future__ import annotations

from types import SimpleNamespace

import ipywidgets as W

from deepagent_magics.display.streaming import (QUERY_CLASS, WRITING_CLASS, Writing, below_steps, last_line,
                                                query_html, query_label, query_text_line, text_line, writing_html,
                                                writing_label, writing_panel)

RUN = SimpleNamespace(id="20260101-000000-abc123", max_iters=20)


def test_the_last_line_is_the_codes_once_it_has_begun_else_the_reasonings():
    assert last_line({"reasoning": "Think.\nThen act.\n\n", "code": ""}) == "Then act."
    assert last_line({"reasoning": "Think.", "code": "x = 1\ny = 2\n"}) == "y = 2"
    assert last_line({}) == ""


def test_a_long_last_line_shows_its_end():
    line = last_line({"code": "a" * 100 + "END"}, limit=20)
    assert line == "…" + ("a" * 100 + "END")[-19:] and len(line) == 20


def test_the_label_says_how_long_and_whether_the_model_is_still_reading():
    assert writing_label({"elapsed": 12.4}) == "writing… 12s (reading the prompt)"
    assert writing_label({"elapsed": 3, "reasoning": "Hm"}) == "writing… 3s"
    assert writing_label({"code": "x"}) == "writing… 0s"


def test_the_text_line_names_the_run_the_step_and_the_newest_line():
    data = {"index": 2, "elapsed": 5, "reasoning": "Look.", "code": "print(1)"}
    assert text_line(RUN, data, indent="  ") == "  [abc123] step 2/20 writing… 5s print(1)"
    no_cap = SimpleNamespace(id=RUN.id, max_iters=None)
    assert text_line(no_cap, {"index": 1}) == "[abc123] step 1/? writing… 0s (reading the prompt)"


def test_the_panel_escapes_what_the_model_wrote_and_shows_code_only_once_there_is_some():
    html = writing_html({"index": 1, "elapsed": 2, "reasoning": "<script>x</script>", "code": ""})
    assert f'class="{WRITING_CLASS}"' in html and "Step 1 · writing… 2s" in html
    assert "<script>" not in html and "&lt;script&gt;" in html and "<pre" not in html
    assert '<pre class="dag-pre">a &lt; b</pre>' in writing_html({"index": 1, "reasoning": "r", "code": "a < b"})


def test_a_querys_label_block_and_line():
    data = {"tool": "llm_query", "step": 3, "query": 2, "elapsed": 3.2, "text": "Paris\nis <b>"}
    assert query_label(data) == "llm_query 2 · 3s"
    html = query_html(data)
    assert f'class="{QUERY_CLASS}"' in html and "is &lt;b&gt;" in html and "<b>" not in html
    assert query_text_line(RUN, data) == "[abc123] step 3 llm_query 2 · 3s is <b>"
    assert query_label({"query": 1}) == "llm_query 1 · 0s"


def test_the_writing_panel_shows_then_empties_and_hides():
    panel = Writing()
    assert panel.widget.layout.display == "none"
    panel.show({"index": 1, "reasoning": "Think"})
    assert "Think" in panel.widget.value and panel.widget.layout.display is None
    panel.clear()
    assert panel.widget.value == "" and panel.widget.layout.display == "none"


def test_the_panel_goes_below_the_views_steps_once_in_a_box_or_in_the_first_child_of_one():
    steps = W.HTML("steps")
    view = SimpleNamespace(widget=W.VBox([steps]))
    panel = writing_panel(view)
    assert view.widget.children == (steps, panel.widget) and writing_panel(view) is panel
    inner = W.VBox([])
    nested = SimpleNamespace(widget=W.Accordion([inner]))
    part = below_steps(nested, "extra", Writing)
    assert inner.children == (part.widget,) and nested.extra is part
