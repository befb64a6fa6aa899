"""Spend caps hold for the whole tree (issue 11, part 3): no LM call starts once a cap is reached.

A scripted LM reports fixed usage (and cost) per call, so every count here is exact: with calls of
100 tokens and a cap of 350 tokens, exactly four calls start (0, 100, 200, 300 spent before each),
then the root agent's one final answer (RLM's extract). Under concurrency (threads, four
sub-agents in ``delegate_batched``) the same number of calls starts as if they had asked in turn.
Bad caps are one line, before anything runs.
"""

from __future__ import annotations

import math
import threading
import time

import pytest
from IPython.core.error import UsageError

from deepagent_magics import DeepAgent
from deepagent_magics.core.policy.spend import CapReached, SpendBudget, check_cap
from deepagent_magics.testing import ScriptedLM

STEP = 100  # tokens every scripted call reports


def counting_steps(n: int) -> list:
    return [(f"Step {i}.", f"made_{i} = {i}\nprint('step {i}')") for i in range(1, n + 1)]


def agent(lm, tmp_path, **caps) -> DeepAgent:
    return DeepAgent(lm=lm, workspace=tmp_path, max_iters=12, **caps)


# --------------------------------------------------------------------------- the root alone
def test_a_token_cap_stops_the_loop_and_the_agent_answers_once_from_what_it_has(tmp_path):
    lm = ScriptedLM(counting_steps(10), replies="Partial answer: four steps done.", tokens=(STEP, 0))
    namespace: dict = {}
    run = agent(lm, tmp_path, max_tokens=350).run("count", namespace=namespace)
    assert len(run.steps) == 4  # 0, 100, 200, 300 < 350: four steps start; the fifth does not
    assert run.usage.lm_calls == 5  # and one final answer (extract)
    assert run.status == "finished" and run.result == "Partial answer: four steps done."
    assert "token cap is reached" in run.config["spend"]["reached"]
    assert [namespace[f"made_{i}"] for i in range(1, 5)] == [1, 2, 3, 4]  # variables kept
    assert "made_5" not in namespace
    final_request = lm.requests[-1]["user"]
    assert "step 4" in final_request  # the final answer saw the last step's output


def test_a_cost_cap_counts_the_cost_the_provider_reports(tmp_path):
    lm = ScriptedLM(counting_steps(10), replies="", tokens=(1, 1), cost=0.01)
    run = agent(lm, tmp_path, max_cost=0.025).run("count", namespace={})
    assert len(run.steps) == 3  # $0, $0.01, $0.02 < $0.025
    assert run.status == "budget_exhausted"  # the final answer was empty: nothing answered
    assert "cost cap is reached" in run.error
    assert run.usage.cost == pytest.approx(0.04)


def test_an_agent_that_answers_on_the_last_allowed_step_is_finished_without_another_call(tmp_path):
    steps = counting_steps(2) + [("Answer.", "SUBMIT(result='done in three')")]
    lm = ScriptedLM(steps, tokens=(STEP, 0))
    run = agent(lm, tmp_path, max_tokens=300).run("count", namespace={})
    assert run.status == "finished" and run.result == "done in three"
    assert run.usage.lm_calls == 3 and "spend" not in run.config


def test_the_files_the_agent_wrote_are_kept_when_the_cap_stops_it(tmp_path):
    steps = [("Write.", "write_file('notes.md', 'kept')")] + counting_steps(5)
    lm = ScriptedLM(steps, replies="", tokens=(STEP, 0))
    run = agent(lm, tmp_path, max_tokens=150).run("write", namespace={})
    assert run.status == "budget_exhausted"
    assert (tmp_path / "notes.md").read_text() == "kept" and run.files_written == ["notes.md"]


def test_llm_query_is_refused_inside_a_step_once_the_cap_is_reached(tmp_path):
    code = "out = []\nfor i in range(4):\n    out.append(llm_query(f'q{i}'))\nprint('never')"
    lm = ScriptedLM([("Ask four times.", code)] + counting_steps(3), replies="", tokens=(STEP, 0))
    run = agent(lm, tmp_path, max_tokens=250).run("ask", namespace={})
    assert run.usage.lm_calls == 4  # the step (100), two llm_query calls (200), the final answer
    assert "spend cap" in run.steps[0].output and "never" not in run.steps[0].output
    assert run.status == "budget_exhausted" and len(run.steps) == 1


