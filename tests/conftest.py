"""Shared fixtures: a real IPython shell with the extension loaded, and a temp workspace."""

from __future__ import annotations

import os

import dspy
import pytest
from hypothesis import settings
from IPython import get_ipython
from IPython.testing.globalipapp import start_ipython

settings.register_profile("deepagent", database=None)  # no .hypothesis/ folder in the repository
settings.load_profile("deepagent")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "true")  # no network: DSPy's bundled model prices


@pytest.fixture(scope="session")
def _shell():
    shell = start_ipython() or get_ipython()  # start_ipython returns None once started
    shell.run_line_magic("load_ext", "deepagent_magics")
    return shell


@pytest.fixture
def ip(_shell, tmp_path, monkeypatch):
    """The IPython shell, with a clean user namespace and the workspace in a temp dir."""
    monkeypatch.delenv("DEEPAGENT_LM", raising=False)
    _shell.reset(new_session=False)
    _shell.run_line_magic("deepagent_config", "--reset")
    _shell.run_line_magic("deepagent_config", f"--workspace {tmp_path} --quiet on")
    with dspy.context(lm=None):
        yield _shell
    _shell.reset(new_session=False)


@pytest.fixture
def workspace(tmp_path):
    return tmp_path
