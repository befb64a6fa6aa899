"""A traced run's spans (tracing/spans.py), as the OpenTelemetry SDK exports them: one trace, the run, its
steps, each model call and each tool call where it belongs, named and described by the GenAI conventions; a run
that fails or is interrupted ends its spans in error. (Each call's own span: test_operations.py; sub-agents:
test_subagents.py.)"""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from deepagent_magics import DeepAgent, Run
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tracing.spans import TreeTrace

from .captured import Captured

STEPS = [("Look.", "files = ls()\nanswer = llm_query('Say hi')\nprint(answer)"),
         ("Done.", "SUBMIT(result=answer)")]


def traced_run(captured: Captured, lm, tmp_path, task: str = "Greet", **settings):
    return DeepAgent(lm=lm, workspace=tmp_path, extensions=[captured.tracing], max_depth=0, **settings).run(task, {})


def test_a_run_is_one_trace_of_its_steps_model_calls_and_tool_calls(tmp_path):
    captured = Captured()
    run = traced_run(captured, ScriptedLM(STEPS, replies="hello", tokens=(100, 7)), tmp_path)
    assert run.status == "finished", run.error

    assert len({span.context.trace_id for span in captured.spans}) == 1
    agent = captured.one("invoke_agent deepagent")
    assert agent.parent is None and agent.kind is SpanKind.INTERNAL
    steps = captured.named("step")
    assert [step.attributes["deepagent.step.index"] for step in steps] == [1, 2]
    assert all(captured.parent(step) is agent for step in steps)

    chats = captured.named("chat demo")  # ScriptedLM's model id is scripted/demo: provider "scripted"
    by_kind = {kind: [c for c in chats if c.attributes["deepagent.call.kind"] == kind] for kind in ("step", "query")}
    assert [captured.parent(c) for c in by_kind["step"]] == steps  # each step's own model call, under it
    query = by_kind["query"][0]
    llm_query = captured.one("execute_tool llm_query")
    assert captured.parent(query) is llm_query and captured.parent(llm_query) is steps[0]
    assert captured.parent(captured.one("execute_tool ls")) is steps[0]
    assert all(chat.kind is SpanKind.CLIENT for chat in chats)

    thread = run.config["thread"]
    assert dict(agent.attributes) == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "deepagent", "gen_ai.conversation.id": thread,
        "gen_ai.provider.name": "scripted", "gen_ai.request.model": "demo", "deepagent.run.id": run.id,
        "deepagent.run.depth": 0, "deepagent.run.status": "finished",
        "gen_ai.usage.input_tokens": 300, "gen_ai.usage.output_tokens": 21}  # the run's three calls
    step_call = by_kind["step"][0].attributes
    assert step_call["gen_ai.operation.name"] == "chat" and step_call["gen_ai.provider.name"] == "scripted"
    assert step_call["gen_ai.request.model"] == "demo" and step_call["gen_ai.response.model"] == "scripted"
    assert step_call["gen_ai.usage.input_tokens"] == 100 and step_call["gen_ai.usage.output_tokens"] == 7
    assert step_call["gen_ai.response.finish_reasons"] == ("stop",)
    assert step_call["gen_ai.conversation.id"] == thread
    tool = captured.one("execute_tool ls").attributes
    assert tool["gen_ai.operation.name"] == "execute_tool" and tool["gen_ai.tool.name"] == "ls"
    assert tool["gen_ai.tool.type"] == "function" and tool["gen_ai.tool.description"].startswith("List")
    ids = [span.attributes["gen_ai.tool.call.id"] for span in captured.spans if span.name.startswith("execute_tool")]
    assert len(set(ids)) == 2 and all(each.startswith(run.id) for each in ids)
    assert all(span.status.status_code is StatusCode.UNSET for span in captured.spans)


def test_the_run_goes_under_the_span_current_where_it_is_called(tmp_path):
    captured = Captured()
    tracer = captured.provider.get_tracer("a notebook")
    with tracer.start_as_current_span("analysis cell") as cell:
        traced_run(captured, ScriptedLM(STEPS, replies="hello"), tmp_path)
    agent = captured.one("invoke_agent deepagent")
    assert agent.parent.span_id == cell.get_span_context().span_id
    assert {span.context.trace_id for span in captured.spans} == {cell.get_span_context().trace_id}