def test_llm_query_batched_is_admitted_or_refused_whole(tmp_path):
    code = "print(len(llm_query_batched(['a', 'b', 'c'])))\nprint(llm_query_batched(['d', 'e']))"
    lm = ScriptedLM([("Batch.", code)], replies="r", tokens=(STEP, 0))
    run = agent(lm, tmp_path, max_tokens=350).run("batch", namespace={})
    # step (100) then the batch of 3 fits; 400 spent: the second batch never starts
    assert "spend cap: the token cap is reached: 400 of 350 tokens" in run.steps[0].output
    assert run.usage.lm_calls == 4 + 1


def test_a_time_cap_ends_the_run_and_time_waiting_for_the_user_does_not_count(tmp_path):
    slow = [("Slow.", "import time\ntime.sleep(0.6)\nprint('slept')")] * 4
    run = agent(ScriptedLM(slow, replies=""), tmp_path, max_time=0.5).run("slow", namespace={})
    assert run.status == "budget_exhausted" and "time cap" in run.error and len(run.steps) == 1

    # the same steps, but the run spent its sleeps waiting for the user's approval (the approval
    # code's counter): not time spent, so all four steps run
    waiting = [("Wait.", "import time\nthe_run.waited_seconds = getattr(the_run, 'waited_seconds', 0) + 0.6\n"
                         f"time.sleep(0.6)\nprint('waited', {n})") for n in range(4)]  # not one step 4 times: a stall
    namespace: dict = {}
    run = agent(ScriptedLM(waiting, replies=""), tmp_path, max_time=0.5).run(
        "slow", namespace=namespace, run=_run_in(namespace))
    assert len(run.steps) == 5 and run.status == "finished", run.error  # four, then the script's end


def _run_in(namespace: dict):
    from deepagent_magics.core.run.run import Run

    run = namespace["the_run"] = Run("slow")
    return run


def test_no_cap_reached_means_nothing_changes(tmp_path):
    lm = ScriptedLM(counting_steps(3) + [("Done.", "SUBMIT(result='ok')")], tokens=(STEP, 0), cost=0.5)
    run = agent(lm, tmp_path, max_tokens=10_000, max_cost=100, max_time=600).run("count", namespace={})
    assert run.status == "finished" and run.result == "ok" and run.usage.lm_calls == 4


# --------------------------------------------------------------------------- a provider that reports no cost
def test_a_provider_that_reports_no_cost_gets_a_warning_and_the_token_cap_still_holds(tmp_path):
    lm = ScriptedLM(counting_steps(10), replies="", tokens=(STEP, 0))  # cost: None, as a custom engine's
    run = agent(lm, tmp_path, max_cost=0.001, max_tokens=300).run("count", namespace={})
    assert len(run.steps) == 3 and "token cap" in run.error
    assert run.config["spend"]["unknown_cost_calls"] == 4
    [warning] = run.config["spend_warnings"]
    assert "reported no cost" in warning and "--max-tokens" in warning


# --------------------------------------------------------------------------- exact under concurrency
def test_concurrent_callers_start_exactly_the_calls_that_fit(tmp_path):
    budget = SpendBudget(max_tokens=1_000)
    budget.add(STEP, None)  # the tree's first call (the root's first step) taught it what a call costs
    started, refused = [], []
    gate = threading.Barrier(8)

    def caller() -> None:
        gate.wait()
        for _ in range(10):
            try:
                with budget.calls_allowed():
                    started.append(1)
                    time.sleep(0.01)  # the call is in flight while the others ask
                    budget.add(STEP, None)
            except CapReached:
                refused.append(1)
                return

    threads = [threading.Thread(target=caller) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(started) == 9  # 100 spent + 9 x 100 = 1,000: exactly what serial callers would start
    assert budget.tokens == 1_000 and len(refused) == 8


@pytest.mark.kernel
def test_a_cap_reached_in_the_middle_of_delegate_batched_with_four_children(tmp_path):
    from deepagent_magics.interpreters.pool import KernelPool

    children = {f"CHILD-{c}": counting_steps(6) for c in "ABCD"}
    root = [("Fan out.", "rs = delegate_batched(['CHILD-A: count', 'CHILD-B: count', 'CHILD-C: count', "
                         "'CHILD-D: count'])\nprint(rs)")] + counting_steps(3)
    lm = ScriptedLM(scripts={"ROOT": root, **children}, replies="Answer from what the children found.",
                    tokens=(STEP, 0), latency=0.3)  # the children's calls are in flight together
    pool = KernelPool(size=2).warm()
    try:
        run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, max_tokens=1_000, timeout=60).run(
            "ROOT: fan out", namespace={})
    finally:
        pool.stop()
    tree = run.tree_usage()
    assert tree.lm_calls == 10 + 1  # exactly 1,000 tokens' worth of calls start, then the final answer
    assert tree.input_tokens == 1_100
    assert len(run.children) == 4
    assert all(child.status in ("budget_exhausted", "finished") for child in run.children)
    assert sum(child.status == "budget_exhausted" for child in run.children) >= 1
    assert len(run.steps) == 1  # the root's second step never started
    assert run.status == "finished" and run.result == "Answer from what the children found."
    assert "budget_exhausted" in run.steps[0].output or "spend cap" in run.steps[0].output


