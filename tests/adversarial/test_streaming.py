"""Streaming into the display (issue 15, part 1): a step shows while the model writes it.

The local provider (`testing_provider.FakeProvider`) streams each answer in small chunks
with pauses, to DSPy's real client. What must hold: the run's events carry the partial
reasoning and code before the step starts, for the root and for a sub-agent; the text
display and the dashboard show them in a real InteractiveShell; the run's record, event
log, trajectory and usage are the same with and without streaming; it can be turned off
(``DeepAgent.stream``, ``--no-stream``, ``%deepagent_config --stream off``); a scripted
model falls back silently; secrets never show, not even while half-written; a stream cut
off midway is asked again unstreamed; an interrupt ends the stream; under a running
event loop (a notebook's) it streams from a helper thread.
"""

from __future__ import annotations

import asyncio
import io
import json
import secrets
import sys
import threading
import time

import dspy
import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.core.run.run import RUN_FINISHED, STEP_STARTED, Run
from deepagent_magics.core.model.streaming import STEP_STREAMING, THROTTLE, fields
from deepagent_magics.records.store import runs_dir
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.testing_provider import FakeProvider, Reply

KEY = "sk-local"
REASONING = "Let me look at the sales table first, then total it by region carefully."
STEPS = [
    {"reasoning": REASONING, "code": "total = sum([120, 95, 143])\nprint(total)"},
    {"reasoning": "Report the total.", "code": "SUBMIT(result=str(total))"},
]


def streamed(step: dict, chunk: int = 6, pause: float = 0.02, **kwargs) -> Reply:
    return Reply(content=Reply.fields(**step).content, chunk=chunk, pause=pause, **kwargs)


def provider_lm(provider: FakeProvider, model: str = "openai/fake-model", **kwargs) -> dspy.LM:
    return dspy.LM(model, api_base=provider.url, api_key=kwargs.pop("api_key", KEY), cache=False, num_retries=0,
                   **kwargs)


class Probe:
    """A listener that notes, at every event, what it says and whether its step had started yet."""

    def __init__(self, look=None):
        self.seen: list[tuple[str, Run, dict, int]] = []
        self.look = look
        self.looks: list = []

    def __call__(self, event) -> None:
        self.seen.append((event.kind, event.run, dict(event.data), len(event.run.steps)))
        if self.look is not None and event.kind == STEP_STREAMING:
            self.looks.append((event.data["index"], len(event.run.steps), self.look()))

    def streaming(self, run=None):
        return [(data, steps) for kind, each, data, steps in self.seen
                if kind == STEP_STREAMING and (run is None or each is run)]


def run_streamed(tmp_path, script, probe=None, stream=True, model="openai/fake-model", namespace=None, **lm_kwargs):
    with FakeProvider(script) as provider:
        agent = DeepAgent(lm=provider_lm(provider, model, **lm_kwargs), workspace=tmp_path, max_iters=6, max_depth=0)
        agent.stream = stream
        run = agent.run("Total the sales", namespace if namespace is not None else {},
                        listeners=[probe] if probe else [])
    return run, provider


# ---------------------------------------------------------------- the events
@pytest.mark.parametrize("model", ["openai/fake-model", "anthropic/claude-sonnet-4-5"])
def test_partial_reasoning_and_code_arrive_as_events_before_the_step_starts(tmp_path, model):
    probe = Probe()
    run, provider = run_streamed(tmp_path, [streamed(step) for step in STEPS], probe, model=model)
    assert run.status == "finished" and run.result == "358", run.error
    assert all(request["body"].get("stream") is True for request in provider.requests)
    first = [(data, steps) for data, steps in probe.streaming() if data["index"] == 1]
    assert first and all(steps == 0 for _, steps in first)  # all before step 1 opened
    partial = [data["reasoning"] for data, _ in first if 0 < len(data["reasoning"]) < len(REASONING)]
    assert partial and all(REASONING.startswith(text) for text in partial)
    assert any(data["code"] and data["code"] != STEPS[0]["code"] for data, _ in first)  # code half-written
    assert all(STEPS[0]["code"].startswith(data["code"]) for data, _ in first)
    kinds = [kind for kind, *_ in probe.seen]
    assert kinds.index(STEP_STARTED) > kinds.index(STEP_STREAMING)
    assert [data["index"] for data, _ in probe.streaming()][-1] == 2


