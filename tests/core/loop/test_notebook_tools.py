"""core/loop/notebook_tools.py: the user's own functions as tools: checked when offered, their errors text the agent
reads (through the magics: tests/adversarial/test_custom_agents_magic.py)."""

from __future__ import annotations

import asyncio
import inspect
import sys

import pytest

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.loop.notebook_tools import as_tool, check_tool, taken_names


def fetch(url: str, retries: int = 1) -> str:
    """Fetch a page."""
    return f"{url}:{retries}"


def undocumented(x):
    return x


def test_a_function_with_a_docstring_and_a_name_is_a_tool_keeping_its_signature():
    tool = as_tool(fetch)
    assert tool("a", retries=2) == "a:2" and tool.__name__ == "fetch"
    assert tool.__signature__ == inspect.signature(fetch)
    assert as_tool(tool) is tool and as_tool(fetch, "alias").__name__ == "alias"


@pytest.mark.parametrize("func, name, says", [
    (undocumented, None, "has no docstring"), (3, None, "is not callable"),
    (type("K", (), {"__call__": lambda self: 1, "__doc__": "x"})(), None, "not a function"),
    (fetch, "_hidden", "may not start with '_'"), (fetch, "write_file", "a built-in tool's or the REPL's own name"),
    (fetch, "SUBMIT", "the REPL's own name"), (fetch, "class", "no usable name"),
])
def test_what_cannot_be_a_tool_is_one_line(func, name, says):
    with pytest.raises(ValueError, match=says):
        check_tool(func, name=name)
    assert {"SUBMIT", "llm_query", "read_file"} <= taken_names()


def test_a_tools_failure_and_its_exit_are_text_and_a_coroutine_is_awaited():
    def boom():
        """Fail."""
        raise RuntimeError("the API is down\nsecond line")

    def leave():
        """Exit."""
        sys.exit(3)

    async def later(x: int) -> int:
        """Later."""
        await asyncio.sleep(0)
        return x + 1

    assert as_tool(boom)() == "Error: boom() raised RuntimeError: the API is down second line"
    assert as_tool(leave)() == "Error: leave() raised SystemExit: 3"
    assert as_tool(later)(1) == 2


def test_the_call_is_recorded_on_the_run(tmp_path):
    lm = ScriptedLM(["print(fetch('u'))", "SUBMIT(result='ok')"])
    calls = []
    from deepagent_magics.core.run.run import Run

    run = Run("t")
    run.subscribe(lambda event: calls.append(event.data) if event.kind == "tool_call" else None)
    DeepAgent(lm=lm, workspace=tmp_path, tools=[as_tool(fetch)]).run("t", namespace={}, run=run)
    assert [call for call in calls if call["name"] == "fetch"] == [{"name": "fetch", "args": {"url": "u"}, "error": None}]
