"""What real models and providers send that goes wrong: every case recovers or fails cleanly, never hangs.

One test per case of the corpus (`reply_corpus.py`: 40+ malformed replies, a dozen provider
faults), each a real `DeepAgent` whose LM is DSPy's real client talking HTTP to a local
OpenAI-compatible server that plays the case. "Recovers" is a `finished` run with the right
answer and only the step that ran recorded; "fails" is a `failed` run whose error is one line
naming the cause; a run never takes long, and never finishes with an answer the harness made up.
"""

from __future__ import annotations

import time
from pathlib import Path

import dspy
import pytest
from tests.adversarial.reply_corpus import ANSWER, CASES, GOOD, PROSE, TASK, F, table, text, twice

from deepagent_magics import DeepAgent
from deepagent_magics.core.loop.attempts import REPLY_RETRY
from deepagent_magics.core.model.retries import PROVIDER_RETRY, RetryPolicy
from deepagent_magics.testing_provider import FakeProvider, Reply

DOC = Path(__file__).resolve().parents[2] / "docs" / "robustness.md"
FAST = RetryPolicy(base_delay=0.05, max_wait=5)  # real backoff, short waits


def lm_for(provider: FakeProvider, **kwargs) -> dspy.LM:
    return dspy.LM("openai/fake-model", api_base=provider.url, api_key="sk-local", cache=False,
                   **{"num_retries": 2, "timeout": 10, **kwargs})


def play(script, tmp_path, *, lm=None, max_iters=4, namespace=None):
    events = []
    with FakeProvider(script) as provider:
        agent = DeepAgent(lm=lm_for(provider, **(lm or {})), workspace=tmp_path, max_iters=max_iters)
        agent.retry_policy = FAST
        started = time.monotonic()
        run = agent.run(TASK, {} if namespace is None else namespace, listeners=[events.append])
        elapsed = time.monotonic() - started
    return run, provider, events, elapsed


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_case(case, tmp_path):
    history = [F(reasoning=f"Step {i}.", code=f"print({i})") for i in range(1, case.history + 1)]
    script = history + case.script
    namespace = {}
    run, provider, events, elapsed = play(script, tmp_path, lm=case.lm, max_iters=case.max_iters, namespace=namespace)

    assert elapsed < 30, "never a hang"
    assert len(provider.requests) <= len(script), "the run asked more often than the case allows"
    if case.outcome == "recovers":
        assert run.status == "finished", run.error
        assert run.result == ANSWER
        assert len(provider.requests) == len(script)
        assert "SUBMIT" in run.steps[-1].code
        if case.steps:
            assert len(run.steps) == case.steps, [step.code for step in run.steps]
    else:
        assert run.status == "failed" and run.result is None
        assert case.error in run.error
        assert "\n" not in run.error and "Traceback" not in run.error and len(run.error) < 600
        if case.via.startswith("fails at once"):
            streamed = [bool(request["body"].get("stream")) for request in provider.requests]
            # Asked once; a request to stream that got an odd answer is asked once more, plainly (streaming.py).
            assert "gave up" not in run.error and streamed in ([False], [True], [True, False]), streamed
    if case.minimum_wait:
        waits = [event.data["wait"] for event in events if event.kind == PROVIDER_RETRY]
        assert waits and waits[0] >= case.minimum_wait and elapsed >= case.minimum_wait
    if case.not_run:
        assert case.not_run not in namespace
        assert all(case.not_run not in step.code for step in run.steps), "only the steps that ran are recorded"


# --------------------------------------------------------------------------- how a retry tells the model
def test_a_retry_tells_the_model_what_was_wrong_and_records_only_the_step_that_ran(tmp_path):
    run, provider, events, _ = play([*twice(text(PROSE)), GOOD], tmp_path)
    assert run.status == "finished" and len(run.steps) == 1
    retry_prompt = str(provider.requests[2]["body"]["messages"])
    assert "[Format error]" in retry_prompt and "no [[ ## code ## ]] section" in retry_prompt
    assert "[Format error]" not in str(provider.requests[0]["body"]["messages"])
    problems = [event.data for event in events if event.kind == REPLY_RETRY]
    assert problems == [{"step": 1, "attempt": 1, "problem": problems[0]["problem"]}]
    assert "The answer is 42." in problems[0]["problem"]


def test_the_unreadable_count_starts_again_at_each_step(tmp_path):
    """Two bad replies in step 1 and two in step 2 are not four in a row: the run finishes."""
    script = [*twice(text("")), *twice(text("")), F(reasoning="Work.", code="x = 6 * 7\nprint(x)"),
              *twice(text("")), *twice(text("")), F(reasoning="Submit.", code="SUBMIT(result=str(x))")]
    run, _provider, events, _ = play(script, tmp_path)
    assert run.status == "finished" and run.result == ANSWER, run.error
    assert [event.data["step"] for event in events if event.kind == REPLY_RETRY] == [1, 1, 2, 2]


def test_a_rate_limit_shows_what_the_run_waits_for(tmp_path):
    script = [Reply.failure(429, "Rate limit reached", headers={"Retry-After": "0.2"}, error_type="rate_limit_error"),
              GOOD]
    run, _, events, _ = play(script, tmp_path)
    assert run.status == "finished"
    retry = next(event for event in events if event.kind == PROVIDER_RETRY)
    assert retry.data == {"attempt": 1, "wait": 0.2, "cause": "rate limited (429, Retry-After 0.2 s)", "retries": 2}


