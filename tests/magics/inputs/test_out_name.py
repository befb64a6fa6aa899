"""magics/inputs/out_name.py: ``--out NAME`` must be a name a result can be stored in without breaking anything."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from deepagent_magics.magics.inputs.out_name import RESERVED_OUT, check_out


def test_a_plain_identifier_is_kept_and_none_is_none():
    assert check_out("summary") == "summary"
    assert check_out(None) is None


@pytest.mark.parametrize("name, says", [
    ("1table", "is not a valid variable name"),
    ("a-b", "is not a valid variable name"),
    ("class", "is not a valid variable name"),
    ("__name__", "is a name Python or the deepagent magics use"),
    ("_deepagent_run", "is a name Python or the deepagent magics use"),
    ("print", "would hide Python's builtin print"),
])
def test_a_name_that_would_break_the_notebook_is_one_line(name, says):
    with pytest.raises(UsageError) as caught:
        check_out(name, flag="--into")
    assert type(caught.value) is UsageError and str(caught.value).startswith(f"--into {name!r}") and says in str(caught.value)


def test_every_name_the_magics_store_into_is_reserved():
    assert {"_deepagent_run", "_deepagent_eval", "_deepagent_optimize", "_deepagent_bench"} <= RESERVED_OUT