def test_markers_split_across_chunks_never_show_in_the_partial_fields(tmp_path):
    probe = Probe()
    run, _ = run_streamed(tmp_path, [streamed(step, chunk=1, pause=0.002) for step in STEPS], probe)
    assert run.status == "finished", run.error
    assert len(probe.streaming()) > 4
    for data, _ in probe.streaming():
        for text in (data["reasoning"], data["code"]):
            assert "[[" not in text and "##" not in text and not text.endswith("["), text


@pytest.mark.parametrize("text, expected", [
    ("", ("", "")),
    ("[[ ## reas", ("", "")),
    ("[[ ## reasoning ## ]]\nThinking ab", ("Thinking ab", "")),
    ("[[ ## reasoning ## ]]\nThinking.\n\n[", ("Thinking.", "")),
    ("[[ ## reasoning ## ]]\nThinking.\n\n[[ ## co", ("Thinking.", "")),
    ("[[ ## reasoning ## ]]\nThinking.\n\n[[ ## code ## ]]\nx = [1, 2][0", ("Thinking.", "x = [1, 2][0")),
    ("[[ ## reasoning ## ]]\nA list a[i] of [[x]].\n\n[[ ## code ## ]]\nprint(1)\n\n[[ ## completed ## ]]",
     ("A list a[i] of [[x]].", "print(1)")),
    ("Just prose, no markers", ("Just prose, no markers", "")),
])
def test_the_fields_so_far_are_cut_at_markers_even_half_written_ones(text, expected):
    assert fields(text) == expected


def test_while_the_model_thinks_before_its_first_chunk_the_writing_time_goes_on(tmp_path):
    probe = Probe()
    run, _ = run_streamed(tmp_path, [streamed(STEPS[0], delay=3.5), streamed(STEPS[1])], probe)
    assert run.status == "finished", run.error
    silent = [data["elapsed"] for data, _ in probe.streaming() if data["index"] == 1 and not data["reasoning"]]
    assert len(silent) >= 3 and silent == sorted(silent) and silent[-1] >= 2.0  # 0s, 1s, 2s: not stuck at 0s


def test_a_huge_step_shows_only_its_newest_part_while_written_and_whole_once_done(tmp_path):
    from deepagent_magics.core.model.streaming import SHOWN_CHARS

    huge = {"reasoning": "".join(f"line {i} of a very long plan\n" for i in range(20_000)), "code": "SUBMIT(result='ok')"}
    probe = Probe()
    run, _ = run_streamed(tmp_path, [streamed(huge, chunk=20_000, pause=0.05)], probe)
    assert run.status == "finished", run.error
    shown = [data["reasoning"] for data, _ in probe.streaming() if data["reasoning"]]
    assert shown and all(len(text) <= SHOWN_CHARS for text in shown)
    assert shown[-1].startswith("…") and shown[-1][1:] in huge["reasoning"]  # the newest part, as written
    assert "line 0 of" not in shown[-1]
    assert run.steps[0].reasoning == huge["reasoning"].strip()  # the step itself is whole


def test_events_are_throttled_not_one_per_chunk(tmp_path):
    long_step = {"reasoning": "word " * 400, "code": "SUBMIT(result='ok')"}
    probe = Probe()
    started = time.monotonic()
    run, _ = run_streamed(tmp_path, [streamed(long_step, chunk=1, pause=0)], probe)
    elapsed = time.monotonic() - started
    assert run.status == "finished", run.error
    assert 1 <= len(probe.streaming()) <= 3 + elapsed / THROTTLE  # about 2,000 chunks


# ---------------------------------------------------------------- the displays, in a real InteractiveShell
class Recorder(io.StringIO):
    """sys.stdout that notes, for each write, how many steps the run in the notebook had."""

    def __init__(self, shell):
        super().__init__()
        self.shell, self.writes = shell, []

    def isatty(self):
        return True  # a terminal: a line can be rewritten

    def write(self, text):
        run = self.shell.user_ns.get("_deepagent_run")
        self.writes.append((text, len(run.steps) if run is not None else -1))
        return super().write(text)


