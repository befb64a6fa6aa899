"""magics/inputs/lm_option_flags.py: ``--lm-option`` values over the options set before, and how they are shown."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from deepagent_magics.magics.inputs.lm_option_flags import lm_option_values, shown_lm_options


def test_values_join_the_current_options_and_a_later_one_wins():
    assert lm_option_values(["max_tokens=4000", "timeout=600"], {"temperature": 0.2}) == {
        "temperature": 0.2, "max_tokens": 4000, "timeout": 600}
    assert lm_option_values(["timeout=5"], {"timeout": 600}) == {"timeout": 5}


def test_off_clears_them():
    assert lm_option_values(["off"], {"timeout": 600}) == {}
    assert lm_option_values([" off "], {"timeout": 600}) == {}


def test_a_malformed_value_is_one_usage_error_line_and_changes_nothing():
    current = {"timeout": 600}
    with pytest.raises(UsageError, match="write KEY=VALUE"):
        lm_option_values(["timeout"], current)
    assert current == {"timeout": 600}


def test_the_settings_list_never_prints_a_key_or_token():
    assert shown_lm_options({}) == "(none)"
    shown = shown_lm_options({"timeout": 600, "api_key": "sk-abc", "auth_token": "t0k"})
    assert shown == "timeout=600, api_key=(set), auth_token=(set)"
    assert "sk-abc" not in shown and "t0k" not in shown
