"""The ``deepagent`` command line, driven as a subprocess: a scripted model named on the command line or in
the environment, a real OpenAI-compatible HTTP stub, the same run records as the magics, and every bad
input answered with one line on stderr and a non-zero exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.subprocess  # make test-fast leaves these out

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key not in ("DEEPAGENT_LM",)}
    environment |= {"PYTHONPATH": str(ROOT), "DSPY_CACHEDIR": str(cwd / ".dspy_cache"),
                    "LITELLM_LOCAL_MODEL_COST_MAP": "true"}
    environment |= env or {}
    return subprocess.run([sys.executable, "-m", "deepagent_magics", *args], cwd=cwd, env=environment,
                          input=stdin, capture_output=True, text=True, timeout=timeout)


def script(tmp_path: Path, steps, name: str = "steps.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(steps))
    return f"scripted:{path}"


SUM_STEPS = [["Look at the numbers", "print('noise from the agent')\ntotal = sum(numbers)"],
             {"reasoning": "Submit", "code": "SUBMIT(result=f'total={total}')"}]


# ---------------------------------------------------------------------------------------------- run
def test_run_prints_only_the_result_on_stdout_and_progress_on_stderr(tmp_path):
    (tmp_path / "n.json").write_text("[1, 2, 39]")
    done = cli("run", "Add the numbers", "--lm", script(tmp_path, SUM_STEPS), "--load", "numbers=n.json",
               "--workspace", "ws", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "total=42\n"  # the agent's own print is not the result
    assert "step 1/20" in done.stderr and "step 2/20" in done.stderr and "finished: 2 steps" in done.stderr
    records = list((tmp_path / "ws" / ".deepagent" / "runs").glob("*.json"))
    assert len(records) == 1
    record = json.loads(records[0].read_text())
    assert record["status"] == "finished" and record["result"] == "total=42"
    assert record["config"]["approve"] == "never"


LEAKY_STEPS = [
    ["Shell out", "import os, subprocess, sys\n"
                  "os.system('echo from-os-system')\n"
                  "subprocess.run(['echo', 'from-subprocess'])\n"
                  "os.write(1, b'from-fd-1\\n')\n"
                  "sys.__stdout__.write('from-sys-dunder-stdout\\n'); sys.__stdout__.flush()\n"
                  "print('from-print')"],
    ["Answer", "SUBMIT(result='the answer')"],
]


def test_stdout_carries_only_the_answer_even_from_subprocesses_and_fd_1(tmp_path):
    done = cli("run", "Shell out, then answer", "--lm", script(tmp_path, LEAKY_STEPS), "--max-depth", "0",
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the answer\n", done.stdout  # `> answer.md` keeps only the answer
    for leak in ("from-os-system", "from-subprocess", "from-fd-1", "from-sys-dunder-stdout"):
        assert leak in done.stderr, (leak, done.stderr)  # the agent's output is not lost: it goes to stderr
    record = json.loads(next((tmp_path / ".deepagent" / "runs").glob("*.json")).read_text())
    assert "from-print" in record["steps"][0]["output"]


def test_the_model_can_come_from_DEEPAGENT_LM_and_the_task_from_stdin(tmp_path):
    steps = [["Echo", "SUBMIT(result='from env: ' + str(len(task)))"]]
    done = cli("run", "-", "--quiet", cwd=tmp_path, env={"DEEPAGENT_LM": script(tmp_path, steps)},
               stdin="a task read from stdin")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("from env: ")
    assert done.stderr == ""  # --quiet: no progress


def test_json_prints_the_record_and_the_exit_status_says_whether_the_run_finished(tmp_path):
    (tmp_path / "n.json").write_text("[1]")
    done = cli("run", "Add", "--lm", script(tmp_path, SUM_STEPS), "--load", "numbers=n.json", "--json", "--quiet",
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["status"] == "finished" and record["result"] == "total=1" and len(record["steps"]) == 2
    assert "_path" not in record


def test_load_reads_json_text_and_csv(tmp_path):
    (tmp_path / "d.json").write_text('{"a": [1, 2]}')
    (tmp_path / "notes.txt").write_text("hello notes")
    (tmp_path / "t.csv").write_text("x,y\n1,2\n3,4\n")
    steps = [["Types", "SUBMIT(result=' '.join([type(d).__name__, str(d['a']), notes, type(t).__name__]))"]]
    done = cli("run", "Types", "--lm", script(tmp_path, steps), "--load", "d=d.json", "--load", "notes=notes.txt",
               "--load", "t=t.csv", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    try:
        import pandas  # noqa: F401
        table = "DataFrame"
    except ImportError:
        table = "str"  # without pandas a CSV is its text
    assert done.stdout.strip() == f"dict [1, 2] hello notes {table}"


class Nonsense(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint whose model answers with text no adapter can parse."""

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": "I refuse to use fields."}}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve(handler) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_a_run_that_fails_exits_non_zero_with_nothing_on_stdout(tmp_path):
    server, url = serve(Nonsense)
    try:
        done = cli("run", "Anything", "--lm", "openai/stub-model", cwd=tmp_path,
                   env={"OPENAI_API_BASE": url, "OPENAI_API_KEY": "sk-local"})
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 1
    assert done.stdout == ""
    assert "failed" in done.stderr and "Traceback" not in done.stderr


