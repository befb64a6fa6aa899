"""records/liveness.py: a record whose writer died reads as ``abandoned``; one from elsewhere keeps its status."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from deepagent_magics.records.liveness import mark_abandoned, process_start, writer_gone, writer_identity


def test_this_process_is_its_own_living_writer():
    me = writer_identity()
    assert me["pid"] == os.getpid() and me["host"] == socket.gethostname()
    assert me["start"] == process_start(os.getpid()) and isinstance(me["start"], int)
    assert not writer_gone(me)


@pytest.mark.subprocess
def test_a_dead_writer_is_gone_and_its_open_runs_are_abandoned():
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = {**writer_identity(), "pid": int(done.stdout), "start": 1}
    assert writer_gone(dead)
    child = {"status": "running", "steps": []}
    record = mark_abandoned({"status": "running", "writer": dead, "orphans": [],
                             "steps": [{"children": [child, {"status": "finished", "steps": []}]}]})
    assert record["status"] == "abandoned" and "killed or crashed" in record["error"]
    assert child["status"] == "abandoned" and record["steps"][0]["children"][1]["status"] == "finished"


def test_a_reused_process_id_is_not_the_writer():
    assert writer_gone({**writer_identity(), "start": writer_identity()["start"] + 1})


def test_a_reboot_since_means_gone():
    assert writer_gone({**writer_identity(), "boot_id": "another-boot"})


@pytest.mark.parametrize("writer", [None, "x", {"pid": "1"}, {"pid": True, "host": socket.gethostname()},
                                    {"pid": 1, "host": "another-host"}, {"pid": -4, "host": socket.gethostname()}])
def test_what_cannot_be_checked_is_not_gone(writer):
    assert not writer_gone(writer)


def test_a_finished_record_keeps_its_status_whoever_wrote_it():
    record = mark_abandoned({"status": "finished", "writer": {**writer_identity(), "boot_id": "other"}})
    assert record["status"] == "finished"
