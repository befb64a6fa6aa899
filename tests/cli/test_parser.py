"""cli/parser.py: the command line's arguments made from the settings table; a mistake is one line."""

from __future__ import annotations

import argparse

import pytest

from deepagent_magics.cli.parser import UsageProblem, build_parser, positive, setting_type
from deepagent_magics.settings import CLI, SETTINGS, at


def test_run_takes_every_cli_setting_with_the_tables_defaults():
    args = build_parser().parse_args(["run", "count"])
    for setting in at(CLI):
        assert getattr(args, setting.name) == setting.where(CLI, "default") or setting.repeat or setting.kind is bool
    assert args.task == "count" and args.load == [] and args.json is False


def test_bounds_and_types_are_the_tables_and_a_mistake_is_a_usage_problem():
    assert build_parser().parse_args(["run", "t", "--max-iters", "3"]).max_iters == 3
    for argv in (["run", "t", "--max-iters", "0"], ["run", "t", "--timeout", "nan"], ["nope"], ["run"]):
        with pytest.raises(UsageProblem):
            build_parser().parse_args(argv)


def test_positive_numbers_are_finite_and_above_zero():
    assert positive(int)("3") == 3 and positive(float)("0.5") == 0.5
    for text in ("0", "-1", "inf", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            positive(float)(text)
    with pytest.raises(argparse.ArgumentTypeError, match="must be positive"):
        setting_type(SETTINGS["max_iters"])("0")


def test_the_other_commands_read_records_and_bench():
    parser = build_parser()
    assert parser.parse_args(["runs", "--limit", "5"]).limit == 5
    assert parser.parse_args(["trace", "abc", "--step", "2"]).step == 2
    assert parser.parse_args(["export", "abc", "out.ipynb"]).out == "out.ipynb"
    bench = parser.parse_args(["bench", "sklearn", "--limit", "2", "--where", "level=hard"])
    assert (bench.suite, bench.limit, bench.where, bench.max_depth) == ("sklearn", 2, ["level=hard"], 0)
