"""core/loop/tool_binding.py: agent code calls a tool positionally or by keyword; an async tool gives its value."""

from __future__ import annotations

import pytest

from deepagent_magics.core.loop.tool_binding import ANSWERS_ERRORS, accept_positional, awaiting


def read(path: str, offset: int = 0, **rest) -> str:
    """Read."""
    return f"{path}@{offset}{rest}"


def test_positional_arguments_are_bound_to_the_tools_signature():
    bound = accept_positional("read", read)
    assert bound("a.txt", 10) == "a.txt@10{}" and bound("a.txt", extra=1) == "a.txt@0{'extra': 1}"
    with pytest.raises(TypeError, match="read\\(\\): "):
        bound()


def test_a_tool_that_answers_errors_gets_the_call_it_should_have_made():
    def ls(path: str = ".") -> str:
        """List."""
        return path

    setattr(ls, ANSWERS_ERRORS, True)
    assert accept_positional("ls", ls)(1, 2).startswith("Error: ls(): too many positional arguments; call it as ls(path='.')")


def test_awaiting_makes_an_async_tool_plain_and_keeps_its_metadata():
    async def fetch(url: str) -> str:
        """Fetch."""
        return url.upper()

    plain = awaiting(fetch)
    assert plain("u") == "U" and plain.__name__ == "fetch" and plain.__doc__ == "Fetch."
