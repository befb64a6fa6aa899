"""core/loop/extensions.py: what an agent gets from the rooms above the core is an object handed to it;
importing a room registers nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from deepagent_magics import DeepAgent, standard_extensions
from deepagent_magics.core.loop.extensions import Extensions, NoInterpreter
from deepagent_magics.testing import ScriptedLM


def test_an_agent_uses_the_extensions_it_is_given(tmp_path):
    def shout(text: str) -> str:
        """Say it loud."""
        return text.upper()

    mine = standard_extensions().add_tools(lambda: [shout])
    agent = DeepAgent(lm=ScriptedLM([("Shout.", "SUBMIT(result=shout('hi'))")]), workspace=tmp_path, extensions=mine)
    agent.record_runs = False
    assert "shout" in {tool.__name__ for tool in agent.builtin_tools()}
    assert "shout" not in {tool.__name__ for tool in DeepAgent(lm="openai/x", workspace=tmp_path).builtin_tools()}
    assert agent.run("shout", namespace={}).result == "HI"


def test_an_agent_with_empty_extensions_says_what_is_missing(tmp_path):
    assert Extensions().builtin_tools() == []
    with pytest.raises(NoInterpreter, match="standard_extensions"):
        DeepAgent(lm=ScriptedLM([("x", "SUBMIT(result=1)")]), workspace=tmp_path, extensions=Extensions())


def test_a_broken_provider_adds_nothing_and_breaks_nothing():
    def broken(agent, root):
        raise RuntimeError("boom")

    ext = Extensions().add_instructions_provider(broken).add_instructions_provider(lambda agent, root: "kept")
    assert ext.extra_instructions(None, None) == "kept"


@pytest.mark.subprocess
@pytest.mark.parametrize("room", ["core", "core.loop.agent", "interpreters", "tools", "records", "display",
                                  "tuning", "magics", "cli", "server", "mcp"])
def test_importing_any_room_alone_works_and_registers_nothing(room):
    """A fresh interpreter imports one room; the default extensions are not made until an agent needs them."""
    code = (f"import importlib; importlib.import_module('deepagent_magics.{room}'); "
            "from deepagent_magics.core.loop import extensions; "
            "assert extensions._default is None, 'made at import'; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
