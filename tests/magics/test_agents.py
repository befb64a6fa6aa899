"""magics/agents.py: the user's sub-agent types as written (names looked up in the notebook when used) and ``--tools``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from IPython.core.error import UsageError

from deepagent_magics.core.loop.capability import Capability
from deepagent_magics.magics.agents import (
    TypeSpec,
    describe,
    load_types,
    notebook_capabilities,
    notebook_tools,
    reset_type,
    root_settings,
    saved_types,
    set_type_instructions,
    tool_names,
    type_list,
    type_texts,
)


def fetch(url: str) -> str:
    """Fetch a document."""
    return url


def test_tool_names_read_commas_quotes_lists_and_off():
    assert tool_names("f, g,'h'") == ("f", "g", "h")
    assert tool_names(["f,g", "f"]) == ("f", "g")
    assert tool_names("off") == () and tool_names(None) == () and tool_names("none") == ()


def test_notebook_functions_become_tools_named_as_in_the_notebook():
    tools = notebook_tools("fetch, alias", {"fetch": fetch, "alias": fetch})
    assert [tool.__name__ for tool in tools] == ["fetch", "alias"]


@pytest.mark.parametrize("names, namespace, says", [
    ("f-g", {}, "not a function name"),
    ("write_file", {"write_file": fetch}, "that is a built-in tool's name"),
    ("gone", {}, "there is no notebook variable 'gone'"),
    ("n", {"n": 3}, "n is a int, not a function"),
    ("K", {"K": int}, "K is a type, not a function"),
])
def test_a_name_that_is_no_notebook_function_is_one_line(names, namespace, says):
    with pytest.raises(UsageError, match=says):
        notebook_tools(names, namespace)


def test_capabilities_are_taken_from_the_notebook_by_name():
    capability = Capability(name="mine")
    assert notebook_capabilities("c", {"c": capability}) == [capability]
    with pytest.raises(UsageError, match="no notebook variable 'x'"):
        notebook_capabilities("x", {})
    with pytest.raises(UsageError, match="x is a str, not a deepagent_magics.Capability"):
        notebook_capabilities("x", {"x": "text"})


def test_a_type_is_built_from_the_notebook_when_used():
    spec = TypeSpec("reader", "reads documents", "Read it.\n", ("fetch",))
    kind = spec.build({"fetch": fetch})
    assert kind.name == "reader" and kind.tool_names == ["fetch"]
    with pytest.raises(UsageError, match="sub-agent type 'reader': --tools fetch: there is no notebook variable"):
        spec.build({})


def test_hand_tuning_a_type_keeps_what_it_was_and_reset_puts_it_back():
    core = SimpleNamespace(agent_types={"reader": TypeSpec("reader", "reads", "First.\n")})
    set_type_instructions(core, "reader", "Second.\n")
    set_type_instructions(core, "reader", "Third.\n")
    assert type_texts(core, "reader") == ("First.\n", "Third.\n")
    reset_type(core, "reader")
    assert type_texts(core, "reader") == ("First.\n", "First.\n")


def test_types_saved_load_again_all_or_none():
    core = SimpleNamespace(agent_types={"reader": TypeSpec("reader", "reads", "Read.\n", ("fetch",))})
    data = saved_types(core)
    other = SimpleNamespace()
    with pytest.raises(UsageError):  # its tool is not in this notebook: nothing registered
        load_types(other, data + [{"name": "second", "description": "d", "instructions": "i"}], {}, "--load")
    assert getattr(other, "agent_types", {}) == {}
    assert load_types(other, data, {"fetch": fetch}, "--load") == ["reader"]
    assert other.agent_types["reader"] == core.agent_types["reader"]
    with pytest.raises(UsageError, match="not a list of objects"):
        load_types(other, {"reader": 1}, {}, "--load")
    with pytest.raises(UsageError, match="not readable"):
        load_types(other, [{"name": "x"}], {}, "--load")


def test_running_a_type_as_the_root_puts_its_tools_after_the_notebooks_and_its_own_win():
    def other(x: int) -> int:
        """Another tool."""
        return x

    core = SimpleNamespace(agent_types={"reader": TypeSpec("reader", "reads", "Read.\n", ("fetch",))})
    settings = root_settings(core, "reader", {"fetch": fetch}, 1, notebook_tools("other", {"other": other}))
    assert [tool.__name__ for tool in settings["tools"]] == ["other", "fetch"]
    assert "Read." in settings["instructions"]
    assert root_settings(core, "default", {}, 1, []) == {}
    assert [kind.name for kind in type_list(core, {"fetch": fetch})] == ["reader"]


def test_the_list_shows_packaged_profiles_then_the_users_types():
    table = describe({"reader": TypeSpec("reader", "reads documents", "x", ("fetch",), "openai/x", 3)})
    lines = table.splitlines()
    assert lines[0].split() == ["name", "kind", "tools", "lm", "max-iters", "description"]
    assert lines[-1].split() == ["reader", "yours", "fetch", "openai/x", "3", "reads", "documents"]
    assert any(line.split()[:2] == ["default", "packaged"] for line in lines)