# --------------------------------------------------------------------------- bad caps
BAD = [float("nan"), 0, -1, "abc", float("inf"), "", True, [1], "-5", "1e400"]


@pytest.mark.parametrize("value", BAD, ids=repr)
@pytest.mark.parametrize("name", ["max_cost", "max_tokens", "max_time"])
def test_a_bad_cap_is_one_line_in_the_api(name, value, tmp_path):
    with pytest.raises(ValueError) as info:
        DeepAgent(lm=ScriptedLM([]), workspace=tmp_path, **{name: value})
    message = str(info.value)
    assert "\n" not in message and f"--{name.replace('_', '-')}" in message


def test_a_fractional_token_cap_is_refused_and_a_numeric_string_is_read():
    with pytest.raises(ValueError):
        check_cap("max_tokens", 1.5)
    assert check_cap("max_tokens", "2000") == 2000 and check_cap("max_cost", "$0.50") == 0.5
    assert check_cap("max_time", 30) == 30.0 and check_cap("max_cost", None) is None


@pytest.mark.parametrize("flag", ["--max-cost nan", "--max-cost 0", "--max-tokens -1", "--max-time abc",
                                  "--max-cost inf", "--max-tokens 1.5", "--max-time 0"])
def test_a_bad_cap_on_the_magic_is_one_usage_error_and_nothing_runs(ip, flag):
    lm = ip.user_ns["lm"] = ScriptedLM([("Never.", "ran = True\nSUBMIT(result='ran')")])
    with pytest.raises(UsageError) as info:
        ip.run_cell_magic("deepagent", f"--lm lm {flag}", "task")
    assert type(info.value) is UsageError and "\n" not in str(info.value)
    with pytest.raises(UsageError):
        ip.run_line_magic("deepagent_config", flag)
    assert lm.requests == [] and "ran" not in ip.user_ns


def test_caps_on_the_magic_and_in_the_config_reach_the_run(ip):
    ip.user_ns["lm"] = ScriptedLM(counting_steps(10), replies="", tokens=(STEP, 0))
    ip.run_line_magic("deepagent_config", "--max-tokens 250")
    ip.run_cell_magic("deepagent", "--lm lm --max-time 600", "task")
    run = ip.user_ns["_deepagent_run"]
    assert run.status == "budget_exhausted" and len(run.steps) == 3
    assert run.config["max_tokens"] == 250 and run.config["max_time"] == 600
    ip.run_line_magic("config", "DeepAgentMagics.max_cost = float('nan')")
    with pytest.raises(UsageError):
        ip.run_cell_magic("deepagent", "--lm lm", "task")
    assert math.isnan(ip.magics_manager.registry["DeepAgentMagics"].max_cost)
    assert ip.user_ns["_deepagent_run"] is run  # the refused cell started no run


def test_a_predictor_the_agent_builds_with_dspy_is_refused_once_the_cap_is_reached(tmp_path):
    code = ("qa = dspy.Predict('question -> answer')\nfor i in range(3):\n"
            "    print(qa(question=f'q{i}').answer)\nprint('never')")
    lm = ScriptedLM([("Build a predictor.", code)] + counting_steps(2), replies={"answer": "a"}, tokens=(STEP, 0))
    run = agent(lm, tmp_path, max_tokens=250).run("predict", namespace={})
    assert "spend cap" in run.steps[0].output and "never" not in run.steps[0].output
    assert run.tree_usage().lm_calls == 3 + 1  # the step, two predictions, the final answer


def test_the_status_line_shows_spend_against_each_cap_while_it_runs(tmp_path):
    from deepagent_magics.core.run.run import STEP_FINISHED
    from deepagent_magics.display.markup import status_line
    from deepagent_magics.display.text import summary

    lines = []
    lm = ScriptedLM(counting_steps(3) + [("Done.", "SUBMIT(result='ok')")], tokens=(STEP, 0), cost=0.01)
    run = agent(lm, tmp_path, max_tokens=10_000, max_cost=1, max_time=600).run(
        "count", namespace={}, listeners=[lambda e: lines.append(status_line(e.run)) if e.kind == STEP_FINISHED else None])
    assert "caps: 200/10,000 tokens · $0.0200/$1 · " in lines[1] and "/600 s" in lines[1]
    assert "caps: 400/10,000 tokens" in summary(run)


