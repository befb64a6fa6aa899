"""The run API on a real Jupyter Server: start runs in its kernels, follow their events over SSE, read, stop, refuse.

A real `jupyter server` on 127.0.0.1 with a token, rooted in a temporary folder, with the
extension enabled by the very config file the package ships. Runs execute in real kernels
of that server; their model is a ScriptedLM (sleeping between steps) put in the kernel's
namespace through the kernel's own connection file.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from jupyter_client import BlockingKernelClient
from tests.servers import answers, free_port, serving

pytestmark = pytest.mark.kernel
REPO = Path(__file__).resolve().parents[2]
SHIPPED_CONFIG = REPO / "jupyter-config" / "jupyter_server_config.d" / "deepagent_magics.json"


class Server:
    def __init__(self, url: str, token: str, root: Path):
        self.url, self.token, self.root = url, token, root

    def call(self, method: str, path: str, body=None, token: str | None = "default", raw: bytes | None = None,
             headers: dict | None = None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method, headers=dict(headers or {}))
        if token == "default":
            token = self.token
        if token:
            request.add_header("Authorization", f"token {token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read().decode()
                status, kind = response.status, response.headers.get("Content-Type", "")
        except urllib.error.HTTPError as error:
            text, status, kind = error.read().decode(), error.code, error.headers.get("Content-Type", "")
        try:
            return status, json.loads(text) if "json" in kind or text.startswith("{") else text
        except ValueError:
            return status, text

    def kernel(self) -> str:
        status, kernel = self.call("POST", "/api/kernels", {})
        assert status == 201, kernel
        return kernel["id"]

    def in_kernel(self, kernel_id: str, code: str) -> None:
        """Run ``code`` in one of the server's kernels, through its connection file."""
        deadline = time.monotonic() + 90
        while True:  # a kernel still starting has no heartbeat yet and reads as dead: try again
            client = BlockingKernelClient(connection_file=str(self.root / ".runtime" / f"kernel-{kernel_id}.json"))
            client.load_connection_file()
            client.start_channels()
            try:
                client.wait_for_ready(timeout=60)
                break
            except RuntimeError:
                client.stop_channels()
                assert time.monotonic() < deadline, "the kernel never became ready"
                time.sleep(0.5)
        try:
            reply = client.execute_interactive(code, timeout=60, output_hook=lambda msg: None)
            assert reply["content"]["status"] == "ok", reply["content"]
        finally:
            client.stop_channels()

    def wait_for(self, run_id: str, predicate, timeout: float = 90.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            status, record = self.call("GET", f"/deepagent/api/runs/{run_id}")
            if status == 200 and predicate(record):
                return record
            assert time.monotonic() < deadline, f"gave up waiting on run {run_id}: {status} {record}"
            time.sleep(0.2)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("server")
    config = root / ".config" / "jupyter_server_config.d"
    config.mkdir(parents=True)
    shutil.copy(SHIPPED_CONFIG, config)  # the file installing the package puts in etc/jupyter
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(root / ".config"), JUPYTER_RUNTIME_DIR=str(root / ".runtime"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    url = f"http://127.0.0.1:{port}"
    with serving([sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1",
                  f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
                  f"--ServerApp.root_dir={root}", "--allow-root"],
                 cwd=root, env=env, log=root / "server.log", ready=answers(f"{url}/api/status?token={token}")):
        yield Server(url, token, root)


SLOW_STEPS = (
    "from deepagent_magics.testing import ScriptedLM\n"
    "slow = ScriptedLM([('Start.', 'x = 1\\nprint(\"started\")')]\n"
    "                  + [(f'Step {i}.', f'x += 1\\nprint(x)') for i in range(N)]\n"
    "                  + [('Write.', 'write_file(\"out/report.md\", f\"x={x}\")'), ('Done.', 'SUBMIT(result=f\"x={x}\")')],\n"
    "                  latency=LATENCY)\n"
)


def sse(server: Server, run_id: str, last_event_id: str | None = None, timeout: float = 90.0):
    """Read the run's SSE stream to its end: (events as dicts with their id and name, the raw text, when each came)."""
    request = urllib.request.Request(f"{server.url}/deepagent/api/runs/{run_id}/events")
    request.add_header("Authorization", f"token {server.token}")
    if last_event_id is not None:
        request.add_header("Last-Event-ID", last_event_id)
    events, arrivals, text = [], [], []
    with urllib.request.urlopen(request, timeout=timeout) as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        block: dict = {}
        for raw in response:
            line = raw.decode().rstrip("\n")
            text.append(line)
            if not line:
                if "data" in block:
                    events.append(block)
                    arrivals.append(time.monotonic())
                block = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(": ")
                block[name] = json.loads(value) if name == "data" else value
    return events, arrivals, "\n".join(text)


def test_a_run_started_through_the_api_streams_its_events_live_and_leaves_its_record(server):
    kernel_id = server.kernel()
    server.in_kernel(kernel_id, SLOW_STEPS.replace("LATENCY", "0.25").replace("N", "4") + "seen_by_user = 7\n")
    started = time.monotonic()
    status, reply = server.call("POST", "/deepagent/api/runs",
                                {"task": "count up and {write} a report", "kernel_id": kernel_id, "lm": "slow",
                                 "workspace": "ws", "max_iters": 20})
    assert status == 201, reply
    assert time.monotonic() - started < 5  # returned at once, not after the run
    run_id = reply["id"]
    assert reply["kernel_id"] == kernel_id and reply["workspace"] == str(server.root / "ws")

    events, arrivals, _ = sse(server, run_id)
    kinds = [e["event"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert [int(e["id"]) for e in events] == list(range(1, len(events) + 1))
    steps = [e for e in events if e["event"] == "step_started"]
    assert len(steps) == 7 and arrivals[-1] - arrivals[0] > 1.0  # they came as the run went, not at once
    assert events[-1]["data"]["data"]["result"] == "x=5"
    assert events[0]["data"]["data"]["task"] == "count up and {write} a report"  # not interpolated

    record = server.wait_for(run_id, lambda r: r["status"] == "finished")
    assert record["result"] == "x=5" and record["kernel_id"] == kernel_id and len(record["steps"]) == 7
    log = (server.root / "ws" / ".deepagent" / "runs" / f"{run_id}.events.jsonl").read_text().splitlines()
    assert [json.loads(line)["kind"] for line in log] == kinds  # the API streams exactly the log

    status, files = server.call("GET", f"/deepagent/api/runs/{run_id}/files")
    assert status == 200 and files["files"] == [{"path": "out/report.md", "size": 3, "exists": True}]
    status, notebook = server.call("GET", f"/deepagent/api/runs/{run_id}/notebook")
    assert status == 200
    nb = nbformat.reads(json.dumps(notebook) if isinstance(notebook, dict) else notebook, as_version=4)
    assert any("x += 1" in cell.source for cell in nb.cells)

    status, listing = server.call("GET", "/deepagent/api/runs?workspace=ws&status=finished&q=COUNT")
    assert status == 200 and [run["id"] for run in listing["runs"]] == [run_id]
    status, listing = server.call("GET", "/deepagent/api/runs?workspace=ws&q=nothing-like-this")
    assert status == 200 and listing["runs"] == []

    resumed, _, _ = sse(server, run_id, last_event_id="3")  # Last-Event-ID: the rest, from 4
    assert [int(e["id"]) for e in resumed] == list(range(4, len(events) + 1))
    server.in_kernel(kernel_id, "assert seen_by_user == 7 and x == 5")  # the run's REPL was that kernel's namespace
    status, stop = server.call("POST", f"/deepagent/api/runs/{run_id}/stop")
    assert status == 409, stop  # it has ended


def test_a_run_in_a_new_kernel_is_stopped_by_interrupting_it(server):
    status, reply = server.call("POST", "/deepagent/api/runs",
                                {"task": "wait a long time", "lm": "__import__('nope')", "workspace": "ws2"})
    assert status == 201, reply
    new_kernel = reply["kernel_id"]
    status, kernels = server.call("GET", "/api/kernels")
    assert new_kernel in [k["id"] for k in kernels]
    # this one's lm is no variable and no model: the magic refuses it, the run never starts
    record = server.wait_for(reply["id"], lambda r: r["status"] != "pending")
    assert record["status"] == "failed" and "UsageError" in record["error"], record
    status, stop = server.call("POST", f"/deepagent/api/runs/{reply['id']}/stop")
    assert status == 409

    server.in_kernel(new_kernel, "from deepagent_magics.testing import ScriptedLM\n"
                                 "sleepy = ScriptedLM([('Sleep.', 'import time\\nfor i in range(600):\\n    time.sleep(0.1)'),"
                                 " ('Done.', 'SUBMIT(result=\"woke\")')])\nafter_stop = 'kept'\n")
    status, reply = server.call("POST", "/deepagent/api/runs",
                                {"task": "sleep", "kernel_id": new_kernel, "lm": "sleepy", "workspace": "ws2"})
    assert status == 201
    run_id = reply["id"]
    server.wait_for(run_id, lambda r: r["status"] == "running" and r["steps"])
    status, stop = server.call("POST", f"/deepagent/api/runs/{run_id}/stop")
    assert status == 202, stop
    record = server.wait_for(run_id, lambda r: r["status"] != "running", timeout=30)
    assert record["status"] == "interrupted"
    events, _, _ = sse(server, run_id)
    assert events[-1]["event"] == "run_finished" and events[-1]["data"]["data"]["status"] == "interrupted"
    server.in_kernel(new_kernel, "assert after_stop == 'kept'")  # the kernel and its variables survive


def test_requests_without_a_valid_token_are_refused(server):
    for method, path, body in [("GET", "/deepagent/api/runs", None), ("GET", "/deepagent/api/runs/x", None),
                               ("POST", "/deepagent/api/runs", {"task": "t"}),
                               ("GET", "/deepagent/api/runs/x/events", None),
                               ("POST", "/deepagent/api/runs/x/stop", {})]:
        for token in (None, "wrong-token"):
            status, _ = server.call(method, path, body, token=token)
            assert status == 403, (method, path, token, status)
    status, reply = server.call("GET", f"/deepagent/api/runs?token={server.token}", token=None)
    assert status == 400 and "header" in reply["message"]  # a token in a URL stays in histories and logs: refused
    assert server.token not in json.dumps(reply)


def test_bad_input_gets_a_clear_status_and_the_server_keeps_serving(server):
    cases = [
        (dict(raw=b"{not json"), 400, "not valid JSON"),
        (dict(body=["task"]), 400, "JSON object"),
        (dict(body={}), 400, "task"),
        (dict(body={"task": "   "}), 400, "task"),
        (dict(body={"task": 42}), 400, "task"),
        (dict(body={"task": "t", "max_iters": "ten"}), 400, "max_iters"),
        (dict(body={"task": "t", "max_iters": -1}), 400, "positive"),
        (dict(body={"task": "t", "max_iters": True}), 400, "max_iters"),
        (dict(body={"task": "t", "lm": "a\n--max-iters 1"}), 400, "one non-empty line"),
        (dict(body={"task": "t", "shell": "rm -rf /"}), 400, "unknown field"),
        (dict(body={"task": "t", "kernel_id": "no-such-kernel"}), 404, "no running kernel"),
        (dict(body={"task": "t", "workspace": "../outside"}), 403, "outside"),
        (dict(body={"task": "t", "workspace": "/etc"}), 403, "outside"),
        (dict(body={"task": "t", "kernel_name": "no-such-spec"}), 400, "could not start a kernel"),
        (dict(body={"task": "t", "run_id": "../../etc/x"}), 400, "run id"),
        (dict(body={"task": "t", "continue": "a b"}), 400, "run id"),
        (dict(body={"task": "t", "continue": True}), 400, "or false"),
        (dict(body={"task": "t", "door": "cli"}), 400, "one of api, notebook"),
        (dict(body={"task": "t", "approve": "sometimes"}), 400, "one of never, risky, always"),
    ]
    for kwargs, status, words in cases:
        got, reply = server.call("POST", "/deepagent/api/runs", **kwargs)
        assert got == status and words in reply["message"], (kwargs, got, reply)
    (server.root / "escape").symlink_to("/tmp")
    got, reply = server.call("POST", "/deepagent/api/runs", {"task": "t", "workspace": "escape"})
    assert got == 403, reply  # a link out of the root is outside too
    for path in ("/deepagent/api/runs/no-such-run", "/deepagent/api/runs/no-such-run/events",
                 "/deepagent/api/runs/no-such-run/files", "/deepagent/api/runs/no-such-run/notebook",
                 "/deepagent/api/runs/..%2F..%2Fetc/files"):
        got, reply = server.call("GET", path)
        assert got == 404, (path, got, reply)
    got, _ = server.call("POST", "/deepagent/api/runs/no-such-run/stop", {})
    assert got == 404
    got, _ = server.call("POST", "/deepagent/api/runs/no-such-run/answer", {"answer": "y"})
    assert got == 404
    planted = server.root / ".deepagent" / "runs" / "guessed-1.events.jsonl"
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text('{"seq": 1, "kind": "run_finished", "run": "guessed-1", "parent": null, "data": {}}\n')
    got, reply = server.call("POST", "/deepagent/api/runs", {"task": "t", "run_id": "guessed-1"})
    assert got == 409 and "already" in reply["message"]  # a log planted under the id: never taken as the run's
    planted.unlink()
    got, reply = server.call("GET", "/deepagent/api/runs?workspace=../..")
    assert got == 403
    got, reply = server.call("GET", "/deepagent/api/runs?limit=many")
    assert got == 400
    some_run = next(iter(server.call("GET", "/deepagent/api/runs")[1]["runs"]), None)
    if some_run:
        got, reply = server.call("GET", f"/deepagent/api/runs/{some_run['id']}/events",
                                 headers={"Last-Event-ID": "three"})
        assert got == 400 and "Last-Event-ID" in reply["message"]
    got, reply = server.call("GET", "/deepagent/api/runs", headers={})
    assert got == 200  # still serving


def test_a_crashed_runs_stream_ends_saying_so(server):
    kernel_id = server.kernel()
    pid_file = server.root / "kernel.pid"
    server.in_kernel(kernel_id, SLOW_STEPS.replace("LATENCY", "0.3").replace("N", "200")
                     + f"import os\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n")
    status, reply = server.call("POST", "/deepagent/api/runs",
                                {"task": "count for ever", "kernel_id": kernel_id, "lm": "slow", "workspace": "ws3",
                                 "max_iters": 300})
    assert status == 201
    server.wait_for(reply["id"], lambda r: len(r["steps"]) >= 2)
    os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the kernel dies mid-run (the server restarts it)
    events, _, text = sse(server, reply["id"], timeout=60)
    assert events[-1]["event"] == "ended_mid_run" and "kernel" in events[-1]["data"]["reason"], events[-1]
    assert "run_finished" not in [e["event"] for e in events] and events[0]["event"] == "run_started"
    status, record = server.call("GET", f"/deepagent/api/runs/{reply['id']}")
    assert status == 200 and record["status"] == "abandoned"  # a crashed run reads as abandoned
    status, stop = server.call("POST", f"/deepagent/api/runs/{reply['id']}/stop")
    assert status == 409, stop  # the restarted kernel runs nothing of this run: it is not interrupted
    deadline = time.monotonic() + 60
    while True:  # Jupyter Server answers 500 to a DELETE while its restarter is still bringing the kernel back
        status, _ = server.call("DELETE", f"/api/kernels/{kernel_id}")
        if status == 204 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert status == 204
    events, _, _ = sse(server, reply["id"], timeout=60)  # a kernel gone for good: the stream ends too
    assert events[-1]["event"] == "ended_mid_run"


def test_stop_acts_only_on_a_run_its_kernel_is_running_now(server):
    """A run that ended budget_exhausted (not one of the old 'ended' statuses): stopping it is a 409,
    and the user's own cell running next in that kernel is not interrupted."""
    kernel_id = server.kernel()
    started = server.root / "user-cell-started"
    server.in_kernel(kernel_id, "get_ipython().run_line_magic('load_ext', 'deepagent_magics')\n"
                                "get_ipython().run_line_magic('deepagent_config', '--max-time 1')\n"
                                "from deepagent_magics.testing import ScriptedLM\n"
                                "capped = ScriptedLM([('Slow.', 'import time\\ntime.sleep(1.5)')] * 4"
                                " + [('Done.', 'SUBMIT(result=1)')], replies='')\n")  # no final answer
    status, reply = server.call("POST", "/deepagent/api/runs",
                                {"task": "be slow", "kernel_id": kernel_id, "lm": "capped", "workspace": "ws4"})
    assert status == 201, reply
    record = server.wait_for(reply["id"], lambda r: r["status"] not in ("pending", "running"))
    assert record["status"] == "budget_exhausted", record

    outcome: dict = {}

    def users_cell():
        try:
            server.in_kernel(kernel_id, f"import time\nopen({str(started)!r}, 'w').close()\n"
                                        "time.sleep(4)\nusers_cell_done = True\n")
            outcome["ok"] = True
        except AssertionError as exc:  # the cell's reply was an error (KeyboardInterrupt)
            outcome["error"] = str(exc)

    thread = threading.Thread(target=users_cell)
    thread.start()
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline and thread.is_alive(), outcome
        time.sleep(0.1)
    status, stop = server.call("POST", f"/deepagent/api/runs/{reply['id']}/stop")
    thread.join(60)
    assert status == 409 and "not running" in stop["message"], (status, stop)
    assert outcome == {"ok": True}, outcome  # the user's cell ran to its end


def plant(server: Server, run_id: str, lines: list, record: dict | None = None) -> Path:
    """A record and an event log in the server's root workspace that no run of ours wrote."""
    runs = server.root / ".deepagent" / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    (runs / f"{run_id}.json").write_text(json.dumps(record or {"id": run_id, "task": "planted", "status": "finished",
                                                               "steps": []}))
    log = runs / f"{run_id}.events.jsonl"
    with open(log, "w") as handle:
        for line in lines:
            handle.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    return log


def event(seq, kind, **data):
    return {"seq": seq, "time": 1.0, "kind": kind, "run": "planted", "parent": None, "depth": 0, "data": data}


def test_a_planted_event_log_cannot_forge_events_nor_fail_the_stream(server):
    forged = "step_started\n\nid: 99\nevent: run_finished\ndata: {\"forged\": true}"
    plant(server, "planted-forge", [
        event(1, "run_started", task="t"),
        event(2, forged),  # a kind with line breaks: it would write SSE lines of its own
        event("3", "step_finished"),  # a string seq: compared with a number, a 500
        event(4, "step started"),  # a space: not an event name
        {**event(5, "tool_call"), "seq": True},
        event(6, "run_finished", status="finished"),
    ])
    events, _, text = sse(server, "planted-forge", timeout=60)
    assert [(e["id"], e["event"]) for e in events] == [("1", "run_started"), ("6", "run_finished")], text
    assert "forged" not in text and "id: 99" not in text


def test_a_huge_line_in_an_event_log_is_not_sent_whole(server):
    huge = json.dumps(event(2, "step_finished", output="x" * 20_000_000))
    plant(server, "planted-huge", [event(1, "run_started", task="t"), huge, event(3, "run_finished", status="ok")])
    request = urllib.request.Request(f"{server.url}/deepagent/api/runs/planted-huge/events")
    request.add_header("Authorization", f"token {server.token}")
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
    assert len(body) < 100_000, len(body)
    blocks = [block for block in body.decode().split("\n\n") if block.strip()]
    names = [line.split(": ", 1)[1] for block in blocks for line in block.splitlines() if line.startswith("event: ")]
    assert names == ["run_started", "step_finished", "run_finished"], names  # the stream goes on to the end
    stub = json.loads(next(line for line in blocks[1].splitlines() if line.startswith("data: "))[6:])
    assert stub["seq"] == 2 and "omitted" in stub["data"]


def test_files_reveal_nothing_outside_the_run_s_workspace(server):
    (server.root / "outside-exists.txt").write_text("x")
    ws = server.root / "ws5"
    (ws / "out").mkdir(parents=True)
    (ws / "out" / "real.md").write_text("inside")
    (ws / "escape").symlink_to("/etc")
    paths = ["out/real.md", "/etc/passwd", "/etc/no-such-file-here", "../outside-exists.txt",
             "../outside-missing.txt", "escape/passwd", "escape/no-such-file-here", "../../../../../etc/passwd"]
    runs = ws / ".deepagent" / "runs"
    runs.mkdir(parents=True)
    (runs / "planted-files.json").write_text(json.dumps({"id": "planted-files", "task": "t", "status": "finished",
                                                         "steps": [], "files_written": paths}))
    status, reply = server.call("GET", "/deepagent/api/runs/planted-files/files?workspace=ws5")
    assert status == 200, reply
    listed = {entry["path"]: entry for entry in reply["files"]}
    assert listed["out/real.md"]["exists"] is True
    answers_outside = {json.dumps({k: v for k, v in listed[path].items() if k != "path"}, sort_keys=True)
                       for path in paths[1:]}
    assert len(answers_outside) == 1, listed  # an existing path and a missing one read the same
    assert all(listed[path]["exists"] is not True for path in paths[1:])
