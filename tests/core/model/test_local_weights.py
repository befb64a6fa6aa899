"""core/model/local_weights.py: the bundled model joined once from its parts and verified, a GGUF file checked, every
problem one line (on stand-in parts and the real model: tests/core/model/test_local_server.py)."""

from __future__ import annotations

import pytest

from deepagent_magics.core.model import local_weights
from deepagent_magics.core.model.local_weights import CACHE_ENV, LocalModelError, cache_dir, check_gguf


def test_the_cache_folder_is_the_variables_else_the_users_cache(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "models"))
    assert cache_dir() == tmp_path / "models"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert str(cache_dir()).startswith(str(tmp_path / "cache"))


def test_a_gguf_file_is_taken_and_anything_else_is_one_line(tmp_path):
    good = tmp_path / "m.gguf"
    good.write_bytes(b"GGUF" + b"\0" * 100)
    assert check_gguf(good) == good.resolve() or check_gguf(good) == good
    (tmp_path / "x.gguf").write_bytes(b"not a model")
    for path in (tmp_path / "x.gguf", tmp_path / "missing.gguf", tmp_path):
        with pytest.raises(LocalModelError) as caught:
            check_gguf(path)
        assert "\n" not in str(caught.value)


def test_the_pinned_model_is_the_one_the_parts_make():
    assert local_weights.FILENAME.endswith(".gguf") and local_weights.SIZE > 10 ** 9 and local_weights.PARTS > 1
