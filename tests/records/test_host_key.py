"""records/host_key.py: what the host signs is bound to its purpose and its place; nothing else verifies."""

from __future__ import annotations

import json
import os
import stat

import pytest

from deepagent_magics.records import host_key
from deepagent_magics.records.host_key import ENV, HostKeyError, key_path, signed_json, verified


@pytest.fixture
def own_key(tmp_path, monkeypatch):
    path = tmp_path / "keys" / "host.key"
    monkeypatch.setenv(ENV, str(path))
    return path


def test_the_key_is_made_once_private_and_reused(own_key):
    first = host_key.host_key()
    assert len(first) == 32 and own_key.read_bytes() == first
    assert stat.S_IMODE(own_key.stat().st_mode) == 0o600
    host_key._keys.clear()
    assert host_key.host_key() == first


def test_without_the_variable_the_key_lives_in_the_users_data_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert key_path() == tmp_path / "deepagent-magics" / "host.key"


def test_a_signed_file_is_still_json_and_verifies_only_as_itself(own_key):
    raw = signed_json({"id": "r1", "steps": []}, "deepagent run record", ".deepagent/runs/r1.json")
    assert json.loads(raw)["id"] == "r1" and raw.startswith(b'{"host_mac": "')
    assert verified(raw, "deepagent run record", ".deepagent/runs/r1.json")
    assert not verified(raw, "deepagent checkpoint", ".deepagent/runs/r1.json")  # another purpose
    assert not verified(raw, "deepagent run record", ".deepagent/runs/r2.json")  # another place
    assert not verified(raw.replace(b'"r1"', b'"r9"'), "deepagent run record", ".deepagent/runs/r1.json")
    assert not verified(b'{"id": "r1"}', "deepagent run record", ".deepagent/runs/r1.json")
    assert verified(signed_json({}, "p", "x"), "p", "x")


def test_a_file_signed_with_another_key_does_not_verify(own_key, tmp_path, monkeypatch):
    raw = signed_json({"a": 1}, "p", "x")
    monkeypatch.setenv(ENV, str(tmp_path / "other.key"))
    assert not verified(raw, "p", "x")


def test_only_objects_can_be_signed(own_key):
    with pytest.raises(TypeError):
        signed_json([1, 2], "p", "x")


def test_a_damaged_key_is_one_line_saying_what_to_do(own_key):
    own_key.parent.mkdir(parents=True)
    own_key.write_bytes(b"short")
    host_key._keys.pop(own_key, None)
    with pytest.raises(HostKeyError, match="is damaged .*remove it and a new one is made"):
        host_key.host_key()


def test_a_key_behind_a_symbolic_link_is_refused(own_key, tmp_path):
    """Someone who could point the key at a file of their own could sign what the host trusts."""
    (tmp_path / "theirs.key").write_bytes(b"k" * 32)
    own_key.parent.mkdir(parents=True)
    own_key.symlink_to(tmp_path / "theirs.key")
    host_key._keys.pop(own_key, None)
    with pytest.raises(HostKeyError, match="cannot read the host key"):
        host_key.host_key()
    assert not verified(b'{"host_mac": "' + b"0" * 64 + b'"}', "p", "x")  # and verifies nothing, quietly
