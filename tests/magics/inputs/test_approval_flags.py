"""magics/inputs/approval_flags.py: ``--approve`` and ``--approve-rules`` checked before any setting sticks."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from deepagent_magics.magics.inputs.approval_flags import check_approval, check_rules, resolve_policy


def test_a_policy_name_a_callable_or_a_notebook_function_is_a_policy():
    def ask(proposal):
        return "run"

    assert resolve_policy("risky", {}) == "risky"
    assert resolve_policy(" always ", {}) == "always"
    assert resolve_policy(ask, {}) is ask
    assert resolve_policy("ask", {"ask": ask}) is ask


def test_a_notebook_variable_that_is_no_function_says_what_it_is():
    with pytest.raises(UsageError, match="the notebook variable 'ask' is a int, not a function"):
        resolve_policy("ask", {"ask": 3})


def test_an_unknown_policy_names_the_choices():
    with pytest.raises(UsageError, match="unknown approval policy 'sometimes'; use never, risky, always"):
        resolve_policy("sometimes", {})


def test_updates_are_checked_and_the_policy_kept_as_its_name():
    updates = {"approve": " risky ", "approve_rules": "none,subagents"}
    check_approval(updates, {})
    assert updates["approve"] == "risky"


def test_unknown_rules_are_one_line():
    with pytest.raises(UsageError):
        check_rules("no_such_rule")
    with pytest.raises(UsageError):
        check_approval({"approve_rules": "all,-nope"}, {})
    check_rules(None)
    check_rules("")
