"""magics/inputs/flags.py: a magic's line read as flags; every mistake exactly one UsageError line."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, magic_arguments

from deepagent_magics.core.run.secrets import register_secret
from deepagent_magics.errors import InvalidValue, UserError
from deepagent_magics.magics.inputs.flags import MESSAGE_CHARS, one_line, parse_flags, unquote, user_errors


@magic_arguments()
@argument("name")
@argument("--out")
def magic(line):
    pass


def test_one_line_is_the_first_non_empty_line_cut_to_its_limit():
    assert one_line("\n\n  first  \nsecond") == "first"
    assert one_line(None) == "" and one_line("") == ""
    long = one_line("x" * 1000)
    assert len(long) == MESSAGE_CHARS and long.endswith("…")
    assert one_line("abcdef", limit=4) == "abc…"


def test_one_line_never_shows_a_secret():
    register_secret("sk-flags-secret-123456")
    assert "sk-flags-secret-123456" not in one_line("key sk-flags-secret-123456 refused")


def test_flags_are_split_as_a_shell_splits_them():
    args = parse_flags(magic, "'a name' --out result")
    assert args.name == "a name" and args.out == "result"


def test_an_unclosed_quotation_is_one_usage_error_line():
    with pytest.raises(UsageError) as caught:
        parse_flags(magic, "'a name --out result")
    assert type(caught.value) is UsageError
    assert "close the quotation" in str(caught.value) and "\n" not in str(caught.value)


def test_a_user_error_from_below_becomes_exactly_a_usage_error_of_its_first_line():
    with pytest.raises(UsageError) as caught:
        with user_errors():
            raise InvalidValue("--max-iters must be at least 1\nmore detail nobody needs")
    assert type(caught.value) is UsageError and str(caught.value) == "--max-iters must be at least 1"
    with pytest.raises(UsageError, match="^UserError$"):
        with user_errors():
            raise UserError("")


def test_anything_else_keeps_its_traceback():
    with pytest.raises(KeyError):
        with user_errors():
            raise KeyError("a bug")


def test_unquote_takes_one_matching_pair_off():
    assert unquote('"python server.py"') == "python server.py"
    assert unquote("'x'") == "x"
    assert unquote("'x\"") == "'x\""
    assert unquote('"') == '"' and unquote("plain") == "plain"
    assert unquote("''a''") == "'a'"
