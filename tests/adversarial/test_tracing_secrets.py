"""Traces carry no content unless the user opts in, and no secret ever, even when content is on.

The attack is the one ``test_secrets.py`` makes on the record (a hostile agent prints an environment
secret whole, cut, sliced, reversed, base64-encoded, passes it to tools, raises it, returns it), now with
an ``*_API_KEY`` in the environment, a provider key in the user's own task and the LM's configuration
holding a key, headers and an ``api_base`` with a key in it. Whatever a span says (names, attributes,
events, status descriptions) is searched for every 8-character piece of each secret.
"""

from __future__ import annotations

import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tracing import conventions as names

from ..tracing.captured import Captured
from .test_secrets import hostile_steps, leaks, make_secret

CONTENT = (names.INPUT_MESSAGES, names.OUTPUT_MESSAGES, names.SYSTEM_INSTRUCTIONS, names.TOOL_ARGUMENTS,
           names.TOOL_RESULT, names.STEP_CODE, names.STEP_OUTPUT)
ASK = "answer = llm_query('Summarise the quarterly figures for the board')"


@pytest.fixture
def secrets(monkeypatch) -> dict[str, str]:
    values = {"env": make_secret(40), "task": "sk-" + make_secret(40), "lm": "sk-" + make_secret(45),
              "header": make_secret(32)}
    monkeypatch.setenv("OPENAI_API_KEY", values["env"])
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    return values


def hostile_run(tmp_path, secrets: dict[str, str], **settings):
    captured = Captured()
    lm = ScriptedLM([("Ask.", ASK)] + hostile_steps("OPENAI_API_KEY"), replies="Figures: up 3% " + secrets["task"])
    lm.kwargs.update(api_key=secrets["lm"], api_base=f"https://user:{secrets['lm']}@llm.example:8443/v1?key={secrets['lm']}",
                     extra_headers={"X-Api-Key": secrets["header"]})
    task = f"Report on the quarter. The billing key is {secrets['task']}; never print it."
    run = DeepAgent(lm=lm, workspace=tmp_path, extensions=[captured.tracing], max_iters=15, max_depth=0,
                    **settings).run(task, {})
    assert run.status == "finished", run.error
    return run, captured


def assert_no_secret(captured: Captured, secrets: dict[str, str]) -> None:
    text = captured.text()
    for where, secret in secrets.items():
        assert leaks(text, secret) == [], where


def test_by_default_no_content_and_no_secret(tmp_path, secrets):
    run, captured = hostile_run(tmp_path, secrets)
    assert len(captured.named("step")) == len(run.steps) == 12
    for span in captured.spans:
        assert not set(CONTENT) & set(span.attributes or {}), (span.name, set(CONTENT) & set(span.attributes))
    text = captured.text()
    assert "quarterly figures" not in text and "Report on the quarter" not in text and "SUBMIT" not in text
    assert "notes.txt" not in text  # a tool's arguments are content too
    assert {"server.address": "llm.example", "server.port": 8443}.items() <= dict(
        captured.one("invoke_agent deepagent").attributes).items()
    assert_no_secret(captured, secrets)


def test_content_when_the_user_opts_in_and_still_no_secret(tmp_path, secrets, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    run, captured = hostile_run(tmp_path, secrets)
    text = captured.text()
    agent = captured.one("invoke_agent deepagent").attributes
    assert "Report on the quarter" in agent[names.INPUT_MESSAGES] and "[REDACTED]" in agent[names.INPUT_MESSAGES]
    assert "the token is [REDACTED]" in agent[names.OUTPUT_MESSAGES]
    query = next(span for span in captured.spans if span.attributes.get("deepagent.call.kind") == "query")
    assert "quarterly figures" in query.attributes[names.INPUT_MESSAGES]
    assert "Figures: up 3%" in query.attributes[names.OUTPUT_MESSAGES]
    assert any("notes.txt" in span.attributes.get(names.TOOL_ARGUMENTS, "") for span in captured.spans)
    assert names.SYSTEM_INSTRUCTIONS in captured.named("chat demo")[0].attributes
    assert "bad key" in text  # the step that raised: its output, scrubbed
    assert_no_secret(captured, secrets)


def test_the_trace_content_setting_opts_in_too(tmp_path, secrets):
    run, captured = hostile_run(tmp_path, secrets, trace_content=True)
    assert names.INPUT_MESSAGES in captured.one("invoke_agent deepagent").attributes
    assert_no_secret(captured, secrets)
