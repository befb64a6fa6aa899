"""interpreters/__init__.py: the REPLs' public names on first use, and ROOT_INTERPRETER, the capability that gives
the root agent the live namespace (`live_namespace`), which imports the shell's REPL only when an agent runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import deepagent_magics.interpreters as interpreters
from deepagent_magics.interpreters.shell import ShellInterpreter, ShellInterpreterFactory

ROOT = Path(__file__).resolve().parents[2]


def test_the_root_interpreter_is_the_live_namespace_with_the_agents_settings():
    namespace = {"x": 41}
    agent = SimpleNamespace(timeout=7.0, undo_limit=3, door="cli")
    factory = interpreters.ROOT_INTERPRETER.root_interpreter(agent, None, namespace)
    assert isinstance(factory, ShellInterpreterFactory)
    assert factory.namespace is namespace and factory.timeout == 7.0 and factory.undo_limit == 3
    repl = factory()
    assert isinstance(repl, ShellInterpreter) and repl.namespace is namespace


def test_the_names_are_the_modules_own():
    assert interpreters.ShellInterpreterFactory is ShellInterpreterFactory
    assert set(interpreters.__all__) <= set(dir(interpreters))


@pytest.mark.subprocess
def test_importing_the_room_and_its_capability_loads_no_repl(tmp_path):
    code = ("import json, sys; from deepagent_magics.interpreters import ROOT_INTERPRETER; "
            "print(json.dumps([m for m in ('deepagent_magics.interpreters.shell', 'deepagent_magics.interpreters.kernel',"
            " 'dspy') if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=240,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []
