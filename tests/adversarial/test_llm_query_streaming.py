"""``llm_query`` / ``llm_query_batched`` made by agent code stream into the display, the way steps do.

The local provider (`testing_provider.FakeProvider`) streams each answer in small chunks with
pauses to DSPy's real client. What must hold: while a running step's ``llm_query`` is answered,
the run's events carry the answer so far, saying it is an llm_query, which one and for which
step; the dashboard shows it inside that step (escaped) and drops it once done; the text display
rewrites its one line; the run's record, event log, trajectory and usage are the same with and
without streaming; opting out, a scripted model, and the compaction summary stay unstreamed; a
stream cut off midway is asked again, unstreamed, and the agent gets the whole answer.
"""

from __future__ import annotations

import json

import pytest
from tests.adversarial.test_streaming import STEPS, Probe, comparable, provider_lm, streamed

from deepagent_magics import DeepAgent
from deepagent_magics.core.run.run import STEP_FINISHED, STEP_STARTED
from deepagent_magics.core.model.streaming import LLM_QUERY_STREAMING, STEP_STREAMING, TRANSIENT
from deepagent_magics.display.dashboard import Dashboard
from deepagent_magics.display.text import TextProgress
from deepagent_magics.records.store import runs_dir
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.testing_provider import FakeProvider, Reply

ANSWER = "Forty-two is the answer, said the computer after seven and a half million years of thinking."
ASK = {"reasoning": "Ask the sub-model.", "code": "reply = llm_query('What is the answer?')\nprint(reply)"}
SUBMIT = {"reasoning": "Report it.", "code": "SUBMIT(result=reply)"}


def slow(content: str, **kwargs) -> Reply:
    return Reply(content=content, chunk=kwargs.pop("chunk", 5), pause=kwargs.pop("pause", 0.02), **kwargs)


def play(tmp_path, script, *listeners, stream=True, namespace=None):
    with FakeProvider(script) as provider:
        agent = DeepAgent(lm=provider_lm(provider), workspace=tmp_path, max_iters=6, max_depth=0)
        agent.stream = stream
        run = agent.run("Find the answer", {} if namespace is None else namespace, listeners=list(listeners))
    return run, provider


def queries(probe: Probe):
    return [(data, steps) for kind, _, data, steps in probe.seen if kind == LLM_QUERY_STREAMING]


# ---------------------------------------------------------------- the events
def test_an_llm_query_streams_its_answer_as_events_for_its_step(tmp_path):
    probe = Probe()
    run, provider = play(tmp_path, [streamed(ASK), slow(ANSWER), streamed(SUBMIT)], probe)
    assert run.status == "finished" and run.result == ANSWER, run.error
    assert bool(provider.requests[1]["body"].get("stream")) is True
    seen = queries(probe)
    partial = [data["text"] for data, _ in seen if 0 < len(data["text"]) < len(ANSWER)]
    assert partial and all(ANSWER.startswith(text) for text in partial), "the answer so far, as it arrives"
    assert all(data["tool"] == "llm_query" and data["step"] == 1 and data["query"] == 1 for data, _ in seen)
    assert all(steps == 1 for _, steps in seen), "while step 1 runs"
    kinds = [kind for kind, *_ in probe.seen]
    first, last = kinds.index(LLM_QUERY_STREAMING), len(kinds) - 1 - kinds[::-1].index(LLM_QUERY_STREAMING)
    assert kinds.index(STEP_STARTED) < first and last < kinds.index(STEP_FINISHED)
    assert seen[-1][0]["done"] is True and not any(data["done"] for data, _ in seen[:-1])


def test_batched_queries_stream_side_by_side_and_keep_their_order(tmp_path):
    ask = {"reasoning": "Ask two.", "code": "replies = llm_query_batched(['first?', 'second?'])\nprint(replies)"}
    answers = ["alpha " * 12, "omega " * 12]
    submit = {"reasoning": "Report.", "code": "SUBMIT(result=' | '.join(r.strip() for r in replies))"}
    probe = Probe()
    run, _ = play(tmp_path, [streamed(ask), slow(answers[0]), slow(answers[1]), streamed(submit)], probe)
    assert run.status == "finished", run.error
    assert sorted(run.result.split(" | ")) == sorted(answer.strip() for answer in answers)
    numbers = {data["query"] for data, _ in queries(probe)}
    assert numbers == {1, 2}
    for number in numbers:
        texts = [data["text"] for data, _ in queries(probe) if data["query"] == number]
        assert any(texts) and len({text.split()[0] for text in texts if text}) == 1, "one answer per query"


