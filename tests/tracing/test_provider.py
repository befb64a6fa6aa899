"""When a run is traced: only when a tracer provider is configured, the usual way (OpenTelemetry's global one,
set by the user's code or opentelemetry-instrument) or given (``Tracing(provider=...)``). Without one, or
without the package, nothing is made: no span, no layer in the pipeline, no wrapper around a tool, no
OpenTelemetry imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from deepagent_magics import Capability, DeepAgent, ScriptedLM
from deepagent_magics.core.run import session as _session
from deepagent_magics.tracing import TRACING
from deepagent_magics.tracing.provider import content_wanted, global_provider

from .captured import Captured

STEPS = [("Look.", "seen = probe()\nfiles = ls()"), ("Done.", "SUBMIT(result=seen)")]


def test_without_a_provider_nothing_is_traced_and_nothing_is_built(tmp_path):
    assert global_provider() is None  # OpenTelemetry's default: its proxy, no provider configured
    seen: list[dict] = []

    def a_tool() -> None:
        """A stand-in tool."""

    def probe() -> None:
        """What the run is given now."""
        session = _session.current()
        extensions = session.agent.extensions
        seen.append({"tracing": session.run.tree.tracing, "layers": extensions.layers(), "standard": TRACING.layers,
                     "wrapped": extensions.around_tool(session, "a_tool", a_tool) is not a_tool})

    agent = DeepAgent(lm=ScriptedLM(STEPS), workspace=tmp_path, max_depth=0,
                      extensions=[Capability("probe", tools=[probe])])
    assert TRACING in list(agent.extensions)  # the standard capability is there, and does nothing
    run = agent.run("Look", {})
    assert run.status == "finished", run.error
    assert seen == [{"tracing": None, "layers": [], "standard": (), "wrapped": False}]


def test_a_given_provider_traces_the_runs_of_the_agent_it_is_given_to(tmp_path):
    captured = Captured()
    agent = DeepAgent(lm=ScriptedLM([STEPS[0][:1] + ("x = 1",), STEPS[1][:1] + ("SUBMIT(result=1)",)]),
                      workspace=tmp_path, max_depth=0, extensions=[captured.tracing])
    assert TRACING in list(agent.extensions) and captured.tracing in list(agent.extensions)  # both are given
    run = agent.run("Look", {})
    assert run.tree.tracing.owner is captured.tracing
    assert [span.name for span in captured.spans] == ["chat demo", "step", "chat demo", "step",
                                                      "invoke_agent deepagent"]


@pytest.mark.parametrize("value, wanted", [("true", True), ("TRUE", True), ("1", True), ("SPAN_ONLY", True),
                                           ("span_and_event", True), ("false", False), ("", False),
                                           ("NO_CONTENT", False), ("EVENT_ONLY", False)])
def test_the_conventions_content_switch(monkeypatch, value, wanted):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
    assert content_wanted(DeepAgent(lm="openai/x")) is wanted
    assert content_wanted(DeepAgent(lm="openai/x", trace_content=True)) is True  # the setting turns it on too


# ------------------------------------------------------------ in a fresh interpreter, as a user configures it
RUN = """
import json, sys, tempfile
from deepagent_magics import DeepAgent, ScriptedLM
steps = [("Look.", "files = ls()"), ("Done.", "SUBMIT(result='ok')")]
def run(**keywords):
    return DeepAgent(lm=ScriptedLM(steps), workspace=tempfile.mkdtemp(), max_depth=0, **keywords).run("Look", {})
"""


def fresh(code: str, tmp_path, **env: str) -> dict:
    out = subprocess.run([sys.executable, "-c", RUN + textwrap.dedent(code)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120, env={**os.environ, **env})
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.subprocess
def test_a_provider_configured_the_usual_way_traces_every_run(tmp_path):
    seen = fresh("""
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from deepagent_magics.tracing import Tracing

        exporter, mine = InMemorySpanExporter(), InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)  # the user's code, or opentelemetry-instrument, does this
        first = run()
        own = TracerProvider()
        own.add_span_processor(SimpleSpanProcessor(mine))
        second = run(extensions=[Tracing(provider=own)])
        print(json.dumps({"global": [s.name for s in exporter.get_finished_spans()],
                          "given": [s.name for s in mine.get_finished_spans()], "status": first.status}))
    """, tmp_path)
    assert seen["status"] == "finished"
    assert seen["global"] == ["chat demo", "execute_tool ls", "step", "chat demo", "step", "invoke_agent deepagent"]
    assert seen["given"] == seen["global"]  # the second run went to the provider it was given, and only there


@pytest.mark.subprocess
def test_without_a_provider_a_run_imports_no_opentelemetry(tmp_path):
    seen = fresh("""
        done = run()
        print(json.dumps({"status": done.status, "tracing": done.tree.tracing is not None,
                          "imported": sorted(m for m in sys.modules if m.startswith("opentelemetry"))}))
    """, tmp_path)
    assert seen == {"status": "finished", "tracing": False, "imported": []}


@pytest.mark.subprocess
def test_without_the_package_runs_are_untraced(tmp_path):
    seen = fresh("""
        sys.modules["opentelemetry"] = None  # as if opentelemetry-api were not installed
        done = run()
        print(json.dumps({"status": done.status, "tracing": done.tree.tracing is not None}))
    """, tmp_path, OTEL_PYTHON_TRACER_PROVIDER="sdk_tracer_provider")  # a provider named, so it is looked for
    assert seen == {"status": "finished", "tracing": False}


@pytest.mark.subprocess
def test_opentelemetry_instrument_traces_the_command_line(tmp_path):
    """The usual way for a script: ``opentelemetry-instrument`` configures the SDK from the environment."""
    (tmp_path / "steps.json").write_text(json.dumps([["Look.", "files = ls()"], ["Done.", "SUBMIT(result='ok')"]]))
    instrument = os.path.join(os.path.dirname(sys.executable), "opentelemetry-instrument")
    command = [instrument, sys.executable, "-m", "deepagent_magics", "run", "Look around", "--lm",
               "scripted:steps.json", "--workspace", "ws", "--quiet"]
    env = {**os.environ, "OTEL_TRACES_EXPORTER": "console", "OTEL_METRICS_EXPORTER": "none",
           "OTEL_LOGS_EXPORTER": "none", "OTEL_SERVICE_NAME": "reports"}
    out = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    result, _, printed = out.stdout.partition("\n")
    assert result == "ok"
    spans, decoder, at = [], json.JSONDecoder(), 0
    while printed[at:].strip():
        at += len(printed[at:]) - len(printed[at:].lstrip())
        span, at = decoder.raw_decode(printed, at)
        spans.append(span)
    assert [span["name"] for span in spans] == ["chat steps", "execute_tool ls", "step", "chat steps", "step",
                                                "invoke_agent deepagent"]
    assert {span["resource"]["attributes"]["service.name"] for span in spans} == {"reports"}
    assert len({span["context"]["trace_id"] for span in spans}) == 1