@pytest.mark.parametrize("cost", [float("nan"), -1.0, float("inf"), "lots", True])
def test_a_provider_reporting_a_nonsense_cost_cannot_switch_the_caps_off(tmp_path, cost):
    lm = ScriptedLM(counting_steps(10), replies="", tokens=(STEP, 0), cost=lambda entry: cost)
    run = agent(lm, tmp_path, max_cost=0.5, max_tokens=300).run("count", namespace={})
    assert len(run.steps) == 3 and "token cap" in run.error  # tokens still hold
    spend = run.config["spend"]
    assert spend["cost"] == 0 and spend["unknown_cost_calls"] == 4 and run.config["spend_warnings"]


def test_nonsense_token_counts_count_nothing():
    budget = SpendBudget(max_tokens=300)
    for tokens in (-10_000, float("nan"), float("inf"), "junk", None):
        budget.add(tokens, 0.0)
    assert budget.tokens == 0 and budget.calls == 5
    budget.add(300, 0.0)
    with pytest.raises(CapReached):
        budget.admit()


def test_lm_calls_the_agent_makes_around_the_tools_are_checked_and_counted(tmp_path):
    # Root code runs with the user's powers (docs/safety.md) and can call an LM object directly: each such
    # call is admitted on its own (runtime_checks/lm_calls), counted, and the one that would not fit raises.
    code = ("import importlib\nreal = importlib.import_module('dspy')\nfor i in range(3):\n    real.settings.lm(f'q{i}')\n"
            "print('never')")
    lm = ScriptedLM([("Go around llm_query.", code)] + counting_steps(3), replies="", tokens=(STEP, 0))
    run = agent(lm, tmp_path, max_tokens=250).run("around", namespace={})
    assert run.tree_usage().tokens == 300 + 100 and len(run.steps) == 1  # the step, two direct calls, the answer
    assert "spend cap" in run.steps[0].output and "never" not in run.steps[0].output
    assert "token cap" in run.error


def test_a_thread_with_a_call_in_flight_that_asks_again_does_not_wait_for_itself():
    budget = SpendBudget(max_tokens=250)
    budget.add(STEP, None)
    budget.add(STEP, None)  # 200 spent; a call in flight reserves 100: nothing more fits until it returns
    done = threading.Event()

    def nested() -> None:
        with budget.calls_allowed():  # e.g. a sandbox-built predictor...
            try:
                with budget.calls_allowed():  # ...that calls llm_query: decided now, not after itself
                    pass
            except CapReached:
                pass
        done.set()

    worker = threading.Thread(target=nested, daemon=True)
    worker.start()
    assert done.wait(5), "the thread waited for its own call in flight"


def test_a_configured_cap_is_removed_with_off_and_a_refused_one_does_not_stick(ip):
    magics = ip.magics_manager.registry["DeepAgentMagics"]
    ip.run_line_magic("deepagent_config", "--max-cost 1.5 --max-time 60")
    assert magics.max_cost == 1.5 and magics.max_time == 60
    with pytest.raises(UsageError):
        ip.run_line_magic("deepagent_config", "--max-time 30 --max-cost -2")
    assert magics.max_cost == 1.5 and magics.max_time == 60  # neither value of the refused line stuck
    ip.run_line_magic("deepagent_config", "--max-cost off")
    assert magics.max_cost is None and magics.max_time == 60


@pytest.mark.kernel
def test_a_sub_agents_llm_query_in_its_kernel_is_refused_once_the_trees_cap_is_reached(tmp_path):
    from deepagent_magics.interpreters.pool import KernelPool

    child = [("Ask.", "out = []\nfor i in range(5):\n    out.append(llm_query(f'q{i}'))\nprint('never')")]
    root = [("Delegate.", "print(delegate('KID: ask five times'))")] + counting_steps(2)
    lm = ScriptedLM(scripts={"ROOT": root, "KID": child}, replies="", tokens=(STEP, 0))
    pool = KernelPool(size=1).warm()
    try:
        run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, max_tokens=450, timeout=60).run(
            "ROOT: delegate", namespace={})
    finally:
        pool.stop()
    [kid] = run.children
    assert "spend cap" in kid.steps[0].output and "never" not in kid.steps[0].output
    assert kid.usage.lm_calls == 1 + 3  # its step, then llm_query at 200, 300, 400 spent; at 500 refused
    assert kid.status == "budget_exhausted" and run.status == "budget_exhausted"
    assert run.tree_usage().lm_calls == 1 + 4 + 1  # the root's step, the kid's four, the final answer
