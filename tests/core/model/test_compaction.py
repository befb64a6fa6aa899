"""Compaction: a long run's prompt stays bounded, the sub-LM's summary replaces the older steps in
the prompt, nothing is lost (run, record, ``history()``), and what DSPy must keep doing for it."""

from __future__ import annotations

import json

import dspy
from dspy.primitives.repl_types import REPLEntry, REPLHistory

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.model import compaction
from deepagent_magics.core.model.compaction import COMPACTION, CompactedHistory, threshold_tokens
from deepagent_magics.core.loop.pipeline import StepPredict

SUMMARY = "SUMMARY-OF-OLD-STEPS: made chunk_0 .. chunk_n"


def _long_steps(count, width=600):
    return [(f"Make chunk {i}", f"chunk_{i} = 'v{i}' + 'x' * {width}\nprint(chunk_{i})") for i in range(count)]


def _run(tmp_path, steps, compact_at, replies=SUMMARY, tail=None):
    lm = ScriptedLM(steps + (tail or [("Done", "SUBMIT(result='ok')")]), replies=replies)
    agent = DeepAgent(lm=lm, workspace=tmp_path, max_depth=0, max_iters=len(steps) + 5)
    agent.compact_at = compact_at
    events = []
    run = agent.run("make many chunks", {}, listeners=[lambda e: events.append(e) if e.kind == COMPACTION else None])
    step_requests = [r["user"] for r in lm.requests if "[[ ## repl_history ## ]]" in r["user"]]
    return run, step_requests, events, lm


def test_rlm_hands_its_history_to_the_action_predictor_and_the_adapter_formats_our_subclass(workspace):
    """The DSPy contract compaction relies on: RLM calls ``generate_action(repl_history=REPLHistory)``,
    whose entries have reasoning, code and output; the adapter renders the value with ``format()``."""
    seen = []
    original = StepPredict.forward

    def spy(self, **kwargs):
        seen.append(kwargs.get("repl_history"))
        return original(self, **kwargs)

    StepPredict.forward = spy
    try:
        DeepAgent(lm=ScriptedLM([("a", "print(1)"), ("b", "SUBMIT(result='ok')")]), workspace=workspace).run("t", {})
    finally:
        StepPredict.forward = original
    assert len(seen) == 2 and all(isinstance(history, REPLHistory) for history in seen)
    entry = seen[1].entries[0]
    assert (entry.reasoning, entry.code, entry.output) == ("a", "print(1)", "1")
    assert set(REPLEntry.model_fields) >= {"reasoning", "code", "output"}
    compacted = CompactedHistory(entries=[entry], summary="THE SUMMARY", summarized=4)
    lm = ScriptedLM([], replies="x")
    with dspy.context(lm=lm):
        dspy.Predict("repl_history: dspy.primitives.repl_types.REPLHistory -> answer")(repl_history=compacted)
    assert "THE SUMMARY" in lm.requests[0]["user"] and "\nStep 5. " in lm.requests[0]["user"]
    assert "Steps 1-4, compacted" in lm.requests[0]["user"]


def test_a_long_run_stays_bounded_and_keeps_the_recent_steps_verbatim(tmp_path):
    run, requests, events, _ = _run(tmp_path, _long_steps(40), compact_at=1500)
    assert run.status == "finished" and len(run.steps) == 41
    assert events, "no compaction happened"
    assert len(requests[-1]) <= 2 * len(requests[4]) + 2000  # the request at step 41 is not 8x step 5's
    assert SUMMARY in requests[-1] and "Steps 1-" in requests[-1]
    assert "chunk_39 = 'v39'" in requests[-1] and "chunk_1 = 'v1'" not in requests[-1]  # old steps only summarised
    assert events[0].data["chars_after"] < events[0].data["chars_before"]


def test_nothing_is_lost_run_record_and_history_tool(tmp_path):
    tail = [("Read an old output back", "old = history(2, 2)[0]\nprint(len(history()), old['output'][:3])"),
            ("Done", "SUBMIT(result=str(len(history())) + ' ' + history(1, 1)[0]['code'][:8])")]
    run, requests, events, _ = _run(tmp_path, _long_steps(20), compact_at=1200, tail=tail)
    assert events and run.status == "finished"
    assert run.steps[20].output == "21 v1x"  # step 2's output, compacted out of the prompt, read back in full
    assert run.result == "22 chunk_0 "
    assert all(step.output for step in run.steps[:20])
    record = json.loads((tmp_path / ".deepagent" / "runs" / f"{run.id}.json").read_text())
    assert len(record["steps"]) == 22 and record["config"]["compactions"][0]["summarized"] >= 1
    assert "v0xxxx" in record["steps"][0]["output"]


