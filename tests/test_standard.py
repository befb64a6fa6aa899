"""standard.py: the standard capabilities every DeepAgent gets unless given others, in the order they are offered."""

from __future__ import annotations

from deepagent_magics.core.loop.extensions import Extensions
from deepagent_magics.core.run import conversations
from deepagent_magics.records.conversations import load_thread
from deepagent_magics.standard import STANDARD, standard_extensions


def test_a_fresh_set_of_every_standard_capability_in_order():
    made = standard_extensions()
    assert isinstance(made, Extensions) and list(made) == list(STANDARD)
    assert standard_extensions() is not made  # each agent may change its own
    names = [capability.name for capability in STANDARD]
    assert names.index("todos_and_files") < names.index("delegation") and "records" in names and "memory" in names
    assert load_thread in conversations._loaders  # --continue after a kernel restart reads the run records


def test_the_tools_an_agent_is_offered_come_from_them():
    tools = [tool.__name__ for tool in standard_extensions().builtin_tools()]
    assert tools[:2] == ["write_todos", "read_todos"]
    assert {"delegate", "review", "remember", "recall", "history", "list_skills"} <= set(tools)