def test_the_text_display_rewrites_one_line_with_the_partial_reasoning_before_the_step_completes(ip, tmp_path,
                                                                                                monkeypatch):
    with FakeProvider([streamed(step) for step in STEPS]) as provider:
        ip.user_ns["lm"] = provider_lm(provider)
        ip.run_line_magic("deepagent_config", "--quiet off")
        recorder = Recorder(ip)
        monkeypatch.setattr(sys, "stdout", recorder)
        result = ip.run_cell("%%deepagent --lm lm --display text\nTotal the sales")
        monkeypatch.undo()
    assert result.error_in_exec is None
    assert ip.user_ns["_deepagent_run"].status == "finished"
    live = [(text, steps) for text, steps in recorder.writes if text.startswith("\r") and "writing…" in text]
    assert live and all(steps == 0 for text, steps in live if "step 1/" in text)
    assert any(REASONING[:12] in text and REASONING not in text for text, _ in live)  # part of it, live
    assert "\n" not in "".join(text for text, _ in live)  # one line, rewritten
    out = recorder.getvalue()
    assert "step 1/6 ✓ Let me look at the sales table" in out or "step 1/" in out
    final = out.split("\r")[-1]
    assert "finished" in final  # the summary ends the display; the live line gave way to it


def test_a_log_file_gets_the_lasting_lines_only_no_rewritten_ones(tmp_path):
    from deepagent_magics.display.text import TextProgress

    log = io.StringIO()  # not a terminal: `deepagent run 2> log`, CI
    with FakeProvider([streamed(step) for step in STEPS]) as provider:
        agent = DeepAgent(lm=provider_lm(provider), workspace=tmp_path, max_iters=6, max_depth=0)
        run = Run("Total the sales")
        TextProgress(run, stream=log)
        probe = Probe()
        agent.run(run.task, {}, run=run, listeners=[probe])
    assert run.status == "finished" and probe.streaming()
    assert "\r" not in log.getvalue() and "writing…" not in log.getvalue()
    assert "step 1/6" in log.getvalue() and "finished" in log.getvalue()


def test_the_dashboard_shows_the_partial_reasoning_and_writing_in_its_status_before_the_step(ip, tmp_path):
    from deepagent_magics.display import show_run

    run = Run("Total the sales")
    dashboard = show_run(run, shell=ip, mode="widgets")

    def look():
        panel = getattr(dashboard.root, "writing", None)
        return (panel.widget.value if panel else "", panel.widget.layout.display if panel else "none",
                dashboard.status.value)

    probe = Probe(look)
    with FakeProvider([streamed(step) for step in STEPS]) as provider:
        agent = DeepAgent(lm=provider_lm(provider), workspace=tmp_path, max_iters=6, max_depth=0)
        agent.run(run.task, ip.user_ns, run=run, shell=ip, listeners=[probe])
    assert run.status == "finished", run.error
    before = [value for index, steps, value in probe.looks if index == 1 and steps == 0]
    assert any(REASONING[:12] in html and REASONING not in html and display is None for html, display, _ in before)
    assert any("writing…" in status for _, _, status in before)
    assert dashboard.root.writing.widget.value == "" and dashboard.root.writing.widget.layout.display == "none"
    assert "writing…" not in dashboard.status.value
    dashboard.close()


# ---------------------------------------------------------------- what the run records
def comparable(record: dict) -> dict:
    drop = {"id", "thread", "run", "started_at", "ended_at", "time", "elapsed", "writer", "workspace", "updated_at",
            "pid", "host", "host_mac"}  # host_mac: the signature (records/host_key.py) covers all of it

    def clean(value):
        if isinstance(value, dict):
            return {key: clean(item) for key, item in value.items() if key not in drop}
        if isinstance(value, list):
            return [clean(item) for item in value]
        return value

    return clean(record)


def test_the_record_event_log_trajectory_and_usage_are_the_same_with_and_without_streaming(tmp_path):
    outcomes = {}
    for label, stream in (("streamed", True), ("plain", False)):
        probe = Probe()
        run, provider = run_streamed(tmp_path / label, [streamed(step) for step in STEPS], probe, stream=stream)
        assert run.status == "finished", run.error
        assert all(bool(request["body"].get("stream")) is stream for request in provider.requests)
        record = json.loads((runs_dir(tmp_path / label) / f"{run.id}.json").read_text())
        log = [json.loads(line) for line in (runs_dir(tmp_path / label) / f"{run.id}.events.jsonl").read_text().splitlines()]
        outcomes[label] = (run, record, log, probe)
    streamed_run, streamed_record, streamed_log, streamed_probe = outcomes["streamed"]
    plain_run, plain_record, plain_log, plain_probe = outcomes["plain"]
    assert streamed_probe.streaming() and not plain_probe.streaming()
    assert comparable(streamed_record) == comparable(plain_record)
    assert [event["kind"] for event in streamed_log] == [event["kind"] for event in plain_log]
    assert STEP_STREAMING not in {event["kind"] for event in streamed_log}
    assert [comparable(event["data"]) for event in streamed_log] == [comparable(event["data"]) for event in plain_log]
    assert comparable(streamed_run.trajectory) == comparable(plain_run.trajectory)
    assert streamed_run.usage.to_dict() == plain_run.usage.to_dict()


