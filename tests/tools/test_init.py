"""tools/__init__.py: the todo and file tools as one capability, with their places in the prompt and their events."""

from __future__ import annotations

from deepagent_magics.core.run.event_kinds import FILE_WRITTEN, TODOS
from deepagent_magics.tools import TODOS_AND_FILES, base_tools, read_todos, write_todos


def test_the_capability_carries_the_eight_tools_their_lines_and_events():
    names = [tool.__name__ for tool in base_tools()]
    assert names == ["write_todos", "read_todos", "ls", "read_file", "write_file", "edit_file", "glob", "grep"]
    assert [tool.__name__ for tool in TODOS_AND_FILES.tools] == names
    assert set(TODOS_AND_FILES.lines) == set(names)
    assert set(TODOS_AND_FILES.events) == {TODOS, FILE_WRITTEN}
    assert write_todos in base_tools() and read_todos in base_tools()
