"""A record whose process died mid-run reads as ``abandoned``, never as ``running``.

A real Python process starts a run whose second step sleeps, and is SIGKILLed while the
record says ``running``. Every reader then says ``abandoned``: `load_record`,
`list_records`, `find_record`, replay, the export, ``%deepagent_runs``,
``%deepagent_trace`` and ``%deepagent_export``. A record whose writer is alive stays
``running``; a reused process id (same pid, another start time) is not mistaken for the
writer; a record from another host cannot be checked and keeps its status.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from IPython.utils.capture import capture_output

from deepagent_magics.core.run.run import STATUSES
from deepagent_magics.records import find_record, list_records, load_record, replay, runs_dir
from deepagent_magics.records.export import to_notebook
from deepagent_magics.records.liveness import process_start, writer_identity

CHILD = textwrap.dedent("""
    import sys
    from deepagent_magics import DeepAgent, ScriptedLM
    from deepagent_magics.records import RunRecorder
    RunRecorder.MIN_INTERVAL = 0.0
    RunRecorder.BUDGET = float("inf")
    steps = [("Start.", "x = 1\\nprint('step one done')"),
             ("Work a long time.", "import time\\ntime.sleep(120)"),
             ("Done.", "SUBMIT(result='never')")]
    DeepAgent(lm=ScriptedLM(steps), workspace=sys.argv[1], timeout=300).run("a long task", {})
""")


def _records(workspace: Path) -> list[Path]:
    folder = runs_dir(workspace)
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """A workspace whose run's process was SIGKILLed mid-run, and what was read while it lived."""
    workspace = tmp_path_factory.mktemp("killed")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2])] + sys.path))
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(workspace)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    alive_record = None
    while time.monotonic() < deadline:
        paths = _records(workspace)
        if paths:
            try:
                record = json.loads(paths[0].read_text())
            except ValueError:
                record = None
            if record and len(record.get("steps") or []) >= 2:
                alive_record = load_record(paths[0])
                break
        if child.poll() is not None:
            pytest.fail(f"the child ended early: {child.stderr.read().decode()[-2000:]}")
        time.sleep(0.05)
    assert alive_record is not None, "the child never reached its second step"
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    child.stderr.close()
    return workspace, alive_record


@pytest.mark.subprocess  # `killed` starts the run's process
def test_while_the_writer_lives_the_record_says_running(killed):
    _, alive = killed
    assert alive["status"] == "running"
    assert alive["writer"]["pid"] > 0 and alive["writer"]["start"] is not None


@pytest.mark.subprocess  # `killed` starts the run's process
def test_every_reader_says_abandoned_after_sigkill(killed):
    workspace, _ = killed
    path = _records(workspace)[0]
    raw = json.loads(path.read_text())
    assert raw["status"] == "running"  # the file itself could not be updated by a killed process
    record = load_record(path)
    assert record["status"] == "abandoned" and "process ended before the run did" in record["error"]
    assert [r["status"] for r in list_records([workspace])] == ["abandoned"]
    assert find_record(record["id"], [workspace])["status"] == "abandoned"
    assert find_record(record["id"][-6:], [workspace])["status"] == "abandoned"
    assert replay(record).status == "abandoned"
    notebook = to_notebook(record)
    assert notebook.metadata["deepagent"]["status"] == "abandoned"
    assert "<strong>abandoned</strong>" in notebook.cells[0].source
    assert "abandoned" in STATUSES


@pytest.mark.subprocess  # `killed` starts the run's process
def test_the_magics_say_abandoned(killed, ip, tmp_path):
    workspace, _ = killed
    run_id = load_record(_records(workspace)[0])["id"]
    with capture_output() as shown:
        ip.run_line_magic("deepagent_runs", f"--workspace {workspace}")
        ip.run_line_magic("deepagent_trace", f"{run_id} --workspace {workspace} --display text")
        ip.run_line_magic("deepagent_export", f"{run_id} {tmp_path / 'k.ipynb'} --workspace {workspace}")
    assert "abandoned" in shown.stdout and "running" not in shown.stdout
    exported = json.loads((tmp_path / "k.ipynb").read_text())
    assert exported["metadata"]["deepagent"]["status"] == "abandoned"


def _planted(folder: Path, writer: dict, status: str = "running", children: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    child = {"id": "child-1", "status": "running", "steps": [], "task": "sub"}
    record = {"id": f"p-{len(list(folder.iterdir()))}", "task": "t", "status": status, "writer": writer,
              "steps": [{"index": 1, "reasoning": "", "code": "", "output": None,
                         "children": [child] if children else []}]}
    path = folder / f"{record['id']}.json"
    path.write_text(json.dumps(record))
    return path


def test_a_reused_pid_is_not_mistaken_for_the_writer(tmp_path):
    me = writer_identity()
    folder = runs_dir(tmp_path)
    same = _planted(folder, me)
    reused = _planted(folder, dict(me, start=me["start"] - 1000))
    init = _planted(folder, dict(me, pid=1, start=(process_start(1) or 0) + 12345))
    assert load_record(same)["status"] == "running"  # this very process: alive, same start time
    assert load_record(reused)["status"] == "abandoned"
    assert load_record(init)["status"] == "abandoned"


@pytest.mark.subprocess
def test_a_dead_pid_and_open_sub_agents_are_abandoned(tmp_path):
    probe = subprocess.Popen([sys.executable, "-c", "pass"])
    probe.wait()
    dead = dict(writer_identity(), pid=probe.pid, start=None)
    path = _planted(runs_dir(tmp_path), dead, children=True)
    record = load_record(path)
    assert record["status"] == "abandoned"
    assert record["steps"][0]["children"][0]["status"] == "abandoned"


@pytest.mark.parametrize("writer", [
    {"pid": 999_999_999, "host": "another-host", "start": 1},
    None,
    "garbage",
    {"pid": "12", "host": None},
    {"pid": True, "host": "x"},
])
def test_what_cannot_be_checked_keeps_its_status(tmp_path, writer):
    path = _planted(runs_dir(tmp_path), writer)
    assert load_record(path)["status"] == "running"


def test_a_finished_record_is_never_abandoned(tmp_path):
    dead = dict(writer_identity(), pid=999_999_999)
    path = _planted(runs_dir(tmp_path), dead, status="finished")
    assert load_record(path)["status"] == "finished"
