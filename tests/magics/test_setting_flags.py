"""magics/setting_flags.py: the magics' traitlets and flags made from the settings table, and their checks."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.magic_arguments import magic_arguments
from traitlets import Bool, Enum, Float, Int, List

from deepagent_magics.magics.setting_flags import (
    CELL,
    CONFIG,
    NAMES,
    SettingTraits,
    check,
    checked_caps,
    flags,
    switches,
    trait,
)
from deepagent_magics.settings import MAGICS, SETTINGS, at


def parser_of(door):
    @magic_arguments()
    @flags(door)
    def magic(line):
        pass

    return magic.parser


def test_each_setting_gets_the_traitlet_of_its_type_and_default():
    assert isinstance(trait(SETTINGS["max_iters"]), Int) and trait(SETTINGS["max_iters"]).default_value == 20
    assert isinstance(trait(SETTINGS["timeout"]), Float)
    assert isinstance(trait(SETTINGS["quiet"]), Bool)
    assert isinstance(trait(SETTINGS["display_mode"]), Enum)
    assert isinstance(trait(SETTINGS["mcp_servers"]), List)
    assert trait(SETTINGS["max_iters"]).metadata["config"] is True
    assert {s.name for s in at(CONFIG)} <= set(SettingTraits.class_trait_names())


def test_the_config_list_is_every_setting_a_magic_takes():
    assert set(NAMES) == {s.name for s in SETTINGS.values() if s.doors & MAGICS}


def test_a_cell_flag_left_out_is_none_the_configured_value():
    args = parser_of(CELL).parse_args([])
    assert args.max_iters is None and args.quiet is None
    assert parser_of(CELL).parse_args(["--quiet", "--max-iters", "3"]).max_iters == 3


def test_a_config_switch_reads_on_or_off_and_becomes_a_bool():
    args = parser_of(CONFIG).parse_args(["--quiet", "on"])
    assert switches({"quiet": args.quiet, "max_iters": 4}) == {"quiet": True, "max_iters": 4}
    with pytest.raises(UsageError, match="invalid choice: 'yes'"):
        parser_of(CONFIG).parse_args(["--quiet", "yes"])


def test_a_bad_value_of_a_flag_is_refused_by_the_parser():
    with pytest.raises(UsageError, match="--max-iters: invalid int value: 'many'"):
        parser_of(CELL).parse_args(["--max-iters", "many"])


def test_values_out_of_bounds_are_one_usage_error_line_naming_the_flag():
    check({"max_iters": 5, "not_a_setting": -1})
    with pytest.raises(UsageError) as caught:
        check({"max_iters": 0})
    assert type(caught.value) is UsageError and str(caught.value) == "--max-iters must be positive, got 0"


def test_caps_are_read_checked_and_off_removes_one():
    assert checked_caps({"max_cost": "$0.50", "max_tokens": "1000", "quiet": True}) == {"max_cost": 0.5, "max_tokens": 1000}
    assert checked_caps({"max_cost": "off"}, unset_with_off=True) == {"max_cost": None}
    with pytest.raises(UsageError):
        checked_caps({"max_cost": "off"})
    with pytest.raises(UsageError):
        checked_caps({"max_tokens": "-3"})