def test_an_openai_compatible_server_drives_the_command_line(tmp_path):
    from tests.core.model.test_real_lm_client import STEPS, StubOpenAI

    StubOpenAI.steps = [dict(step) for step in STEPS]
    StubOpenAI.requests, StubOpenAI.headers_seen = [], []
    server, url = serve(StubOpenAI)
    (tmp_path / "numbers.json").write_text("[1, 2, 3]")
    try:
        done = cli("run", "Double the numbers and add them up", "--lm", "openai/stub-model", "--load",
                   "numbers=numbers.json", "--json", cwd=tmp_path,
                   env={"OPENAI_API_BASE": url, "OPENAI_API_KEY": "sk-cli-secret-4242"})
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["result"] == "12" and record["config"]["lm"] == "openai/stub-model"
    assert len(StubOpenAI.requests) == 2 and StubOpenAI.requests[0]["body"]["model"] == "stub-model"
    assert StubOpenAI.headers_seen[0]["Authorization"] == "Bearer sk-cli-secret-4242"
    assert "sk-cli-secret-4242" not in done.stdout + done.stderr


@pytest.mark.kernel
def test_a_sub_agent_runs_in_a_kernel_and_none_is_left_when_the_command_exits(tmp_path):
    psutil = pytest.importorskip("psutil")
    steps = {"scripts": {"": [["Delegate", "r = delegate('CHILD-CLI: say hi')\nSUBMIT(result='parent got ' + r)"]],
                         "CHILD-CLI": [["Hi", "from ipykernel.connect import get_connection_file\n"
                                                "SUBMIT(result='hi from ' + get_connection_file())"]]}}
    done = cli("run", "Ask a sub-agent", "--lm", script(tmp_path, steps), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("parent got hi from ")
    assert "sub-agent" in done.stderr
    # The kernel by its connection file (in a sandbox its own pid is 1, its PID namespace's): no process left.
    connection_file = done.stdout.split()[-1]
    left = []
    for process in psutil.process_iter(["cmdline", "status"]):
        if connection_file in (process.info["cmdline"] or []) and process.info["status"] != psutil.STATUS_ZOMBIE:
            left.append(process)
    assert connection_file.endswith("kernel.json") and left == []


# ---------------------------------------------------------------------------------------------- runs, trace, export
def test_runs_trace_and_export_read_the_records_the_run_left(tmp_path):
    (tmp_path / "n.json").write_text("[5]")
    first = cli("run", "First task here", "--lm", script(tmp_path, SUM_STEPS), "--load", "numbers=n.json",
                "--quiet", "--json", cwd=tmp_path)
    run_id = json.loads(first.stdout)["id"]

    table = cli("runs", cwd=tmp_path)
    assert table.returncode == 0 and run_id in table.stdout and "First task here" in table.stdout
    assert "finished" in table.stdout

    step = cli("trace", run_id[-6:], "--step", "2", cwd=tmp_path)
    assert step.returncode == 0 and "SUBMIT(result=f'total={total}')" in step.stdout
    whole = cli("trace", cwd=tmp_path)  # the newest run, replayed as text
    assert whole.returncode == 0 and "step 2/20" in whole.stdout and "total=5" in whole.stdout

    exported = cli("export", run_id, "out.ipynb", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    notebook = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    assert any("sum(numbers)" in cell.source for cell in notebook.cells if cell.cell_type == "code")


def test_the_magics_and_the_command_line_share_one_table_and_step_format():
    """Both take the runs' table and a step's text from records.listing (imported by the command and the magic
    that use them, so that starting either loads no listing: tests/test_start_fast.py)."""
    import ast
    import inspect as source

    from deepagent_magics.cli import commands
    from deepagent_magics.magics import inspect

    for module in (commands, inspect):
        imported = {alias.name for node in ast.walk(ast.parse(source.getsource(module)))
                    if isinstance(node, ast.ImportFrom) and node.module == "records.listing" and node.level == 2
                    for alias in node.names}
        assert {"runs_table", "format_step"} <= imported, module.__name__


# ---------------------------------------------------------------------------------------------- bad input
BAD = {
    "a name that is no model id": ["run", "x", "--lm", "gpt4"],
    "zero steps": ["run", "x", "--lm", "scripted:s.json", "--max-iters", "0"],
    "steps not a number": ["run", "x", "--lm", "scripted:s.json", "--max-iters", "many"],
    "negative timeout": ["run", "x", "--lm", "scripted:s.json", "--timeout", "-1"],
    "a timeout that is not a number": ["run", "x", "--lm", "scripted:s.json", "--timeout", "nan"],
    "an endless timeout": ["run", "x", "--lm", "scripted:s.json", "--timeout", "inf"],
    "a negative endless timeout": ["run", "x", "--lm", "scripted:s.json", "--timeout", "-inf"],
    "a sub-agent timeout that is not a number": ["run", "x", "--lm", "scripted:s.json", "--subagent-timeout", "NaN"],
    "negative depth": ["run", "x", "--lm", "scripted:s.json", "--max-depth", "-1"],
    "a pool of thousands of kernels": ["run", "x", "--lm", "scripted:s.json", "--pool-size", "5000"],
    "no model at all": ["run", "x"],
    "a missing script": ["run", "x", "--lm", "scripted:nope.json"],
    "a script that is not JSON": ["run", "x", "--lm", "scripted:garbage.txt"],
    "a script of the wrong shape": ["run", "x", "--lm", "scripted:shape.json"],
    "an empty scripted name": ["run", "x", "--lm", "scripted:"],
    "a bad sub-lm": ["run", "x", "--lm", "scripted:s.json", "--sub-lm", "nope"],
    "an approval policy that does not exist": ["run", "x", "--lm", "scripted:s.json", "--approve", "always"],
    "an unknown profile": ["run", "x", "--lm", "scripted:s.json", "--profile", "nonexistent"],
    "an empty task": ["run", "   ", "--lm", "scripted:s.json"],
    "a workspace that is a file": ["run", "x", "--lm", "scripted:s.json", "--workspace", "s.json"],
    "a load without =": ["run", "x", "--lm", "scripted:s.json", "--load", "n.json"],
    "a load name that is no identifier": ["run", "x", "--lm", "scripted:s.json", "--load", "1x=n.json"],
    "a load of a missing file": ["run", "x", "--lm", "scripted:s.json", "--load", "x=missing.csv"],
    "a load of bad JSON": ["run", "x", "--lm", "scripted:s.json", "--load", "x=garbage.json"],
    "a load of binary text": ["run", "x", "--lm", "scripted:s.json", "--load", "x=binary.txt"],
    "the same name loaded twice": ["run", "x", "--lm", "scripted:s.json", "--load", "x=n.json", "--load", "x=n.json"],
    "a kernel spec that does not exist": ["run", "x", "--lm", "scripted:s.json", "--kernel-name", "no-such-kernel"],
    "a gateway that does not answer": ["run", "x", "--lm", "scripted:s.json", "--gateway-url", "http://127.0.0.1:9"],
    "a gateway URL that is no URL": ["run", "x", "--lm", "scripted:s.json", "--gateway-url", "ftp://host"],
    "no command": [],
    "an unknown command": ["fly"],
    "an unknown flag": ["runs", "--colour"],
    "a zero limit": ["runs", "--limit", "0"],
    "trace of a run that does not exist": ["trace", "nope"],
    "trace with no runs at all": ["trace", "--workspace", "empty"],
    "export to a path that is no notebook": ["export", "nope", "out.txt"],
    "export of a run that does not exist": ["export", "nope", "out.ipynb"],
}


@pytest.fixture
def bad_inputs(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps([["x", "SUBMIT(result='x')"]]))
    (tmp_path / "garbage.txt").write_text("{not json")
    (tmp_path / "garbage.json").write_text("{not json")
    (tmp_path / "shape.json").write_text(json.dumps({"steps": [42]}))
    (tmp_path / "n.json").write_text("[1]")
    (tmp_path / "binary.txt").write_bytes(b"\xff\xfe\x00\x81")
    return tmp_path


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_on_stderr_and_a_non_zero_exit(bad_inputs, case):
    done = cli(*BAD[case], cwd=bad_inputs, env={"DEEPAGENT_LM": ""})
    assert done.returncode == 2, (case, done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("deepagent: error: "), (case, done.stderr)
    assert not list((bad_inputs / ".deepagent").glob("runs/*.json"))  # nothing ran


def test_trace_of_a_step_out_of_range_is_one_line(tmp_path):
    cli("run", "x", "--lm", script(tmp_path, [["x", "SUBMIT(result='x')"]]), "--quiet", cwd=tmp_path)
    done = cli("trace", "--step", "7", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == ["deepagent: error: " + done.stderr.split("error: ", 1)[1].strip()]
    assert "has steps 1 to 1, not 7" in done.stderr


# ---------------------------------------------------------------------------------------------- installation
def test_the_console_script_is_declared_and_points_at_main():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["deepagent"].partition(":")
    import importlib

    assert getattr(importlib.import_module(module), name).__module__ == "deepagent_magics.cli"


def test_help_works_and_exits_zero(tmp_path):
    done = cli("run", "--help", cwd=tmp_path)
    assert done.returncode == 0 and "--workspace" in done.stdout and "--load" in done.stdout