def test_a_failed_run_ends_its_run_step_and_model_call_in_error(tmp_path):
    def provider_down(request):
        raise ConnectionError("the provider is down")

    captured = Captured()
    run = traced_run(captured, ScriptedLM(provider_down), tmp_path)
    assert run.status == "failed"
    agent, step, chat = captured.one("invoke_agent deepagent"), captured.one("step"), captured.one("chat demo")
    for span in (agent, step, chat):
        assert span.status.status_code is StatusCode.ERROR, span.name
    assert chat.attributes["error.type"] == agent.attributes["error.type"] == type(run.exception).__name__
    assert "the provider is down" in chat.status.description
    assert agent.attributes["deepagent.run.status"] == "failed" and "down" in agent.status.description


def test_an_interrupted_run_ends_its_spans_in_error(tmp_path):
    captured = Captured()
    run = Run("Greet")
    steps = [("Stop.", "raise KeyboardInterrupt")]
    with pytest.raises(KeyboardInterrupt):
        DeepAgent(lm=ScriptedLM(steps), workspace=tmp_path, extensions=[captured.tracing]).run("Greet", {}, run=run)
    assert run.status == "interrupted"
    agent, step = captured.one("invoke_agent deepagent"), captured.one("step")
    assert agent.status.status_code is StatusCode.ERROR and agent.attributes["error.type"] == "interrupted"
    assert step.end_time is not None and captured.parent(step) is agent  # closed with what the code printed
    assert [span.name for span in captured.spans] == ["chat demo", "step", "invoke_agent deepagent"]  # all ended


def test_two_runs_are_two_traces_and_each_ends_what_it_opened(tmp_path):
    captured = Captured()
    agent = DeepAgent(lm=ScriptedLM(scripts={"one": STEPS, "two": STEPS}, replies="hi"), workspace=tmp_path,
                      extensions=[captured.tracing], max_depth=0)
    agent.run("one", {})
    agent.run("two", {})
    runs = captured.named("invoke_agent deepagent")
    assert len(runs) == 2 and runs[0].context.trace_id != runs[1].context.trace_id
    assert captured.tracing.layers == ()  # no run is traced now: its layer is out of the pipeline again
    assert not trace.get_current_span().get_span_context().is_valid  # nothing left attached in this thread


def test_where_a_run_is_now_as_w3c_trace_context(tmp_path):
    captured = Captured()
    seen: list[dict] = []

    def where() -> None:
        """Where this run is in its trace."""
        from deepagent_magics.core.run.run_tree import trace_headers
        from deepagent_magics.core.run.session import current

        seen.append(trace_headers(current().run))

    from deepagent_magics import Capability

    run = DeepAgent(lm=ScriptedLM([("Where?", "where()"), ("Done.", "SUBMIT(result=1)")]), workspace=tmp_path,
                    max_depth=0, extensions=[captured.tracing, Capability("where", tools=[where])]).run("Where", {})
    assert run.status == "finished", run.error
    step = captured.named("step")[0].context
    assert seen == [{"traceparent": f"00-{step.trace_id:032x}-{step.span_id:016x}-{step.trace_flags:02x}"}]
    assert isinstance(run.tree.tracing, TreeTrace) and run.tree.tracing.headers(run) == {}  # ended: forgotten


def test_a_run_a_cap_ends_says_so_on_its_span(tmp_path):
    captured = Captured()
    steps = [("One.", "x = 1"), ("Two.", "y = 2"), ("Three.", "z = 3"), ("Done.", "SUBMIT(result='ok')")]
    run = traced_run(captured, ScriptedLM(steps, replies="", tokens=(100, 0)), tmp_path, max_tokens=150)
    assert run.status == "budget_exhausted", (run.status, run.error)
    agent = captured.one("invoke_agent deepagent")
    assert agent.status.status_code is StatusCode.ERROR and agent.attributes["error.type"] == "budget_exhausted"
    assert "token cap" in agent.status.description
    assert all(span.end_time for span in captured.spans) and captured.tracing.layers == ()
