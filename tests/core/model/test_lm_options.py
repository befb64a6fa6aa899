"""core/model/lm_options.py: ``--lm-option KEY=VALUE`` read as JSON scalars, else text; a bad one is one line
(how the config magic merges and shows them: magics/inputs/lm_option_flags.py)."""

from __future__ import annotations

import pytest

from deepagent_magics.core.model.lm_options import LMOptionError, parse_lm_option, parse_lm_options
from deepagent_magics.errors import UserError


@pytest.mark.parametrize("text, pair", [("max_tokens=4000", ("max_tokens", 4000)), ("temperature=0.2", ("temperature", 0.2)),
                                        ("stream=true", ("stream", True)), ("seed=null", ("seed", None)),
                                        ("api_base=http://localhost:8000/v1", ("api_base", "http://localhost:8000/v1")),
                                        (' name = "x"', ("name", "x"))])
def test_values_are_json_scalars_else_the_text_written(text, pair):
    assert parse_lm_option(text) == pair


@pytest.mark.parametrize("text, says", [("max_tokens", "write KEY=VALUE"), ("=3", "write KEY=VALUE"),
                                        ("max-tokens=3", "is not an option name"), ("model=x", "name the model with --lm"),
                                        ("headers={\"a\": 1}", "must be a number, true/false, null or text")])
def test_a_bad_option_is_one_line(text, says):
    with pytest.raises(LMOptionError, match=says):
        parse_lm_option(text)
    assert issubclass(LMOptionError, UserError)


def test_a_later_repeat_wins():
    assert parse_lm_options(["timeout=1", "timeout=600", "max_tokens=4"]) == {"timeout": 600, "max_tokens": 4}
