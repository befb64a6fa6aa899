"""MCP tools in: a real MCP server (stdio or streamable HTTP, written here with the SDK) gives the agent its tools.

A tool call that fails (wrong arguments, a server that died mid-run) is an `Error:` string
for the agent and the run goes on; a server that cannot start is one clear line for the caller.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tools import mcp_servers as mcp_tools_module
from deepagent_magics.tools.mcp_servers import MCPError, close_all
from tests.servers import free_port

pytestmark = pytest.mark.subprocess  # make test-fast leaves these out

SERVER = textwrap.dedent('''
    import os, sys
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("calc")

    @app.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @app.tool()
    def shout(text: str, times: int = 1) -> str:
        """The text in capitals, repeated."""
        return " ".join([text.upper()] * times)

    @app.tool()
    def explode() -> str:
        """Fail on purpose."""
        raise ValueError("the tool blew up")

    @app.tool()
    def die() -> str:
        """End the server process at once."""
        os._exit(3)

    @app.tool(name="weird-name")
    def weird() -> str:
        """A tool whose name is no Python identifier."""
        return "weird ok"

    if __name__ == "__main__":
        if len(sys.argv) > 1:
            app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
        else:
            app.run("stdio")
''')


@pytest.fixture
def server_file(tmp_path):
    path = tmp_path / "calc_server.py"
    path.write_text(SERVER)
    yield f"{sys.executable} {path}"
    close_all()


def outputs(run):
    return [step.output for step in run.steps]


def test_the_agent_calls_an_mcp_servers_tools_like_its_own(server_file, workspace):
    lm = ScriptedLM([
        ("Add.", "print(add(a=2, b=3))\nprint(add(40, 2))"),
        ("Shout.", "print(shout(text='hi', times=2))\nprint(shout('once'))\nprint(mcp_weird_name() if False else weird_name())"),
        ("Done.", "SUBMIT(result=str(add(a=1, b=1)))"),
    ])
    agent = DeepAgent(lm=lm, workspace=workspace, mcp_servers=[server_file])
    names = {tool.__name__ for tool in agent.extra_tools}
    assert {"add", "shout", "explode", "die", "weird_name"} <= names
    assert "Add two integers." in agent.prompt_instructions  # offered to the model with its description
    assert "a (integer, required)" in agent.prompt_instructions  # and the types of its arguments
    run = agent.run("use the calculator", {})
    assert run.status == "finished" and run.result == "2", run.error
    assert outputs(run)[0].split() == ["5", "42"]
    assert outputs(run)[1].splitlines() == ["HI HI", "ONCE", "weird ok"]
    calls = [e for e in run.steps]  # the calls are recorded like the built-in tools'
    assert calls


def test_wrong_arguments_and_failing_tools_are_error_strings_and_the_run_goes_on(server_file, workspace):
    lm = ScriptedLM([
        ("Bad calls.", "r1 = add(a='two', b=3)\nr2 = add(a=1)\nr3 = add()\nr4 = explode()\nr5 = add(a=1, b=2, c=3)\n"
                       "for r in (r1, r2, r3, r4, r5):\n    print(str(r).replace(chr(10), ' ')[:300])\n"
                       "try:\n    add(1, 2, 3)\nexcept TypeError as exc:\n    print('TypeError', exc)"),
        ("Still here.", "SUBMIT(result=str(add(a=1, b=2)))"),
    ])
    heard = []
    run = DeepAgent(lm=lm, workspace=workspace, mcp_servers=[server_file]).run("break it", {},
                                                                                listeners=[heard.append])
    assert run.status == "finished" and run.result == "3", run.error
    lines = outputs(run)[0].splitlines()
    assert len(lines) == 6, lines
    assert all(line.startswith("Error: ") for line in lines[:4]), lines
    assert "validation" in lines[0] and "explode" in lines[3]
    assert lines[4] == "3" or lines[4].startswith("Error: add:")  # an unknown argument: the server's call
    assert lines[5].startswith("TypeError add():")  # Python's own error for a call no signature binds
    errors = [e.data for e in heard if e.kind == "tool_call" and e.data["error"]]
    assert len(errors) >= 4 and all(e["name"] in ("add", "explode") for e in errors)


def test_a_server_that_dies_mid_run_is_an_error_string_then_the_run_finishes(server_file, workspace):
    lm = ScriptedLM([
        ("Kill it.", "print(die())"),
        ("Use it.", "print(add(a=1, b=2))"),
        ("Done.", "SUBMIT(result='survived')"),
    ])
    started = time.monotonic()
    run = DeepAgent(lm=lm, workspace=workspace, mcp_servers=[server_file]).run("crash the server", {})
    assert run.status == "finished" and run.result == "survived", run.error
    assert outputs(run)[0].startswith("Error: die:")
    assert outputs(run)[1].startswith("Error: add:") and "not running" in outputs(run)[1]
    assert time.monotonic() - started < 100  # did not wait for the 120 s call timeout per call... twice
    agent = DeepAgent(lm=ScriptedLM([("Again.", "SUBMIT(result=str(add(a=2, b=2)))")]), workspace=workspace,
                      mcp_servers=[server_file])  # the next agent reconnects
    assert agent.run("again", {}).result == "4"


@pytest.mark.parametrize("spec, words", [
    ("/no/such/program --flag", "could not be started"),
    (f"{sys.executable} -c pass", "could not be started"),
    (f"{sys.executable} -c \"print('not json-rpc')\"", "could not be started"),
    ("", "give a command line"),
    ("'unterminated", "not a command line"),
    ("http://127.0.0.1:9/mcp", "could not be started"),
])
def test_a_server_that_cannot_start_is_one_clear_line(spec, words, workspace):
    started = time.monotonic()
    with pytest.raises(MCPError) as caught:
        DeepAgent(lm=ScriptedLM([]), workspace=workspace, mcp_servers=[spec])
    message = str(caught.value)
    assert words in message and "\n" not in message, message
    assert time.monotonic() - started < 40


def test_a_streamable_http_server_by_url(tmp_path, workspace):
    (tmp_path / "calc_server.py").write_text(SERVER)
    port = free_port()
    process = subprocess.Popen([sys.executable, str(tmp_path / "calc_server.py"), str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, "the HTTP MCP server did not start"
                time.sleep(0.2)
        lm = ScriptedLM([("Add.", "SUBMIT(result=str(add(a=20, b=22)))")])
        run = DeepAgent(lm=lm, workspace=workspace, mcp_servers=[url]).run("add over http", {})
        assert run.status == "finished" and run.result == "42", run.error
    finally:
        close_all()
        process.terminate()
        process.wait(10)


def test_connections_are_shared_and_closed(server_file, workspace):
    first = DeepAgent(lm=ScriptedLM([]), workspace=workspace, mcp_servers=[server_file])
    second = DeepAgent(lm=ScriptedLM([]), workspace=workspace, mcp_servers=[server_file])
    assert len(mcp_tools_module._servers) == 1
    server = mcp_tools_module._servers[server_file]
    assert server.alive
    close_all()
    assert not server.alive and not mcp_tools_module._servers
    assert first.extra_tools[0](a=1, b=2).startswith("Error:")  # a closed server: an error string, no hang
    assert second.extra_tools


@pytest.mark.kernel
def test_a_sub_agent_calls_the_mcp_tools_through_the_host(server_file, workspace):
    from deepagent_magics.interpreters.pool import KernelPool

    lm = ScriptedLM(scripts={
        "MCP-PARENT": [("Delegate.", "answer = delegate('MCP-CHILD: add numbers')\nprint(answer)"),
                       ("Done.", "SUBMIT(result=answer)")],
        "MCP-CHILD": [("Add.", "import os\nSUBMIT(result=f'{add(a=20, b=22)} {os.getpid()}')")],
    })
    pool = KernelPool(size=1).warm()
    try:
        run = DeepAgent(lm=lm, workspace=workspace, pool=pool, mcp_servers=[server_file], timeout=60).run(
            "MCP-PARENT: delegate the sum", {})
    finally:
        pool.stop()
    assert run.status == "finished", run.error
    total, pid = run.result.split()
    assert total == "42" and int(pid) != os.getpid()


def test_the_config_magic_connects_mcp_servers_for_every_cell(ip, server_file):
    from IPython.core.error import UsageError

    ip.run_line_magic("deepagent_config", f'--mcp "{server_file}"')
    ip.user_ns["lm"] = ScriptedLM([("Add.", "SUBMIT(result=str(add(a=4, b=5)))")])
    ip.run_cell_magic("deepagent", "--lm lm --out total --quiet", "add with the MCP tool")
    assert ip.user_ns["total"] == "9"
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("deepagent_config", "--mcp /no/such/server-program")
    assert "could not be started" in str(caught.value) and "\n" not in str(caught.value)
    assert ip.run_line_magic("deepagent_config", "--mcp off") is None
    ip.user_ns["lm"] = ScriptedLM([("Look.", "SUBMIT(result=str('add' in dir()))")])
    ip.run_cell_magic("deepagent", "--lm lm --out seen --quiet", "is the tool there?")
    assert ip.user_ns["seen"] == "False"
