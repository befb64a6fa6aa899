"""core/loop/doors.py: each front door's own true words for the root's REPL rules, then the rules all share."""

from __future__ import annotations

import pytest

from deepagent_magics.core.loop.doors import DOORS, SHARED, Door, add_door, door
from deepagent_magics.errors import InvalidValue


def test_every_door_says_where_code_runs_and_what_persists_then_the_shared_rules():
    assert {"notebook", "api", "cli", "mcp", "python"} <= set(DOORS)
    rules = door("cli").repl_rules(timeout=120.0, scratch="_tmp_")
    assert rules.startswith("Code runs in the process of the user's `deepagent run` command")
    assert "The process ends with the run" in rules and rules.endswith("A step may run 120 s.")
    assert "Throwaway names start with `_tmp_`" in rules
    assert "notebook" not in door("mcp").repl_rules(60, "_t_").lower()  # no notebook where there is none


def test_a_new_door_is_one_entry_and_an_unknown_one_is_one_line():
    try:
        add_door(Door("chat", "Code runs in a chat's kernel.", "Nothing stays."))
        assert door("chat").repl_rules(5, "_x_") == f"Code runs in a chat's kernel. Nothing stays. {SHARED.format(timeout=5, scratch='_x_')}"
    finally:
        DOORS.pop("chat", None)
    with pytest.raises(InvalidValue, match="door 'teams' is not a front door; the doors are"):
        door("teams")
