"""The widget dashboard shows a retry where it happens, while it happens, as text (never as markup).

Real runs: a `DeepAgent` on DSPy's real client talking HTTP to the local OpenAI-compatible
server (`testing_provider.FakeProvider`) that sends faults and unreadable replies; the
dashboard listens to the run as in a notebook, and each test reads the widgets' state at the
moment of the retry event and after the run. A retry line names the step (or the llm_query of a
running step), the cause and the wait or the problem, and which attempt of how many; it leaves
the waiting area once the step arrives, as a "recovered" note on that step. A provider's or a
model's text is hostile: ``<script>`` and ``<img onerror>`` appear as text.
"""

from __future__ import annotations

import html
import re

import ipywidgets
import pytest
from tests.adversarial.reply_corpus import ANSWER, GOOD, TASK, F, text, twice
from tests.adversarial.test_what_models_send import lm_for

from deepagent_magics import DeepAgent
from deepagent_magics.core.loop.attempts import REPLY_RETRY
from deepagent_magics.core.model.retries import PROVIDER_RETRY, RetryPolicy
from deepagent_magics.core.run.run import Run
from deepagent_magics.display.dashboard import Dashboard

from deepagent_magics.testing_provider import FakeProvider, Reply

FAST = RetryPolicy(base_delay=0.05, max_wait=5)
RETRY_CLASS = "dag-retry"  # display/retries.py
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def descendants(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from descendants(child)


def markup(widget) -> str:
    """Every HTML value and title under ``widget``, raw (what the browser would parse)."""
    parts = []
    for each in descendants(widget):
        if isinstance(each, ipywidgets.HTML) and each.layout.display != "none":
            parts.append(each.value or "")
        parts += list(getattr(each, "titles", ()) or ())
    return "\n".join(parts)


def seen(widget) -> str:
    """What a reader sees (tags stripped, entities decoded)."""
    return html.unescape(re.sub(r"<style>.*?</style>|<[^>]+>", "", markup(widget), flags=re.S))


def retry_lines(widget) -> list[str]:
    """The live retry lines shown under ``widget`` (the waiting area and running steps)."""
    found = re.findall(rf'<div class="{RETRY_CLASS}">(.*?)</div>', markup(widget), flags=re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", line)) for line in found]


class Watch:
    """A dashboard on a run, and snapshots of it taken right after each retry event reached it."""

    def __init__(self, run: Run):
        self.dashboard = Dashboard(run)
        self.snapshots: list[tuple[str, Run, str, list[str]]] = []
        run.subscribe(self.on_event)

    def on_event(self, event) -> None:
        self.dashboard.on_event(event)
        if event.kind in (REPLY_RETRY, PROVIDER_RETRY):
            view = self.dashboard.views.get(event.run.id)
            widget = view.widget if view is not None else self.dashboard.widget
            self.snapshots.append((event.kind, event.run, markup(self.dashboard.widget), retry_lines(widget)))


def play(script, tmp_path, **agent_kwargs):
    run = Run(TASK)
    watch = Watch(run)
    with FakeProvider(script) as provider:
        agent = DeepAgent(lm=lm_for(provider), workspace=tmp_path, max_iters=4, **agent_kwargs)
        agent.retry_policy = FAST
        agent.run(TASK, {}, run=run)
    return run, watch


def step_entries(dashboard: Dashboard):
    return [step.widget for step in dashboard.root.steps]


# --------------------------------------------------------------------------- provider faults
def test_a_rate_limit_shows_cause_wait_and_attempt_then_turns_into_a_recovered_note(tmp_path):
    script = [Reply.failure(429, "Rate limit reached", headers={"Retry-After": "0.2"}, error_type="rate_limit_error"),
              GOOD]
    run, watch = play(script, tmp_path)
    assert run.status == "finished" and run.result == ANSWER, run.error
    [(kind, where, _markup, lines)] = watch.snapshots
    assert kind == PROVIDER_RETRY and where is run
    assert lines == ["⟳ step 1: rate limited (429, Retry-After 0.2 s): retrying in 0.2 s, attempt 2 of 3"]
    board = watch.dashboard.widget
    assert retry_lines(board) == [], "the line goes away once the step arrives"
    assert "⟳ recovered: step 1: rate limited (429, Retry-After 0.2 s)" in seen(step_entries(watch.dashboard)[0])


def test_a_server_error_then_a_timeout_each_show_their_own_line_with_the_next_attempt(tmp_path):
    script = [Reply.failure(500, "Internal error", error_type="server_error"),
              Reply.failure(503, "overloaded", error_type="server_error"), GOOD]
    run, watch = play(script, tmp_path)
    assert run.status == "finished", run.error
    shown = [lines for _, _, _, lines in watch.snapshots]
    assert shown[0] == ["⟳ step 1: server error (500): Internal error: retrying in 0.05 s, attempt 2 of 3"]
    assert shown[1] == ["⟳ step 1: server error (503): overloaded: retrying in 0.1 s, attempt 3 of 3"], \
        "one line: the newest retry replaces the one before"
    note = seen(step_entries(watch.dashboard)[0])
    assert "recovered after 2 retries" in note and "server error (503): overloaded" in note


def test_a_hostile_provider_message_is_shown_as_text(tmp_path):
    script = [Reply.failure(500, HOSTILE, error_type="server_error"), GOOD]
    run, watch = play(script, tmp_path)
    assert run.status == "finished", run.error
    [(_, _, raw, lines)] = watch.snapshots
    assert HOSTILE in lines[0], "the reader sees the text as sent"
    assert "<script" not in raw and "<img" not in raw and "&lt;script&gt;" in raw
    final = markup(watch.dashboard.widget)
    assert "<script" not in final and "<img" not in final and "&lt;img src=x onerror=alert(1)&gt;" in final


def test_a_retry_that_gives_up_leaves_no_stale_line_and_the_status_says_why(tmp_path):
    fault = Reply.failure(500, "Internal error", error_type="server_error")
    run, watch = play([fault] * 3, tmp_path)
    assert run.status == "failed" and "LMServerError" in run.error
    assert len(watch.snapshots) == 2 and retry_lines(watch.dashboard.widget) == []
    assert "gave up after 3 attempts" in seen(watch.dashboard.status)


# --------------------------------------------------------------------------- unreadable replies
def test_an_unreadable_reply_shows_which_attempt_and_why(tmp_path):
    run, watch = play([*twice(text("")), GOOD], tmp_path)
    assert run.status == "finished", run.error
    [(kind, _, _, lines)] = watch.snapshots
    assert kind == REPLY_RETRY
    assert lines == ["⟳ step 1: reply 1 of 3 unreadable (the reply was empty): asking again"]
    assert retry_lines(watch.dashboard.widget) == []
    assert "⟳ recovered: step 1: reply 1 of 3 unreadable (the reply was empty)" in seen(step_entries(watch.dashboard)[0])


def test_the_last_unreadable_reply_says_the_run_gives_up_not_asking_again(tmp_path):
    run, watch = play([text("")] * 6, tmp_path)
    assert run.status == "failed" and "UnreadableReply" in run.error
    assert [lines for _, _, _, lines in watch.snapshots][-1] == \
        ["⟳ step 1: reply 3 of 3 unreadable (the reply was empty): giving up"]
    assert retry_lines(watch.dashboard.widget) == []


def test_a_hostile_unreadable_reply_is_shown_as_text_on_one_line(tmp_path):
    prose = f"Sure!\n{HOSTILE}\nno code, sorry"
    run, watch = play([*twice(text(prose)), GOOD], tmp_path)
    assert run.status == "finished", run.error
    [(_, _, raw, lines)] = watch.snapshots
    assert len(lines) == 1 and "\n" not in lines[0] and "<script>alert(\"x\")</script>" in lines[0]
    assert "<script" not in raw and "<img" not in raw
    assert "<script" not in markup(watch.dashboard.widget) and "<img" not in markup(watch.dashboard.widget)


def test_the_second_step_retries_show_under_step_2_not_step_1(tmp_path):
    script = [F(reasoning="Work.", code="x = 6 * 7\nprint(x)"), *twice(text("")),
              F(reasoning="Submit.", code="SUBMIT(result=str(x))")]
    run, watch = play(script, tmp_path)
    assert run.status == "finished", run.error
    assert [lines for _, _, _, lines in watch.snapshots] == [
        ["⟳ step 2: reply 1 of 3 unreadable (the reply was empty): asking again"]]
    first, second = step_entries(watch.dashboard)
    assert "recovered" not in seen(first) and "recovered" in seen(second)


# --------------------------------------------------------------------------- where it happens
def test_an_llm_query_retry_shows_inside_its_running_step(tmp_path):
    script = [F(reasoning="Ask.", code="reply = llm_query('say 42')\nprint(reply)"),
              Reply.failure(503, "overloaded", error_type="server_error"), text("42"),
              F(reasoning="Submit.", code="SUBMIT(result=reply.strip())")]
    run, watch = play(script, tmp_path)
    assert run.status == "finished" and run.result == ANSWER, run.error
    [(_, _, _, lines)] = watch.snapshots
    assert lines == ["⟳ llm_query in step 1: server error (503): overloaded: retrying in 0.05 s, attempt 2 of 3"]
    first = step_entries(watch.dashboard)[0]
    assert retry_lines(watch.dashboard.widget) == []
    assert "⟳ retried: llm_query in step 1: server error (503): overloaded" in seen(first)
    assert "recovered" not in seen(first), "the step's output, not the note, says how the query ended"
    assert "recovered" not in seen(step_entries(watch.dashboard)[1])


def test_an_llm_query_that_gives_up_leaves_no_live_line_and_is_not_called_recovered(tmp_path):
    fault = Reply.failure(503, "overloaded", error_type="server_error")
    script = [F(reasoning="Ask.", code="reply = llm_query('say 42')"), fault, fault, fault,
              F(reasoning="Submit.", code="SUBMIT(result='42')")]
    run, watch = play(script, tmp_path)
    assert run.status == "finished", run.error
    assert len(watch.snapshots) == 2 and run.steps[0].output.startswith("[Error]")
    first = step_entries(watch.dashboard)[0]
    assert retry_lines(watch.dashboard.widget) == []
    assert "⟳ retried 2 times (last): llm_query in step 1" in seen(first) and "recovered" not in seen(first)


@pytest.mark.kernel
def test_a_sub_agents_retry_shows_in_its_own_nested_view(tmp_path):
    from deepagent_magics.interpreters.pool import KernelPool

    delegate = F(reasoning="Delegate.", code="answer = delegate('CHILD: compute 6 times 7')\nprint(answer)")
    script = [delegate, Reply.failure(429, "Rate limit reached", headers={"Retry-After": "0.2"},
                                      error_type="rate_limit_error"),
              *twice(text("")), F(reasoning="Compute.", code="SUBMIT(result=str(6 * 7))"),
              F(reasoning="Done.", code="SUBMIT(result=answer)")]
    pool = KernelPool(size=1)
    try:
        run, watch = play(script, tmp_path, pool=pool, timeout=60)
    finally:
        pool.stop()
    assert run.status == "finished" and run.result == ANSWER, run.error
    child = run.steps[0].children[0]
    assert [(kind, where is child) for kind, where, _, _ in watch.snapshots] == [(PROVIDER_RETRY, True),
                                                                                 (REPLY_RETRY, True)]
    assert watch.snapshots[0][3] == ["⟳ step 1: rate limited (429, Retry-After 0.2 s): retrying in 0.2 s, "
                                     "attempt 2 of 3"]
    assert watch.snapshots[1][3] == ["⟳ step 1: reply 1 of 3 unreadable (the reply was empty): asking again"]
    nested = watch.dashboard.views[child.id]
    assert "recovered after 2 retries" in seen(nested.steps[0].widget)
    assert "recovered" not in seen(step_entries(watch.dashboard)[0].children[0].children[0])
