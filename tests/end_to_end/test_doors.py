"""A prompt true to each door: the notebook, the run API's cells, the command line, the MCP server and
``DeepAgent.run`` from Python each tell the root agent where its code runs, what persists and where the
user's data is, and nothing that is false there (issue 28, item 4).

Each request is the first one a run sent through that door, read from a scripted model in this process:
the magic in a real IPython shell, ``deepagent run`` through its own ``main``, the MCP server through the
SDK's client connected in-process, ``DeepAgent.run`` directly.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.core.loop import doors
from deepagent_magics.errors import InvalidValue
from deepagent_magics.server.launch import cell_code
from deepagent_magics.testing import ScriptedLM

DONE = [("Done.", "SUBMIT(result='ok')")]


def repl_section(system: str) -> str:
    return re.search(r"## Your REPL\n(.*?)\n\n", system, re.S).group(1)


def first_request(lm: ScriptedLM) -> str:
    request = lm.requests[0]
    return request["system"] + "\n" + request["user"]


def test_the_notebook_says_the_kernel_is_theirs_and_what_they_define_stays(ip):
    ip.user_ns.update(sales=[1, 2], lm=ScriptedLM(DONE))
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nsum the sales").raise_error()
    text = first_request(ip.user_ns["lm"])
    rules = repl_section(text)
    assert rules.startswith("Code runs in the user's live Jupyter kernel") and "stays in their notebook" in rules
    assert ip.user_ns["_deepagent_run"].config["door"] == "notebook"


def test_the_run_api_says_its_kernel_is_the_servers_and_never_a_notebook(ip):
    code = cell_code("run-1", "sum the sales", Path("ws"), {})
    assert "--door api" in code  # the API's cell says which door it came by
    ip.user_ns.update(sales=[1, 2], lm=ScriptedLM(DONE))
    ip.run_cell("%%deepagent --lm lm --max-depth 0 --door api\nsum the sales").raise_error()
    text = first_request(ip.user_ns["lm"])
    assert "notebook" not in text.lower()
    rules = repl_section(text)
    assert "a Jupyter kernel of the server" in rules and "stays in that kernel" in rules
    assert ip.user_ns["_deepagent_run"].config["door"] == "api"


def test_the_command_line_says_its_process_ends_with_the_run(tmp_path, monkeypatch):
    from deepagent_magics.cli import commands, main

    lm = ScriptedLM([("Add.", "SUBMIT(result=str(sum(numbers)))")])
    monkeypatch.setattr(commands, "model_maker", lambda spec, *a, **k: (lambda: lm) if spec else None)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "n.json").write_text("[1, 2, 39]")
    assert main(["run", "Add the numbers", "--lm", "scripted", "--load", "numbers=n.json", "--workspace", "ws",
                 "--max-depth", "0", "--quiet"]) == 0
    text = first_request(lm)
    assert "notebook" not in text.lower() and "jupyter kernel" not in text.lower()
    rules = repl_section(text)
    assert "`deepagent run` command" in rules and "files they loaded" in rules
    assert "ends with the run" in rules and "stays" not in rules
    assert "- numbers: list" in text
    record = json.loads(next((tmp_path / "ws" / ".deepagent" / "runs").glob("*.json")).read_text())
    assert record["config"]["door"] == "cli"


def test_the_mcp_server_says_no_variables_are_defined_and_nothing_outlasts_the_run(tmp_path):
    from mcp import Client

    from deepagent_magics.mcp.server import build_server

    lm = ScriptedLM(DONE)
    app = build_server(tmp_path, lm=lm, max_depth=0)

    async def call():
        async with Client(app) as client:
            return await client.call_tool("run_task", {"task": "write a note"})

    result = anyio.run(call)
    assert not result.is_error, result.content
    text = first_request(lm)
    assert "notebook" not in text.lower() and "jupyter kernel" not in text.lower()
    rules = repl_section(text)
    assert "MCP server's process" in rules and "no variables are defined" in rules and "Nothing you define" in rules


def test_python_says_the_callers_namespace_keeps_what_the_run_defines(tmp_path):
    lm = ScriptedLM(DONE)
    DeepAgent(lm=lm, workspace=tmp_path, max_depth=0).run("sum", {"sales": [1, 2]})
    text = first_request(lm)
    assert "notebook" not in text.lower()
    assert repl_section(text).startswith("Code runs in the Python program that started this run")


def test_deepagent_acps_own_kernel_says_the_kernel_is_the_conversations(ip):
    ip.user_ns.update(sales=[1, 2], lm=ScriptedLM(DONE))
    ip.run_cell("%%deepagent --lm lm --max-depth 0 --door acp\nsum the sales").raise_error()
    text = first_request(ip.user_ns["lm"])
    assert "notebook" not in text.lower()
    rules = repl_section(text)
    assert "kernel started for the user's conversation" in rules and "while the conversation goes on" in rules
    assert ip.user_ns["_deepagent_run"].config["door"] == "acp"


def test_a_door_is_one_entry_and_an_unknown_one_is_one_line(tmp_path):
    doors.add_door(doors.Door("acp-test", "Code runs in an editor's agent session.", "Its files stay."))
    try:
        lm = ScriptedLM(DONE)
        DeepAgent(lm=lm, workspace=tmp_path, max_depth=0, door="acp-test").run("x", {})
        assert repl_section(first_request(lm)).startswith("Code runs in an editor's agent session. Its files stay.")
    finally:
        doors.DOORS.pop("acp-test")
    with pytest.raises(InvalidValue, match="door 'nowhere' is not a front door; the doors are notebook, api"):
        DeepAgent(lm=lm, door="nowhere")


@pytest.mark.parametrize("name", sorted(doors.DOORS))
def test_every_door_says_where_code_runs_and_what_outlasts_the_run(name):
    rules = doors.door(name).repl_rules(60, "_tmp_")
    assert rules.startswith("Code runs in ") and "start with `_tmp_`" in rules and "60 s" in rules
    said = doors.door(name)
    assert said.persists and ("notebook" not in said.where + said.persists or name == "notebook")
