"""The local model is served only when it is what was pinned, whatever was done to its file (issue 30, item 6).

The attack: version 0.2 trusted a stamp beside the joined model (its size, mtime and hash), so a
model file changed in place with its mtime set back, or a file planted with a stamp that matches it,
was served without being hashed. Here the real code path (`bundled_model`) runs on a small set of
stand-in parts whose join is pinned in place of the 1.1 GB model's size and hash; each attack leaves
a file of the right size that is not the model, and the model served must be the pinned bytes,
joined again from the parts. A new process is one whose memory of what it hashed is empty.
"""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from deepagent_magics.core.model import local_weights


@pytest.fixture
def small_parts(tmp_path, monkeypatch):
    """Three stand-in parts whose join is the pinned file (size and hash pinned to theirs)."""
    folder = tmp_path / "parts"
    folder.mkdir()
    parts = []
    for n, data in enumerate([b"GGUF" + b"a" * 1000, b"b" * 3000, b"c" * 17], start=1):
        parts.append(folder / f"part{n:02d}.bin")
        parts[-1].write_bytes(data)
    joined = b"".join(part.read_bytes() for part in parts)
    monkeypatch.setattr(local_weights, "part_files", lambda: parts)
    monkeypatch.setattr(local_weights, "SIZE", len(joined))
    monkeypatch.setattr(local_weights, "SHA256", hashlib.sha256(joined).hexdigest())
    monkeypatch.setattr(local_weights, "_hashed", set(), raising=False)
    return joined


def new_process(monkeypatch):
    """What a new process knows of the files it hashed: nothing."""
    monkeypatch.setattr(local_weights, "_hashed", set(), raising=False)


def tamper(path, at: int = 2000) -> None:
    """One byte changed in place, the file's times set back to what they were."""
    before = path.stat()
    with open(path, "r+b") as handle:
        handle.seek(at)
        handle.write(b"X")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_mtime_ns == before.st_mtime_ns and path.stat().st_size == before.st_size


def stamp_02(path, sha256: str) -> None:
    """The stamp version 0.2 wrote beside the model, as an attacker would plant it."""
    info = path.stat()
    (path.parent / (path.name + ".verified")).write_text(
        json.dumps({"size": info.st_size, "mtime_ns": info.st_mtime_ns, "sha256": sha256}))


def test_a_model_changed_with_its_mtime_set_back_is_joined_again_in_a_new_process(tmp_path, small_parts, monkeypatch):
    model = local_weights.bundled_model(tmp_path / "cache")
    stamp_02(model, local_weights.SHA256)  # the stamp a 0.2 start left, still matching size and mtime
    tamper(model)
    new_process(monkeypatch)
    assert local_weights.bundled_model(tmp_path / "cache").read_bytes() == small_parts


def test_a_model_changed_with_its_mtime_set_back_is_joined_again_in_the_same_process(tmp_path, small_parts):
    model = local_weights.bundled_model(tmp_path / "cache")
    assert local_weights.bundled_model(tmp_path / "cache") == model  # verified once in this process
    tamper(model)  # the ctime moved, which no one can set back
    assert local_weights.bundled_model(tmp_path / "cache").read_bytes() == small_parts


def test_a_planted_file_with_a_planted_stamp_is_not_served(tmp_path, small_parts, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    planted = cache / local_weights.FILENAME
    planted.write_bytes(b"GGUF" + b"z" * (len(small_parts) - 4))  # the right size and magic, other weights
    stamp_02(planted, local_weights.SHA256)
    new_process(monkeypatch)
    assert local_weights.bundled_model(cache).read_bytes() == small_parts


def test_a_file_swapped_in_under_the_same_times_is_hashed(tmp_path, small_parts):
    model = local_weights.bundled_model(tmp_path / "cache")
    other = model.with_name("other.gguf")
    other.write_bytes(b"GGUF" + b"q" * (len(small_parts) - 4))
    times = model.stat()
    os.utime(other, ns=(times.st_atime_ns, times.st_mtime_ns))
    os.replace(other, model)  # another inode under the name, same size and mtime
    assert local_weights.bundled_model(tmp_path / "cache").read_bytes() == small_parts
