"""server/launch.py: a request's body checked field by field (400 and why), and the cell the kernel runs for it."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest

from deepagent_magics.server.launch import FIELDS, FLAGS, Launch, RequestError, cell_code, check_body, new_run_id


@pytest.mark.parametrize("body, says", [
    ([], "must be a JSON object"), ({}, "missing \"task\""), ({"task": "  "}, "missing \"task\""),
    ({"task": "t", "color": 1}, "unknown field(s) color"), ({"task": "t", "workspace": 3}, "\"workspace\" must be a string"),
    ({"task": "t", "run_id": "../x"}, "\"run_id\" must be a run id"), ({"task": "t", "door": "cli"}, "\"door\" must be one of"),
    ({"task": "t", "max_iters": "5"}, "\"max_iters\" must be a number"), ({"task": "t", "max_iters": 0}, "\"max_iters\""),
    ({"task": "t", "profile": "a\nb"}, "one non-empty line"),
])
def test_a_bad_body_is_400_with_the_reason(body, says):
    with pytest.raises(RequestError) as caught:
        check_body(body)
    assert caught.value.status == 400 and says in str(caught.value)


def test_a_good_body_passes_as_it_is():
    body = {"task": "Count", "max_iters": 5, "continue": False, "run_id": "r1"}
    assert check_body(body) is body and {"task", "run_id", "continue"} <= FIELDS


def test_the_cell_runs_the_magic_with_the_bodys_settings_as_flags_and_the_task_as_the_cell():
    code = cell_code("r1", "Sum it; then '''quote''' $x {y}", Path("/ws"), {"max_iters": 5, "profile": "coder"})
    calls = [node for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Call)
             and getattr(node.func, "attr", "") == "run_cell_magic"]
    magic, line, task = (ast.literal_eval(arg) for arg in calls[0].args)
    assert magic == "deepagent" and task == "Sum it; then '''quote''' $x {y}"  # the task as it was, never interpolated
    flags = shlex.split(line)
    assert flags[:4] == ["--run-id", "r1", "--workspace", "/ws"] and "--no-interpolate" in flags
    assert flags[flags.index("--max-iters") + 1] == "5" and flags[flags.index("--profile") + 1] == "coder"


def test_a_run_without_a_record_yet_reads_from_what_the_server_knows():
    launch = Launch("r1", "t", "k1", Path("/ws"))
    assert launch.stub()["status"] == "pending"
    launch.done, launch.error = True, "KeyboardInterrupt"
    assert launch.stub()["status"] == "interrupted"
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", new_run_id())