# ---------------------------------------------------------------- what the run records
def test_streaming_an_llm_query_never_changes_what_the_run_records(tmp_path):
    outcomes = {}
    for label, stream in (("streamed", True), ("plain", False)):
        probe = Probe()
        run, provider = play(tmp_path / label, [streamed(ASK), slow(ANSWER), streamed(SUBMIT)], probe, stream=stream)
        assert run.status == "finished" and run.result == ANSWER, run.error
        assert [bool(request["body"].get("stream")) for request in provider.requests] == [stream] * 3
        record = json.loads((runs_dir(tmp_path / label) / f"{run.id}.json").read_text())
        log = [json.loads(line) for line in
               (runs_dir(tmp_path / label) / f"{run.id}.events.jsonl").read_text().splitlines()]
        outcomes[label] = (run, record, log, probe)
    streamed_run, streamed_record, streamed_log, streamed_probe = outcomes["streamed"]
    plain_run, plain_record, plain_log, plain_probe = outcomes["plain"]
    assert queries(streamed_probe) and not queries(plain_probe)
    assert LLM_QUERY_STREAMING in TRANSIENT
    assert comparable(streamed_record) == comparable(plain_record)
    assert [event["kind"] for event in streamed_log] == [event["kind"] for event in plain_log]
    assert [comparable(event["data"]) for event in streamed_log] == [comparable(event["data"]) for event in plain_log]
    assert streamed_run.usage.to_dict() == plain_run.usage.to_dict()


# ---------------------------------------------------------------- what is not streamed
def test_opting_out_or_a_scripted_model_makes_no_llm_query_events(tmp_path):
    probe = Probe()
    run, provider = play(tmp_path / "off", [streamed(ASK), slow(ANSWER), streamed(SUBMIT)], probe, stream=False)
    assert run.status == "finished" and not queries(probe)
    assert not any(request["body"].get("stream") for request in provider.requests)
    probe = Probe()
    lm = ScriptedLM([(ASK["reasoning"], ASK["code"]), (SUBMIT["reasoning"], SUBMIT["code"])], replies=ANSWER)
    run = DeepAgent(lm=lm, workspace=tmp_path / "scripted", max_depth=0).run("Find the answer", {}, listeners=[probe])
    assert run.status == "finished" and run.result == ANSWER and not queries(probe)


def test_an_llm_query_outside_a_running_step_is_not_streamed(tmp_path):
    """A query between steps stays plain; inside a step it streams; a prompt string the run's LM is sent by
    anything but ``llm_query`` (the compaction summary, the agent's code calling the LM itself) is no query."""
    from deepagent_magics.core.loop.pipeline import layers_for, through
    from deepagent_magics.core.loop.rlm_seam import QueryLM
    from deepagent_magics.core.model.calls import REQUEST
    from deepagent_magics.core.run.session import Session, activate, deactivate
    from deepagent_magics.core.model.retries import RetryPolicy, with_retries
    from deepagent_magics.core.run.run import Run
    from deepagent_magics.core.workspace.workspace import Workspace

    with FakeProvider([slow(ANSWER), slow(ANSWER), slow(ANSWER)]) as provider:
        run = Run("t")
        probe = Probe()
        run.subscribe(probe)
        run.start()
        lm = with_retries(provider_lm(provider), run, RetryPolicy(), layers_for(REQUEST))
        query = QueryLM(lm, through)  # what RLM's llm_query calls (core/loop/rlm_seam.py)
        token = activate(Session(run, Workspace(tmp_path)))
        try:
            assert query("between steps")[0] == ANSWER
            run.begin_step("r", "c")
            assert query("inside a step")[0] == ANSWER
            assert lm("the agent's code calls the LM itself")[0] == ANSWER
        finally:
            deactivate(token)
        assert [bool(request["body"].get("stream")) for request in provider.requests] == [False, True, False]
        assert queries(probe) and all(data["step"] == 1 for data, _ in queries(probe))


