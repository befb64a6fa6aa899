"""core/policy/spend.py: the caps hold for the whole tree, checked before each LM call starts (the hostile and
concurrent cases: tests/adversarial/test_spend_caps*.py, test_caps_through_retries.py)."""

from __future__ import annotations

import math
import threading

import pytest

from deepagent_magics.core.policy.spend import (
    CapReached,
    SpendBudget,
    budget_of,
    check_cap,
    check_caps,
    check_retry,
    guard_tool,
    reported_cost,
)
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import Session
from deepagent_magics.core.workspace.workspace import Workspace
from deepagent_magics.errors import InvalidValue


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.mark.parametrize("name, value, expected", [("max_cost", "$0.50", 0.5), ("max_tokens", "1000", 1000),
                                                   ("max_time", 60, 60), ("max_cost", None, None)])
def test_a_cap_reads_as_a_number_above_zero(name, value, expected):
    assert check_cap(name, value) == expected


@pytest.mark.parametrize("name, value", [("max_cost", 0), ("max_tokens", 1.5), ("max_time", math.inf),
                                         ("max_cost", "cheap"), ("max_tokens", True)])
def test_a_cap_that_is_not_one_is_one_line(name, value):
    with pytest.raises(InvalidValue):
        check_cap(name, value)
    with pytest.raises(InvalidValue, match="unknown spend cap"):
        check_caps(max_money=1)


def test_tokens_and_cost_caps_refuse_the_next_call_once_reached():
    budget = SpendBudget(max_tokens=100, max_cost=1.0)
    with budget.calls_allowed():
        budget.add(60, 0.2)
    with budget.calls_allowed():
        budget.add(50, 0.2)
    with pytest.raises(CapReached, match="the token cap is reached: 110 of 100 tokens spent"):
        budget.admit()
    assert budget.reached.startswith("the token cap") and budget.to_dict()["calls"] == 2
    assert budget.describe() == "110/100 tokens · $0.4000/$1"


def test_time_spent_waiting_for_the_user_is_not_spent_time():
    clock, run = Clock(), Run("t")
    budget = SpendBudget(max_time=10, run=run, clock=clock)
    clock.now = 12.0
    run.waited_seconds = 5.0
    budget.check()  # 7 s spent
    clock.now = 16.0
    with pytest.raises(CapReached, match="the time cap is reached"):
        budget.check()


def test_a_call_in_flight_reserves_what_the_largest_call_cost_until_it_returns():
    budget = SpendBudget(max_tokens=100)
    with budget.calls_allowed():
        budget.add(60, None)
    reservation = budget.admit()  # 60 spent + 60 expected: only while it is in flight does another wait
    assert reservation == (60, 0.0) and budget.holding()
    started = threading.Event()

    def other():
        with budget.calls_allowed():
            started.set()

    thread = threading.Thread(target=other)
    thread.start()
    assert not started.wait(0.5)  # it waits for what the call in flight really costs
    budget.add(10, None)
    budget.release(reservation)
    assert started.wait(5)
    thread.join()


def test_unknown_or_absurd_costs_count_nothing_and_warn_once_when_cost_is_capped():
    run = Run("t")
    budget = SpendBudget(max_cost=1.0, run=run)
    for cost in (None, -1, math.nan, "x", True):
        budget.add(10, cost, model="local")
    assert budget.cost == 0.0 and budget.unknown_cost_calls == 5
    assert len(run.config["spend_warnings"]) == 1 and "local" in run.config["spend_warnings"][0]
    assert reported_cost(0.25) == 0.25 and reported_cost(math.inf) is None


def test_retries_and_lm_tools_are_held_to_the_trees_budget(tmp_path):
    root = Run("root")
    child = root.add_child("sub")
    root.spend = SpendBudget(max_tokens=10)
    assert budget_of(child) is root.spend
    root.spend.add(20, None)
    with pytest.raises(CapReached):
        check_retry(child)
    session = Session(child, Workspace(tmp_path))
    with pytest.raises(CapReached):
        with guard_tool(session, "llm_query_batched", (["a", "b"],), {}):
            pass
    with guard_tool(session, "read_file", (), {}):  # not an LM tool: not admitted
        pass
