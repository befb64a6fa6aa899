"""core/loop/subagent_types.py: the user's own kinds of sub-agent, checked when made: a mistake is one line."""

from __future__ import annotations

import pytest

from deepagent_magics.core.loop.subagent_types import SubAgentType, check_type_name, check_types, known_names
from deepagent_magics.errors import InvalidValue


def fetch(url: str) -> str:
    """Fetch."""
    return url


def test_a_type_carries_its_tools_its_words_and_its_depth_sections():
    kind = SubAgentType("reader", "  reads\n documents  ", "<!-- depth: sub -->\nDelegate.\n<!-- depth: deepest -->\n"
                        "Alone.\n<!-- end depth -->", tools=[fetch], lm="openai/gpt-4o-mini", max_iters=5)
    assert kind.description == "reads documents" and kind.tool_names == ["fetch"]
    assert kind.tools[0]("u") == "u" and kind.instructions_at(1, 2) == "Delegate." and kind.instructions_at(2, 2) == "Alone."


@pytest.mark.parametrize("kwargs, says", [
    ({"name": "default"}, "is a packaged profile"), ({"name": "1x"}, "is not an identifier"),
    ({"description": ""}, "needs a description"), ({"description": "x" * 400}, "keep it to one line"),
    ({"instructions": " "}, "needs instructions"), ({"tools": "fetch"}, "tools must be a list"),
    ({"tools": [fetch, fetch]}, "two tools named 'fetch'"), ({"max_iters": 0}, "max_iters must be a positive integer"),
    ({"max_iters": True}, "max_iters"), ({"lm": 3}, "lm must be an LM or a model id"), ({"lm": "gpt4"}, "is not a model id"),
])
def test_a_mistake_is_one_line(kwargs, says):
    fields = {"name": "reader", "description": "reads", "instructions": "Read.", **kwargs}
    with pytest.raises(InvalidValue, match=says):
        SubAgentType(**fields)


def test_types_by_name_each_once():
    kind = SubAgentType("reader", "reads", "Read.")
    assert check_types([kind]) == {"reader": kind}
    for bad, says in [([kind, kind], "two types named"), ([3], "is not a SubAgentType"), (kind, "must be a list")]:
        with pytest.raises(InvalidValue, match=says):
            check_types(bad)
    assert known_names({"reader": kind})[-1] == "reader" and check_type_name("mine") == "mine"
