"""tuning/suites/hub.py: where suites keep their files, and a download that cannot happen as one line."""

from __future__ import annotations

import sys

import pytest

from deepagent_magics.tuning.suites.hub import CACHE_ENV, SuiteUnavailable, cache_dir, dataset_rows, snapshot


def test_the_cache_is_given_else_the_variable_else_the_users(monkeypatch, tmp_path):
    assert cache_dir(tmp_path) == tmp_path
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env"))
    assert cache_dir() == tmp_path / "env"
    monkeypatch.delenv(CACHE_ENV)
    assert str(cache_dir()).endswith(".cache/deepagent-magics/bench")


def test_without_the_packages_a_download_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(SuiteUnavailable, match=r"needs huggingface_hub: pip install 'deepagent-magics\[quality\]'"):
        snapshot("org/data", tmp_path, ["*.csv"])
    with pytest.raises(SuiteUnavailable, match="needs the datasets package"):
        dataset_rows("org/data", "validation")
