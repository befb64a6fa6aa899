"""interpreters/runtime_checks/actions.py: what an audit event means for approval, with its path resolved and placed
(the 33 cases through real steps: tests/adversarial/test_runtime_checks.py)."""

from __future__ import annotations

import os
import pathlib

import pytest

from deepagent_magics.interpreters.runtime_checks.actions import UNKNOWN, describe, inside, judge, plain, resolve


def test_reading_and_lookups_are_never_risky():
    assert describe("open", ("/etc/passwd", "r", os.O_RDONLY)) is None
    assert describe("open", (3, "w", 0)) is None  # an open descriptor: its opening was checked
    assert describe("os.listdir", ("/",)) is None


def test_a_write_outside_the_workspace_is_asked_and_one_inside_is_not(tmp_path):
    outside = describe("open", (str(tmp_path.parent / "notes.md"), "w", 0))
    rule, question, key, _ = judge(outside, str(tmp_path))
    assert rule == "writes_outside_workspace" and question.startswith("write ") and "outside the workspace" in question
    assert judge(describe("open", (str(tmp_path / "in.txt"), "a", 0)), str(tmp_path)) is None


def test_a_link_in_the_workspace_that_points_out_is_judged_where_it_leads(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "out").symlink_to(tmp_path)
    assert resolve(str(tmp_path / "ws" / "out" / "x.txt")) == str(tmp_path / "x.txt")
    raw = describe("open", (str(tmp_path / "ws" / "out" / "x.txt"), "w", 0))
    assert judge(raw, str(tmp_path / "ws"))[0] == "writes_outside_workspace"


def test_removals_processes_network_and_controls(tmp_path):
    removal = judge(describe("shutil.rmtree", (str(tmp_path / "data"), None)), str(tmp_path))
    assert removal[0] == "removes_files" and "and everything in it? in the workspace" in removal[1]
    process = judge(describe("subprocess.Popen", ("ls", ["rm", "-rf", "/"], None, None)), str(tmp_path))
    assert process[:2] == ("starts_process", "run rm -rf /?") and process[2] == "rm"
    network = judge(describe("socket.connect", (None, ("93.184.216.34", 443))), str(tmp_path),
                    names={443: "example.org"})
    assert network[1] == "connect to example.org (93.184.216.34):443?"
    url = judge(describe("urllib.Request", ("https://user@example.org:8443/p", None, None, "GET")), str(tmp_path))
    assert url[0] == "network" and url[2] == "example.org:8443"
    assert judge(describe("sys._current_frames", ()), str(tmp_path))[0] == "controls"
    assert describe("socket.bind", (None, ("127.0.0.1", 0))) is None  # a free port picked to probe


def test_a_path_object_of_the_agents_own_is_never_asked_for_its_path():
    class Sneaky(os.PathLike):
        def __fspath__(self):
            raise AssertionError("the check ran the agent's code")

    assert plain(Sneaky()) is None and describe("open", (Sneaky(), "w", 0))[2] == UNKNOWN
    assert plain(pathlib.PurePosixPath("/a")) == "/a" and plain(b"/b") == "/b" and plain(3) == "3"


@pytest.mark.parametrize("path, folder, expected", [("/ws/a", "/ws", True), ("/ws", "/ws", True), ("/wsx", "/ws", False),
                                                    (UNKNOWN, "/ws", False), ("/ws/a", None, False)])
def test_inside_is_by_whole_folder_names(path, folder, expected):
    assert inside(path, folder) is expected
