"""interpreters/pool/gateway_leftovers.py: a host notes its gateway kernels, and the next host shuts down a dead one's.

Against a real Kernel Gateway (a host killed with SIGKILL) see ``tests/interpreters/pool/test_gateway.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest

from deepagent_magics.interpreters.pool import gateway_leftovers
from deepagent_magics.interpreters.pool.gateway_leftovers import PREFIX, forget, remember, sweep


class Gateway:
    def __init__(self, url: str, failing: set[str] = frozenset()):
        self.url, self.failing, self.shut = url, failing, []

    def shutdown_kernel(self, kernel_id: str) -> None:
        if kernel_id in self.failing:
            raise ConnectionError("gateway unreachable")
        self.shut.append(kernel_id)


@pytest.fixture(autouse=True)
def own_tmp(tmp_path, monkeypatch):
    """The notes in a folder of the test's own, and this process's state fresh."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(gateway_leftovers, "_mine", {})
    monkeypatch.setattr(gateway_leftovers, "_swept", set())
    return tmp_path


@pytest.fixture(scope="module")
def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def note(folder, pid: int, kernels: dict[str, str]):
    path = folder / f"{PREFIX}{pid}.json"
    path.write_text(json.dumps(kernels))
    return path


def test_a_host_notes_its_kernels_by_gateway_url_and_never_a_token(own_tmp):
    remember(Gateway("http://gw:8888"), "k1")
    remember(Gateway("http://other:8888"), "k2")
    mine = own_tmp / f"{PREFIX}{os.getpid()}.json"
    assert json.loads(mine.read_text()) == {"k1": "http://gw:8888", "k2": "http://other:8888"}
    forget("k1")
    assert json.loads(mine.read_text()) == {"k2": "http://other:8888"}
    forget("unknown")
    forget(None)
    forget("k2")
    assert not mine.exists()  # nothing running: no note left behind


@pytest.mark.subprocess
def test_a_dead_hosts_kernels_on_this_gateway_are_shut_down_and_the_rest_kept(own_tmp, dead_pid):
    path = note(own_tmp, dead_pid, {"a": "http://gw", "b": "http://gw", "c": "http://elsewhere"})
    gateway = Gateway("http://gw")
    assert sorted(sweep(gateway)) == ["a", "b"] and sorted(gateway.shut) == ["a", "b"]
    assert json.loads(path.read_text()) == {"c": "http://elsewhere"}


@pytest.mark.subprocess
def test_a_note_left_empty_is_removed(own_tmp, dead_pid):
    path = note(own_tmp, dead_pid, {"a": "http://gw"})
    sweep(Gateway("http://gw"))
    assert not path.exists()


@pytest.mark.subprocess
def test_a_kernel_that_could_not_be_shut_down_stays_noted_for_next_time(own_tmp, dead_pid):
    path = note(own_tmp, dead_pid, {"a": "http://gw", "b": "http://gw"})
    assert sweep(Gateway("http://gw", failing={"b"})) == ["a"]
    assert json.loads(path.read_text()) == {"b": "http://gw"}


def test_a_living_hosts_kernels_are_left_alone(own_tmp):
    path = note(own_tmp, os.getpid(), {"a": "http://gw"})
    gateway = Gateway("http://gw")
    assert sweep(gateway) == [] and not gateway.shut and path.exists()


@pytest.mark.subprocess
def test_each_gateway_is_swept_once_per_process(own_tmp, dead_pid):
    gateway = Gateway("http://gw")
    sweep(gateway)
    note(own_tmp, dead_pid, {"late": "http://gw"})
    assert sweep(gateway) == []
    assert sweep(Gateway("http://another")) == []


@pytest.mark.subprocess
def test_notes_that_cannot_be_read_are_skipped(own_tmp, dead_pid):
    (own_tmp / f"{PREFIX}not-a-pid.json").write_text("{}")
    broken = note(own_tmp, dead_pid, {})
    broken.write_text("{not json")
    assert sweep(Gateway("http://gw")) == [] and broken.read_text() == "{not json"