@pytest.mark.parametrize("first", [
    "I would total the sales and then report the number.",  # prose, no field markers
    json.dumps(STEPS[0]),  # JSON instead of markers
    "",  # an empty answer
], ids=["prose", "json", "empty"])
def test_an_answer_that_does_not_parse_gets_the_same_next_try_with_and_without_streaming(tmp_path, first):
    outcomes = {}
    for label, stream in (("streamed", True), ("plain", False)):
        script = [Reply(content=first, chunk=6, pause=0.01),
                  Reply(content=json.dumps(STEPS[0])), streamed(STEPS[1])]
        run, provider = run_streamed(tmp_path / label, script, stream=stream)
        outcomes[label] = (run.status, run.result, len(provider.requests),
                           [bool(request["body"].get("response_format")) for request in provider.requests])
    assert outcomes["streamed"] == outcomes["plain"]
    assert outcomes["plain"][:3] == ("finished", "358", 3)


# ---------------------------------------------------------------- turning it off, falling back
def test_the_magic_streams_by_default_and_not_with_no_stream_or_when_configured_off(ip, tmp_path):
    for flags, config, expected in (("", "on", True), ("--no-stream", "on", False), ("", "off", False)):
        with FakeProvider([streamed(step) for step in STEPS]) as provider:
            ip.user_ns["lm"] = provider_lm(provider)
            ip.run_line_magic("deepagent_config", f"--stream {config}")
            result = ip.run_cell(f"%%deepagent --lm lm {flags}\nTotal the sales")
            assert result.error_in_exec is None
            assert ip.user_ns["_deepagent_run"].status == "finished"
            assert [bool(request["body"].get("stream")) for request in provider.requests] == [expected] * len(STEPS)
    ip.run_line_magic("deepagent_config", "--stream on")


def test_a_scripted_model_runs_unstreamed_and_silently(tmp_path, capsys):
    probe = Probe()
    lm = ScriptedLM([(step["reasoning"], step["code"]) for step in STEPS])
    run = DeepAgent(lm=lm, workspace=tmp_path, max_depth=0).run("Total the sales", {}, listeners=[probe])
    assert run.status == "finished" and run.result == "358"
    assert probe.streaming() == []
    captured = capsys.readouterr()
    assert "stream" not in (captured.out + captured.err).lower()


def test_a_stream_cut_off_midway_is_asked_again_unstreamed_and_the_run_goes_on(tmp_path):
    probe = Probe()
    script = [streamed(STEPS[0], cut_after=5), Reply.fields(**STEPS[0]), streamed(STEPS[1])]
    run, provider = run_streamed(tmp_path, script, probe)
    assert run.status == "finished" and run.result == "358", run.error
    assert [bool(request["body"].get("stream")) for request in provider.requests] == [True, False, True]
    assert len(run.steps) == 2 and run.steps[0].reasoning == REASONING


@pytest.mark.parametrize("model", ["openai/fake-model", "anthropic/claude-sonnet-4-5"])
def test_a_server_that_answers_a_stream_request_whole_is_asked_plainly_from_then_on(tmp_path, model):
    whole = Reply(content=Reply.fields(**STEPS[0]).content, ignore_stream=True)
    run, provider = run_streamed(tmp_path, [whole, Reply.fields(**STEPS[0]), Reply.fields(**STEPS[1])], model=model)
    assert run.status == "finished" and run.result == "358", run.error
    assert [bool(request["body"].get("stream")) for request in provider.requests] == [True, False, False]


def test_a_broken_stream_that_fails_again_ends_the_run_failed_with_the_reason(tmp_path):
    script = [streamed(STEPS[0], cut_after=3), Reply.failure(500, "upstream is down", error_type="server_error")]
    run, provider = run_streamed(tmp_path, script)
    assert run.status == "failed" and "upstream is down" in run.error
    assert len(provider.requests) == 2


