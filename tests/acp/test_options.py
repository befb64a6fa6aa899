"""What `deepagent acp` was started with (`deepagent_magics.acp.options`): its flags are the table's at the ACP
door, and each prompt's cell gets them as a cell's flags."""

from __future__ import annotations

import pytest

pytest.importorskip("acp")
from deepagent_magics.acp.options import CELL_FLAGS, FLAGS, Options  # noqa: E402
from deepagent_magics.cli.parser import build_parser  # noqa: E402
from deepagent_magics.server.launch import cell_code  # noqa: E402
from deepagent_magics.settings import ACP, CELL, at  # noqa: E402


def test_every_acp_setting_is_a_flag_of_the_command_and_of_each_prompts_cell():
    acp = build_parser()._subparsers._group_actions[0].choices["acp"]
    flags = {option for action in acp._actions for option in action.option_strings}
    assert {s.flag for s in at(ACP)} | {"-h", "--help"} == flags
    assert all(CELL in s.doors for s in at(ACP))  # handed on as the cell's flags
    assert set(CELL_FLAGS) == set(FLAGS) | {"lm"} and "workspace" not in CELL_FLAGS


def test_the_cell_gets_the_values_that_differ_from_the_defaults_and_the_lm():
    options = Options(settings={"max_iters": 7, "approve": "risky", "subagent_network": True, "timeout": 120.0},
                      lm_flag="openai/gpt-4o-mini")
    code = cell_code("s-1", "task", "/ws", options.flags(), CELL_FLAGS, ("--door", "acp", "--new"))
    assert "--max-iters 7" in code and "--approve risky" in code and "--subagent-network" in code
    assert "--lm openai/gpt-4o-mini" in code and "--quiet" not in code
    assert code.index("--door api") < code.index("--door acp")  # the caller's door is the one argparse keeps
    assert Options().flags() == {"lm": None}
