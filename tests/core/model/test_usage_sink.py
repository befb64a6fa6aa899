"""core/model/usage_sink.py: every LM call's usage reaches the run that made it, and a long run's history stays small.

That DSPy still hands the sink the same entry objects it keeps globally is checked by
``tests/core/test_dspy_contract.py``.
"""

from __future__ import annotations

import threading

import dspy
import pytest

from deepagent_magics.core.model.usage_sink import (HEAVY_FIELDS, KEEP_FULL, TRIMMED, UsageSink, counted, counting,
                                                    strip_entry)
from deepagent_magics.core.policy.spend import SpendBudget
from deepagent_magics.core.run.event_kinds import LM_USAGE
from deepagent_magics.core.run.run import Run
from deepagent_magics.testing import ScriptedLM


def entry(n: int = 0, usage: dict | None = None) -> dict:
    return {"model": "openai/gpt-x", "usage": usage or {"prompt_tokens": 10, "completion_tokens": 5},
            "cost": 0.01, "messages": [{"role": "user", "content": f"prompt {n}"}], "prompt": None,
            "response": object(), "outputs": [f"reply {n}"], "request": {"n": n}, "timestamp": n}


def test_an_entry_is_counted_on_the_run_and_announced():
    run = Run("t")
    events = []
    run.subscribe(lambda event: events.append(event) if event.kind == LM_USAGE else None)
    UsageSink(run).history.append(entry(usage={"prompt_tokens": 100, "completion_tokens": 20,
                                               "prompt_tokens_details": {"cached_tokens": 40}}))
    assert (run.usage.lm_calls, run.usage.input_tokens, run.usage.output_tokens) == (1, 100, 20)
    assert run.usage.cost == pytest.approx(0.01) and run.usage.cached_input_tokens == 40
    assert [e.data for e in events] == [{"model": "openai/gpt-x", "input_tokens": 100, "output_tokens": 20,
                                         "cost": 0.01, "cached_tokens": 40}]


def test_input_and_output_token_names_of_either_style_are_read():
    run = Run("t")
    UsageSink(run).history.append(entry(usage={"input_tokens": 7, "output_tokens": 3}))
    assert (run.usage.input_tokens, run.usage.output_tokens) == (7, 3)


@pytest.mark.parametrize("cost", [None, "lots", float("nan"), -1.0, True])
def test_a_cost_that_cannot_count_is_recorded_as_unpriced(cost):
    run = Run("t")
    UsageSink(run).history.append({**entry(), "cost": cost})
    assert run.usage.unpriced_calls == 1 and run.usage.cost is None


def test_an_entry_with_no_usage_counts_a_call_of_no_tokens():
    run = Run("t")
    UsageSink(run).history.append({"model": None})
    assert (run.usage.lm_calls, run.usage.input_tokens, run.usage.output_tokens) == (1, 0, 0)


def test_the_trees_spend_budget_counts_each_call():
    run = Run("t")
    run.spend = SpendBudget(max_tokens=1000, run=run)
    sink = UsageSink(run).history
    sink.append(entry())
    sink.append(entry())
    assert (run.spend.calls, run.spend.tokens) == (2, 30) and run.spend.cost == pytest.approx(0.02)


def test_the_sink_keeps_nothing():
    sink = UsageSink(Run("t")).history
    sink.append(entry())
    assert len(sink) == 0 and list(sink) == [] and sink.pop() is None


def test_entries_older_than_the_newest_few_lose_their_prompt_and_reply_but_keep_their_usage():
    sink = UsageSink(Run("t")).history
    entries = [entry(n) for n in range(KEEP_FULL + 2)]
    for each in entries:
        sink.append(each)
    old, kept = entries[:2], entries[2:]
    for each in old:
        assert each["prompt"] == TRIMMED and each["outputs"] == [TRIMMED]
        assert each["messages"] is None and each["response"] is None and each["request"] is None
        assert each["usage"] == {"prompt_tokens": 10, "completion_tokens": 5} and each["cost"] == 0.01
        assert each["model"] == "openai/gpt-x" and "timestamp" in each
    for n, each in enumerate(kept, start=2):
        assert each["messages"] == [{"role": "user", "content": f"prompt {n}"}] and each["outputs"] == [f"reply {n}"]


def test_strip_entry_sets_only_the_heavy_fields_that_are_there():
    one = {"messages": ["m"], "usage": {"prompt_tokens": 1}}
    strip_entry(one)
    assert one == {"messages": None, "usage": {"prompt_tokens": 1}, "prompt": TRIMMED, "outputs": [TRIMMED]}
    assert set(HEAVY_FIELDS) >= {"messages", "prompt", "response", "outputs"}


def test_calls_from_several_threads_are_all_counted_and_all_old_entries_trimmed():
    run = Run("t")
    sink = UsageSink(run).history
    entries = [entry(n) for n in range(200)]
    threads = [threading.Thread(target=lambda part=entries[i::8]: [sink.append(e) for e in part]) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert run.usage.lm_calls == 200
    assert sum(e["prompt"] != TRIMMED for e in entries) == KEEP_FULL


def test_counted_says_whether_this_threads_settings_count_calls_on_a_run():
    assert not counted()
    with dspy.context(caller_modules=[UsageSink(Run("t"))]):
        assert counted()
    assert not counted()


def test_counting_adds_a_sink_for_the_run_and_keeps_the_modules_already_there():
    other = object()
    run = Run("t")
    with dspy.context(caller_modules=[other]):
        with counting(run):
            modules = dspy.settings.caller_modules
            assert modules[0] is other and isinstance(modules[1], UsageSink) and modules[1].history.run is run
            assert counted()
        assert dspy.settings.caller_modules == [other]


def test_a_real_lm_call_inside_counting_reaches_the_run():
    run = Run("t")
    lm = ScriptedLM(replies="hello", tokens=(12, 3), cost=0.5)
    with counting(run):
        lm("a question")
    assert (run.usage.lm_calls, run.usage.input_tokens, run.usage.output_tokens) == (1, 12, 3)
    assert run.usage.cost == pytest.approx(0.5)
