"""Sub-agents in a trace: each a child run of the tool call that started it, in the root's one trace.

Real sandboxed kernels, a scripted model. A sub-agent's model calls and tools run on the host, so its
spans are made there; its code runs in its kernel, which is told each step's place in the trace
(``TRACEPARENT``) and needs no OpenTelemetry. The host decides every parent itself: code in a kernel that
forges a ``TRACEPARENT`` moves no span.
"""

from __future__ import annotations

import json

import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.testing import ScriptedLM

from .captured import Captured

pytestmark = pytest.mark.kernel

FORGED = "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"
CHILD = [("Look.", "import os, sys, json\nseen = os.environ.get('TRACEPARENT')\n"
                   f"os.environ['TRACEPARENT'] = {FORGED!r}\nfiles = ls()\nhint = llm_query('Say hi')"),
         ("Done.", "otel = sorted(m for m in sys.modules if m.startswith('opentelemetry'))\n"
                   "SUBMIT(result=json.dumps({'seen': seen, 'now': os.environ.get('TRACEPARENT'), 'otel': otel}))")]
BATCHED = [("Done.", "SUBMIT(result='ok')")]
ROOT = [("Ask.", "report = delegate('CHILD-LOOKS around')"),
        ("Ask two.", "both = delegate_batched(['BATCHED one', 'BATCHED two'])"),
        ("Done.", "SUBMIT(result=report)")]


def test_sub_agents_are_child_runs_of_their_delegate_calls_in_one_trace(tmp_path):
    captured = Captured()
    lm = ScriptedLM(scripts={"ROOT": ROOT, "CHILD-LOOKS": CHILD, "BATCHED": BATCHED}, replies="hello")
    pool = KernelPool(size=0)
    try:
        run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, extensions=[captured.tracing]).run("ROOT: go", {})
    finally:
        pool.stop()
    assert run.status == "finished", run.error
    assert len({span.context.trace_id for span in captured.spans}) == 1

    agents = captured.named("invoke_agent deepagent")
    root = next(span for span in agents if span.attributes["deepagent.run.depth"] == 0)
    root_steps = sorted((s for s in captured.children(root) if s.name == "step"),
                        key=lambda s: s.attributes["deepagent.step.index"])
    delegate, batched = captured.one("execute_tool delegate"), captured.one("execute_tool delegate_batched")
    assert captured.parent(delegate) is root_steps[0] and captured.parent(batched) is root_steps[1]

    children = [span for span in agents if span.attributes["deepagent.run.depth"] == 1]
    assert len(children) == 3
    assert sorted(captured.parent(child).name for child in children) == [
        "execute_tool delegate", "execute_tool delegate_batched", "execute_tool delegate_batched"]
    looked = next(child for child in children if captured.parent(child) is delegate)
    assert looked.attributes["deepagent.run.id"] == run.children[0].id

    # The sub-agent's own spans, made on the host: its steps, its model calls, its tools, where they belong.
    steps = sorted((s for s in captured.children(looked) if s.name == "step"),
                   key=lambda s: s.attributes["deepagent.step.index"])
    assert len(steps) == 2
    assert [c.name for c in captured.children(steps[0])].count("chat demo") == 1
    ls, query = captured.one("execute_tool ls"), captured.one("execute_tool llm_query")
    assert captured.parent(ls) is steps[0] and captured.parent(query) is steps[0]  # not where the kernel said
    assert [captured.parent(c) for c in captured.named("chat demo") if c.attributes["deepagent.call.kind"] == "query"] \
        == [query]

    # The kernel was told its step's place in the trace, as W3C Trace Context, and needed no OpenTelemetry.
    told = json.loads(run.result)
    version, trace_id, span_id, flags = told["seen"].split("-")
    assert version == "00" and int(trace_id, 16) == root.context.trace_id
    assert int(span_id, 16) == steps[0].context.span_id
    assert told["otel"] == []
    assert told["now"] != FORGED  # the next step was told its own place again
    assert int(told["now"].split("-")[2], 16) == steps[1].context.span_id