# ---------------------------------------------------------------- a broken stream
def test_an_llm_query_stream_cut_off_midway_is_asked_again_whole(tmp_path):
    probe = Probe()
    run, provider = play(tmp_path, [streamed(ASK), slow(ANSWER, cut_after=3), Reply(content=ANSWER),
                                    streamed(SUBMIT)], probe)
    assert run.status == "finished" and run.result == ANSWER, run.error
    assert [bool(request["body"].get("stream")) for request in provider.requests] == [True, True, False, True]
    texts = [data["text"] for data, _ in queries(probe)]
    assert "" in texts[1:], "what was shown of the broken answer goes"


# ---------------------------------------------------------------- the displays
HOSTILE = '<img src=x onerror=alert(1)><script>alert("q")</script> then more words to stream slowly'


def test_the_dashboard_shows_the_llm_query_inside_its_step_escaped_then_drops_it(tmp_path):
    from deepagent_magics.core.run.run import Run

    looks = []
    with FakeProvider([streamed(ASK), slow(HOSTILE, chunk=3), streamed(SUBMIT)]) as provider:
        run = Run("Find the answer")
        dashboard = Dashboard(run)

        def listen(event):
            dashboard.on_event(event)
            if event.kind == LLM_QUERY_STREAMING and event.data["text"] and not event.data["done"]:
                looks.append(dashboard.root.steps[0].body.value)

        run.subscribe(listen)
        agent = DeepAgent(lm=provider_lm(provider), workspace=tmp_path, max_iters=6, max_depth=0)
        agent.run(run.task, {}, run=run)
    assert run.status == "finished", run.error
    assert looks and all("dag-query" in look and "llm_query 1" in look for look in looks)
    assert any("&lt;img src=x" in look for look in looks)
    assert not any("<img" in look or "<script" in look for look in looks)
    final = dashboard.root.steps[0].body.value
    assert "dag-query" not in final and "<img" not in final


def test_the_text_display_rewrites_one_line_for_the_llm_query(tmp_path):
    class Terminal:
        def __init__(self):
            self.written = []

        def write(self, text):
            self.written.append(text)

        def flush(self):
            pass

        def isatty(self):
            return True

    from deepagent_magics.core.run.run import Run

    terminal = Terminal()
    with FakeProvider([streamed(ASK), slow(ANSWER), streamed(SUBMIT)]) as provider:
        run = Run("Find the answer")
        TextProgress(run, stream=terminal)
        DeepAgent(lm=provider_lm(provider), workspace=tmp_path, max_iters=6, max_depth=0).run(run.task, {}, run=run)
    assert run.status == "finished", run.error
    live = [text for text in terminal.written if text.startswith("\r") and "llm_query" in text]
    assert live and any("step 1 llm_query 1" in text and "Forty-two" in text for text in live)
    assert all("\n" not in text for text in live)


@pytest.mark.kernel
def test_a_sub_agents_llm_query_streams_on_the_sub_agents_run(tmp_path):
    from deepagent_magics.interpreters.pool import KernelPool

    delegate = {"reasoning": "Delegate.", "code": "reply = delegate('CHILD: find the answer')\nprint(reply)"}
    probe = Probe()
    pool = KernelPool(size=1)
    try:
        with FakeProvider([streamed(delegate), streamed(ASK), slow(ANSWER), streamed(SUBMIT),
                           streamed(SUBMIT)]) as provider:
            agent = DeepAgent(lm=provider_lm(provider), workspace=tmp_path, max_iters=6, pool=pool, timeout=60)
            run = agent.run("Find the answer", {}, listeners=[probe])
    finally:
        pool.stop()
    assert run.status == "finished" and run.result == ANSWER, run.error
    child = run.steps[0].children[0]
    seen = [(each is child, data["step"]) for kind, each, data, _ in probe.seen if kind == LLM_QUERY_STREAMING]
    assert seen and set(seen) == {(True, 1)}
    assert any(0 < len(data["text"]) < len(ANSWER) for kind, _, data, _ in probe.seen if kind == LLM_QUERY_STREAMING)