# ---------------------------------------------------------------- secrets, half-written
def test_a_secret_the_model_writes_never_shows_not_even_half_written(tmp_path, monkeypatch):
    key = "sk-" + secrets.token_hex(20)
    env_secret = secrets.token_urlsafe(24)
    monkeypatch.setenv("DAG_STREAM_TEST_TOKEN", env_secret)
    step = {"reasoning": f"The key is {key} and the token is {env_secret}, shown in full.",
            "code": f"k = '{key}'\nt = '{env_secret}'\nSUBMIT(result='done')"}
    probe = Probe()
    run, _ = run_streamed(tmp_path, [streamed(step, chunk=3, pause=0.01)], probe, api_key=key)
    assert run.status == "finished", run.error
    shown = [data["reasoning"] + "\n" + data["code"] for data, _ in probe.streaming()]
    assert len(shown) > 3
    for secret in (key, env_secret):
        pieces = {secret[i:i + 8] for i in range(len(secret) - 7)}
        for text in shown:
            assert not any(piece in text for piece in pieces), text


# ---------------------------------------------------------------- threads, loops, interrupts
def test_under_a_running_event_loop_it_streams_from_a_helper_thread(tmp_path):
    probe = Probe()
    threads = []

    async def notebook_cell():
        with FakeProvider([streamed(step) for step in STEPS]) as provider:
            agent = DeepAgent(lm=provider_lm(provider), workspace=tmp_path, max_iters=6, max_depth=0)
            return agent.run("Total the sales", {}, listeners=[probe, lambda e: threads.append(
                (e.kind, threading.current_thread() is threading.main_thread()))])

    run = asyncio.run(notebook_cell())
    assert run.status == "finished" and run.result == "358", run.error
    partial = [data for data, steps in probe.streaming() if 0 < len(data["reasoning"]) < len(REASONING)]
    assert partial
    assert (STEP_STREAMING, False) in threads and (STEP_STARTED, True) in threads


def test_an_interrupt_while_a_step_streams_ends_the_run_interrupted_and_nothing_shows_after(tmp_path):
    seen = []

    def interrupt(event):
        seen.append(event.kind)
        if event.kind == STEP_STREAMING and event.data["reasoning"]:
            raise KeyboardInterrupt

    slow = streamed(STEPS[0], chunk=4, pause=0.05)
    with FakeProvider([slow]) as provider:
        agent = DeepAgent(lm=provider_lm(provider), workspace=tmp_path, max_iters=6, max_depth=0)
        run = Run("Total the sales")
        with pytest.raises(KeyboardInterrupt):
            agent.run(run.task, {}, run=run, listeners=[interrupt])
        time.sleep(0.5)
    assert run.status == "interrupted"
    assert STEP_STREAMING not in seen[seen.index(RUN_FINISHED):]


def test_an_interrupt_while_the_model_is_silent_does_not_leave_the_call_running(tmp_path):
    import _thread

    silent = streamed(STEPS[0], delay=6)  # thinks for six seconds before its first byte
    timer = None

    def listener(event):
        nonlocal timer
        if event.kind == STEP_STREAMING and timer is None:
            timer = threading.Timer(0.5, _thread.interrupt_main)
            timer.start()

    async def notebook_cell():
        with FakeProvider([silent]) as provider:
            agent = DeepAgent(lm=provider_lm(provider), workspace=tmp_path, max_iters=6, max_depth=0)
            run = Run("Total the sales")
            try:
                agent.run(run.task, {}, run=run, listeners=[listener])
            except KeyboardInterrupt:
                pass
            deadline = time.monotonic() + 3  # well before the six seconds are up
            while time.monotonic() < deadline and any(t.name == "deepagent-step-stream" for t in threading.enumerate()):
                time.sleep(0.05)
            left = [t.name for t in threading.enumerate() if t.name == "deepagent-step-stream"]
            return run, left

    loop = asyncio.new_event_loop()
    try:
        run, left = loop.run_until_complete(notebook_cell())
    finally:
        loop.close()
    assert run.status == "interrupted"
    assert left == []