def test_compaction_off_lets_the_prompt_grow(tmp_path):
    for off in (None, 0):
        run, requests, events, _ = _run(tmp_path, _long_steps(12), compact_at=off)
        assert not events and "chunk_0 = 'v0'" in requests[-1] and len(requests[-1]) > 3 * len(requests[1])


def test_a_failing_or_empty_sub_lm_falls_back_and_the_run_goes_on(tmp_path):
    def broken(prompt):
        raise RuntimeError("provider down")

    for replies in (broken, ""):
        run, requests, events, _ = _run(tmp_path, _long_steps(12), compact_at=1000, replies=replies)
        assert run.status == "finished" and events
        assert "- Make chunk 0" in events[0].data["summary"]


def test_the_summary_is_bounded_whatever_the_sub_lm_returns(tmp_path):
    run, requests, events, _ = _run(tmp_path, _long_steps(12), compact_at=1000, replies="word " * 20_000)
    assert events and len(events[0].data["summary"]) <= compaction.SUMMARY_CHARS


def test_thresholds_in_tokens_or_a_fraction_of_the_context_window():
    import litellm

    known = litellm.get_model_info("gpt-4o-mini")["max_input_tokens"]
    assert threshold_tokens(0.5, dspy.LM("openai/gpt-4o-mini")) == int(0.5 * known)
    assert threshold_tokens(0.5, ScriptedLM([])) == int(0.5 * compaction.FALLBACK_WINDOW)
    assert threshold_tokens(5000, None) == 5000
    assert threshold_tokens(None, None) is None and threshold_tokens(0, None) is None


def test_the_dashboard_and_the_text_view_mark_where_compaction_happened(tmp_path):
    import io

    from deepagent_magics.display.dashboard import Dashboard
    from deepagent_magics.display.text import TextProgress

    lm = ScriptedLM(_long_steps(12) + [("Done", "SUBMIT(result='ok')")], replies="THE <b>SUMMARY</b>")
    agent = DeepAgent(lm=lm, workspace=tmp_path, max_depth=0, max_iters=20)
    agent.compact_at = 1000
    from deepagent_magics.core.run.run import Run

    run = Run("make many chunks")
    dashboard = Dashboard(run)
    stream = io.StringIO()
    text = TextProgress(run, stream=stream)
    agent.run("make many chunks", {}, run=run, listeners=[dashboard.on_event])
    text.close()
    items = [child for page in dashboard.root.pages.children for child in page.children]
    marks = [item for item in items if "compacted steps 1–" in getattr(item, "value", "")]
    assert marks and "THE &lt;b&gt;SUMMARY&lt;/b&gt;" in marks[0].value  # the summary shown, escaped
    position = items.index(marks[0])
    assert 0 < position < len(items) - 1  # between steps, where it happened
    assert "⟲ compacted steps 1-" in stream.getvalue()


def test_compact_at_flag_and_its_mistakes(ip):
    import pytest
    from IPython.core.error import UsageError

    ip.user_ns["lm"] = ScriptedLM(_long_steps(12) + [("Done", "SUBMIT(result='ok')")], replies=SUMMARY)
    ip.run_cell_magic("deepagent", "--lm lm --max-depth 0 --compact-at 1000", "make many chunks")
    assert ip.user_ns["_deepagent_run"].config["compactions"]
    ip.user_ns["lm"] = ScriptedLM(_long_steps(12) + [("Done", "SUBMIT(result='ok')")], replies=SUMMARY)
    ip.run_line_magic("deepagent_config", "--compact-at off")
    ip.run_cell_magic("deepagent", "--lm lm --max-depth 0", "make many chunks")
    assert "compactions" not in ip.user_ns["_deepagent_run"].config
    for line in ("--compact-at -1", "--compact-at lots", "--compact-at nan"):
        with pytest.raises(UsageError):
            ip.run_cell_magic("deepagent", f"--lm lm {line}", "task")
        with pytest.raises(UsageError):
            ip.run_line_magic("deepagent_config", line)


def test_the_bench_row_runs_and_reports_its_target():
    from bench import compaction as row
    from bench.common import Config

    out = row.run(Config(smoke=True))
    rows = out["tables"][0]["rows"]
    assert rows[0][0].endswith("compaction off") and rows[1][-1] != "0"  # compaction happened in the "on" play
    assert out["targets"][0]["met"] is True


def test_a_fraction_of_the_window_compacts_too_and_short_runs_never_ask_litellm(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(compaction, "_window", lambda model: asked.append(model) or compaction.FALLBACK_WINDOW)
    run, requests, events, _ = _run(tmp_path, _long_steps(3, width=10), compact_at=0.5)
    assert not events and asked == []  # a short history: no window lookup (LiteLLM's import costs seconds)
    run, requests, events, _ = _run(tmp_path, _long_steps(12), compact_at=0.01)  # 1% of 128k tokens = 5k chars
    assert events and asked
