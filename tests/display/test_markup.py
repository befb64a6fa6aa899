"""display/markup.py: the HTML and lines a run is shown with, every model-written text escaped (the hostile record:
tests/adversarial/test_model_text_shown.py)."""

from __future__ import annotations

from deepagent_magics.core.policy.spend import SpendBudget
from deepagent_magics.core.run.run import Run
from deepagent_magics.display.markup import (
    esc,
    head_line,
    human_size,
    not_sandboxed_line,
    status_line,
    step_body,
    step_mark,
    step_title,
    todos_html,
    tree_html,
    usage_parts,
)


def test_how_a_step_ended_is_one_glyph():
    assert [step_mark(o) for o in (None, "(interrupted)", "(not executed)", "[Error] x", "ok", "")] == [
        "…", "⏹", "⏹", "✗", "✓", "✓"]
    assert step_title(3, "\n  Plan the work\nmore", "ok") == "✓ Step 3 · Plan the work"
    assert step_title(1, "", None) == "… Step 1 · (no reasoning)"


def test_a_step_body_escapes_the_models_text_and_marks_an_error():
    body = step_body('<img src=x onerror="alert(1)">', "print(1)", "[Error] <b>boom</b>")
    assert "<img" not in body and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in body
    assert 'class="dag-pre dag-error"' in body and "&lt;b&gt;boom&lt;/b&gt;" in body
    assert "<i>running…</i>" in step_body("r", "c", None)


def test_sizes_and_head_lines_read_as_a_person_reads_them():
    assert (human_size(12), human_size(2048), human_size(5 * 1024 ** 3)) == ("12 B", "2.0 KB", "5.0 GB")
    assert head_line("\n first \n second", 3) == "fi…" and esc("\"'") == "&quot;&#x27;"


def test_the_status_line_shows_usage_caps_and_an_escaped_error():
    run = Run("t")
    run.start()
    run.spend = SpendBudget(max_tokens=100)
    run.record_usage("m", 10, 5, 0.01)
    run.spend.add(15, 0.01)  # what the run's usage sink hands the tree's budget
    run.finish("failed", error="<script>x</script> broke")
    line = status_line(run, writing=3.2)
    assert "● failed" in line and "writing… 3s" in line and "15 tokens" in line and "caps: 15/100 tokens" in line
    assert "<script>" not in line and "&lt;script&gt;" in line


def test_usage_says_whole_tree_when_sub_agents_spent_too():
    root = Run("root")
    root.begin_step("r", "c")
    child = root.add_child("sub")
    child.record_usage("m", 100, 0, None)
    root.record_usage("m", 10, 0, 0.5)
    assert usage_parts(root) == ["2 LM calls", "110 tokens",
                                 "$0.5000 + 1 unpriced calls (whole tree; the root's own: 1 calls, 10 tokens)"]


def test_todos_and_the_file_tree_escape_what_an_agent_wrote():
    html = todos_html([{"content": "<b>x</b>", "status": 'done" onmouseover="y'}, {"content": "a", "status": "completed"}])
    assert "<b>x</b>" not in html and 'onmouseover="y' not in html and "1/2 completed" in html
    assert "(no todos yet)" in todos_html([])
    tree = tree_html([("data/a.csv", 2048), ("<x>.txt", 1)], {"data/a.csv"})
    assert "▾ data/" in tree and "2.0 KB" in tree and "● written" in tree and "&lt;x&gt;.txt" in tree
    assert "(the workspace is empty)" in tree_html([], set())


def test_sub_agents_that_ran_unsandboxed_or_unfiltered_are_said_in_one_line():
    root = Run("root")
    root.begin_step("r", "c")
    root.add_child("sub", config={"sandbox": {"sandbox": "none", "reason": "bubblewrap is not installed"}})
    assert not_sandboxed_line(root).startswith("deepagent: sub-agents ran NOT sandboxed (bubblewrap is not installed)")
    other = Run("root")
    other.begin_step("r", "c")
    other.add_child("sub", config={"sandbox": {"sandbox": "bubblewrap", "seccomp": False,
                                               "missing": {"seccomp": "libseccomp2 is missing"}}})
    assert "without a seccomp filter (libseccomp2 is missing)" in not_sandboxed_line(other)
    assert not_sandboxed_line(Run("alone")) is None