def test_an_interrupt_under_a_running_loop_stops_the_helper_threads_stream(tmp_path):
    import _thread

    seen = []
    slow = streamed(STEPS[0], chunk=2, pause=0.1)  # about six seconds in all

    def listener(event):
        seen.append((event.kind, time.monotonic()))
        if event.kind == STEP_STREAMING and event.data["reasoning"] and not any(k == "interrupt" for k, _ in seen):
            seen.append(("interrupt", time.monotonic()))
            _thread.interrupt_main()

    async def notebook_cell():
        with FakeProvider([slow]) as provider:
            agent = DeepAgent(lm=provider_lm(provider), workspace=tmp_path, max_iters=6, max_depth=0)
            run = Run("Total the sales")
            try:
                agent.run(run.task, {}, run=run, listeners=[listener])
            except KeyboardInterrupt:
                pass
            time.sleep(1.0)  # the helper thread would go on streaming for seconds
            return run

    loop = asyncio.new_event_loop()  # as ipykernel's: no asyncio SIGINT handler, an interrupt raises in the cell
    try:
        run = loop.run_until_complete(notebook_cell())
    finally:
        loop.close()
    assert run.status == "interrupted"
    finished = next(at for kind, at in seen if kind == RUN_FINISHED)
    interrupted = next(at for kind, at in seen if kind == "interrupt")
    assert finished - interrupted < 2.5  # not after the rest of the ~6 s reply
    assert not [kind for kind, at in seen if at > finished and kind == STEP_STREAMING]
    assert not any(thread.name == "deepagent-step-stream" for thread in threading.enumerate())


# ---------------------------------------------------------------- a sub-agent, in a kernel of its own
CHILD_REASONING = "Count the words of the file, one by one, and return the count."


@pytest.mark.kernel
def test_a_sub_agents_steps_stream_into_the_events_and_its_nested_dashboard_view(tmp_path):
    from deepagent_magics.display import show_run
    from deepagent_magics.interpreters.pool import KernelPool

    (tmp_path / "a.txt").write_text("one two three")
    script = [
        streamed({"reasoning": "Delegate the counting.", "code": "n = delegate('Count the words of a.txt')\nprint(n)"}),
        streamed({"reasoning": CHILD_REASONING, "code": "n = len(open('a.txt').read().split())\nprint(n)"}),
        streamed({"reasoning": "Return it.", "code": "SUBMIT(result=str(n))"}),
        streamed({"reasoning": "Report.", "code": "SUBMIT(result=str(n))"}),
    ]
    run = Run("Count the words")
    dashboard = show_run(run, mode="widgets")

    def look():
        views = [view for view in dashboard.views.values() if view.nested]
        panel = getattr(views[0], "writing", None) if views else None
        return panel.widget.value if panel else ""

    probe = Probe(look)
    pool = KernelPool(size=1)
    try:
        with FakeProvider(script) as provider:
            agent = DeepAgent(lm=provider_lm(provider), workspace=tmp_path, pool=pool, max_iters=6, timeout=60)
            agent.run(run.task, {}, run=run, listeners=[probe])
    finally:
        pool.stop()
    assert run.status == "finished" and run.result == "3", run.error
    child = run.children[0]
    assert child.status == "finished" and child.steps[0].reasoning == CHILD_REASONING
    before = [data for data, steps in probe.streaming(child) if data["index"] == 1 and steps == 0]
    assert any(0 < len(data["reasoning"]) < len(CHILD_REASONING) for data in before)
    assert any(CHILD_REASONING[:10] in html and CHILD_REASONING not in html for _, _, html in probe.looks)


@pytest.mark.kernel
def test_parallel_sub_agents_stream_side_by_side_each_into_its_own_run(tmp_path):
    from deepagent_magics.interpreters.pool import KernelPool

    (tmp_path / "a.txt").write_text("one two")
    (tmp_path / "b.txt").write_text("three four five")
    child = {"reasoning": CHILD_REASONING, "code": "n = len(open(task.split()[-1]).read().split())\nSUBMIT(result=str(n))"}
    script = [
        streamed({"reasoning": "Fan out.",
                  "code": "counts = delegate_batched(['Count the words of a.txt', 'Count the words of b.txt'])\nprint(counts)"}),
        streamed(child, pause=0.03), streamed(child, pause=0.03),
        streamed({"reasoning": "Report.", "code": "SUBMIT(result=str(counts))"}),
    ]
    probe = Probe()
    pool = KernelPool(size=2)
    try:
        with FakeProvider(script) as provider:
            agent = DeepAgent(lm=provider_lm(provider), workspace=tmp_path, pool=pool, max_iters=6, timeout=60)
            run = agent.run("Count the words of both files", {}, listeners=[probe])
    finally:
        pool.stop()
    assert run.status == "finished" and run.result == "['2', '3']", run.error
    for each in run.children:
        assert each.status == "finished"
        before = [data for data, steps in probe.streaming(each) if steps == 0]
        assert any(0 < len(data["reasoning"]) < len(CHILD_REASONING) for data in before), each.task
        assert all(CHILD_REASONING.startswith(data["reasoning"]) for data in before)
