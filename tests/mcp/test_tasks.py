"""The bookkeeping of MCP tasks (`deepagent_magics.mcp.tasks`): the ttl a client may ask for, who sees a task,
how a task ends, how long it is kept and how many the server holds. A clock the test moves stands for time."""

from __future__ import annotations

import math
import threading

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from deepagent_magics.core.policy.steering import steering_of
from deepagent_magics.core.run.run import Run
from deepagent_magics.mcp.tasks import (DEFAULT_TTL_MS, FETCHED_GRACE, MAX_TTL_MS, MIN_TTL_MS, TaskStore,
                                        requested_ttl)


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self):
        return self.now


def in_loop(body):
    """Run ``body()`` inside an event loop (a task's `ended` is an anyio event)."""
    async def main():
        return body()
    return anyio.run(main)


@pytest.mark.parametrize("given", [-1, 0, MIN_TTL_MS - 1, MAX_TTL_MS + 1, 10 ** 30, 1e300, math.nan, math.inf,
                                   -math.inf, 1.5, "60000", True, [], {}])
def test_a_ttl_out_of_bounds_or_not_a_whole_number_is_an_mcp_error(given):
    with pytest.raises(MCPError) as caught:
        requested_ttl({"ttl": given})
    assert caught.value.error.code == -32602 and "whole number of milliseconds" in caught.value.error.message
    assert len(caught.value.error.message) < 200  # a huge value is not echoed whole


def test_a_ttl_within_bounds_is_kept_and_none_is_the_default():
    assert requested_ttl({"ttl": 60_000}) == 60_000 and requested_ttl({"ttl": 60_000.0}) == 60_000
    assert requested_ttl({}) == requested_ttl({"ttl": None}) == DEFAULT_TTL_MS
    assert requested_ttl({"ttl": 5_000}, max_ttl_ms=5_000) == 5_000
    assert requested_ttl({}, max_ttl_ms=5_000) == 5_000  # the default never exceeds the server's longest
    for not_an_object in ("x", [60_000], 60_000):
        with pytest.raises(MCPError):
            requested_ttl(not_an_object)


def test_a_task_is_seen_only_by_its_owner_and_ids_are_long_and_distinct():
    def body():
        store = TaskStore(max_live=100)
        mine = store.create("token:a", 60_000, "run_task")
        ids = {store.create("token:a", 60_000, "run_task").id for _ in range(50)}
        seen = store.get("token:a", mine.id)
        errors = []
        for owner, task_id in (("token:b", mine.id), ("stdio", mine.id), ("token:a", mine.id[:-1]),
                               ("token:a", 42), ("token:a", "")):
            with pytest.raises(MCPError) as caught:
                store.get(owner, task_id)
            errors.append(caught.value.error)
        return mine, ids, seen, errors, store.owned_by("token:b"), len(store.owned_by("token:a"))

    mine, ids, seen, errors, theirs, count = in_loop(body)
    assert seen is mine and theirs == [] and count == 51
    assert len(ids) == 50 and mine.id not in ids and min(len(i) for i in ids | {mine.id}) >= 32
    assert all(e.code == -32602 and "no task" in e.message for e in errors)  # another's: the same as unknown


def test_the_live_limit_counts_working_tasks_and_results_not_fetched():
    def body():
        clock = Clock()
        store = TaskStore(max_live=2, clock=clock)
        first, second = store.create("o", 60_000, "run_task"), store.create("o", 60_000, "run_task")
        with pytest.raises(MCPError) as full:
            store.create("o", 60_000, "run_task")
        first.finish(result={"content": [], "structuredContent": {"id": "r", "status": "finished", "steps": 1}})
        first.detach()
        still_full = first.live
        first.fetched_at = clock()  # its result was fetched: it no longer counts
        third = store.create("o", 60_000, "run_task")
        second.cancel()
        counts_while_running = second.live  # cancelled, but its run has not returned yet
        second.detach()
        return full.value.error, still_full, third, counts_while_running, second.live

    error, still_full, third, counts_while_running, after = in_loop(body)
    assert error.code == -32600 and "already holds 2 live tasks" in error.message
    assert still_full and third.status == "working"
    assert counts_while_running and not after


def test_a_cancelled_task_stays_cancelled_and_stops_its_run():
    def body():
        store = TaskStore()
        task = store.create("o", 60_000, "run_task")
        run = Run("a task")
        task.attach(run, 20)
        task.cancel()
        changed = task.finish(result={"content": [], "structuredContent": {"status": "finished"}})
        with pytest.raises(MCPError) as again:
            task.cancel()
        task.detach()
        return task, run, changed, again.value.error

    task, run, changed, error = in_loop(body)
    assert task.status == "cancelled" and not changed and task.ended.is_set()
    assert steering_of(run).stop.is_set()  # the run's next step boundary ends it `stopped`
    assert error.code == -32602 and "already in terminal status 'cancelled'" in error.message


def test_a_task_cancelled_before_its_run_started_stops_the_run_at_once():
    def body():
        task = TaskStore().create("o", 60_000, "run_task")
        task.cancel()
        run = Run("late")
        task.attach(run, 20)
        task.detach()
        return run

    assert steering_of(in_loop(body)).stop.is_set()


def test_expiry_drops_tasks_past_their_ttl_cancelling_those_still_working_and_fetched_ones_after_a_grace():
    def body():
        clock = Clock()
        store = TaskStore(clock=clock)
        working = store.create("o", 2_000, "run_task")
        run = Run("long")
        working.attach(run, 20)
        done = store.create("o", 600_000, "run_task")
        done.finish(result={"content": []})
        done.fetched_at = clock()
        kept = store.create("o", 600_000, "run_task")
        clock.now += 1.5
        before = {t.id for t in store.owned_by("o")}
        clock.now += 1.0  # past `working`'s ttl
        after_ttl = {t.id for t in store.owned_by("o")}
        clock.now += FETCHED_GRACE
        after_grace = {t.id for t in store.owned_by("o")}
        working.detach()
        threading.Event().wait(0.2)  # the stopper thread sees the run over and ends
        return working, run, done, kept, before, after_ttl, after_grace

    working, run, done, kept, before, after_ttl, after_grace = in_loop(body)
    assert before == {working.id, done.id, kept.id}
    assert after_ttl == {done.id, kept.id} and working.status == "cancelled" and steering_of(run).stop.is_set()
    assert working.ended.is_set()  # anyone waiting on tasks/result wakes
    assert after_grace == {kept.id}