def test_the_sub_lm_behind_llm_query_is_retried_too(tmp_path):
    script = [F(reasoning="Ask.", code="reply = llm_query('say 42')\nprint(reply)"),
              Reply.failure(503, "overloaded", error_type="server_error"), text("42"),
              F(reasoning="Submit.", code="SUBMIT(result=reply.strip())")]
    run, _provider, events, _ = play(script, tmp_path)
    assert run.status == "finished" and run.result == ANSWER, run.error
    assert [event.data["cause"] for event in events if event.kind == PROVIDER_RETRY] == ["server error (503): overloaded"]


def test_a_context_length_error_after_a_long_history_compacts_it(tmp_path):
    history = [F(reasoning=f"Step {i}.", code=f"print({i})") for i in range(1, 5)]
    script = [*history, Reply.failure(400, "maximum context length exceeded", error_code="context_length_exceeded"),
              text("Summary: printed 1 to 4."), GOOD]
    run, provider, events, _ = play(script, tmp_path, max_iters=8)
    assert run.status == "finished", run.error
    assert [event.kind for event in events].count("compaction") == 1
    assert "Summary: printed 1 to 4." in str(provider.requests[-1]["body"]["messages"])


def test_a_users_dspy_retries_are_kept_when_the_policy_is_off(tmp_path):
    """``retry_policy = None`` hands provider faults back to DSPy's own client (here: num_retries=0)."""
    with FakeProvider([Reply.failure(500, "Internal error", error_type="server_error"), GOOD]) as provider:
        agent = DeepAgent(lm=lm_for(provider, num_retries=0), workspace=tmp_path)
        agent.retry_policy = None
        run = agent.run(TASK, {})
    assert run.status == "failed" and run.error.startswith("LMServerError: server error (500)")
    assert "\n" not in run.error


# --------------------------------------------------------------------------- the doc page
def test_the_doc_page_shows_the_corpus_table():
    assert table() in DOC.read_text(), "docs/robustness.md's table is out of date: paste reply_corpus.table()"
    assert len([case for case in CASES if case.script and case.name]) >= 45


# --------------------------------------------------------------------------- what the user sees
def test_in_a_notebook_a_failed_run_is_one_usage_error_line_and_the_kernel_carries_on(ip, monkeypatch):
    from IPython.core.error import UsageError

    monkeypatch.setattr(DeepAgent, "retry_policy", FAST)
    with FakeProvider([text(PROSE)] * 6) as provider:
        ip.user_ns.update(lm=lm_for(provider), kept="yes")
        result = ip.run_cell("%%deepagent --lm lm\nWhat is 6 times 7?")
    error = result.error_in_exec
    assert type(error) is UsageError and "\n" not in str(error)
    assert "UnreadableReply" in str(error) and "no [[ ## code ## ]] section" in str(error)
    assert ip.user_ns["kept"] == "yes" and ip.user_ns["_deepagent_run"].status == "failed"


def test_in_a_notebook_a_rate_limit_too_long_to_wait_fails_at_once_with_one_line(ip, monkeypatch):
    from IPython.core.error import UsageError

    monkeypatch.setattr(DeepAgent, "retry_policy", FAST)
    script = [Reply.failure(429, "Rate limit reached", headers={"Retry-After": "86400"}, error_type="rate_limit_error")]
    with FakeProvider(script) as provider:
        ip.user_ns["lm"] = lm_for(provider)
        started = time.monotonic()
        result = ip.run_cell("%%deepagent --lm lm\nWhat is 6 times 7?")
    assert time.monotonic() - started < 20
    assert type(result.error_in_exec) is UsageError
    assert "Retry-After 86400 s" in str(result.error_in_exec) and "max_wait" in str(result.error_in_exec)


def test_the_text_display_says_what_the_run_is_retrying(tmp_path):
    import io

    from deepagent_magics.core.run.run import Run
    from deepagent_magics.display.text import TextProgress

    script = [Reply.failure(500, "Internal error", error_type="server_error"), *twice(text("")), GOOD]
    out = io.StringIO()
    with FakeProvider(script) as provider:
        agent = DeepAgent(lm=lm_for(provider), workspace=tmp_path)
        agent.retry_policy = FAST
        run = Run(TASK)
        TextProgress(run, stream=out)
        agent.run(TASK, {}, run=run)
    lines = out.getvalue().splitlines()
    assert any("⟳ server error (500): Internal error: retrying in 0.05 s" in line for line in lines), lines
    assert any("⟳ reply 1 unreadable (the reply was empty): asking again" in line for line in lines), lines
    assert lines[-1].startswith("finished")


def test_the_async_step_is_asked_again_too():
    import asyncio

    from deepagent_magics.core.loop.attempts import apredict_step

    predict = dspy.Predict("question -> reasoning, code")
    with FakeProvider([*twice(text("")), GOOD]) as provider, dspy.context(lm=lm_for(provider)):
        prediction = asyncio.run(apredict_step(predict.aforward, None, {"question": TASK}))
        assert len(provider.requests) == 3
    assert "SUBMIT" in prediction.code
