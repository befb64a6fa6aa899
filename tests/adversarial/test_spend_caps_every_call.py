"""Spend caps hold every LM call of the tree, however it is made (issue 22, item 2).

Two doors leaked: a ``dspy.ReAct`` built through DSPy's sandbox facade was admitted once and then
ran to ``max_llm_calls`` (3.4x a ``--max-tokens`` cap here, 6.3x in the review), and ``lm()`` calls
the root agent's code makes from a thread pool were neither checked nor counted. Every scripted call
reports 100 tokens; with a cap of 1,000 tokens exactly the calls that fit start (the last one may
cross it: at most one call's worth over), then the root's one final answer (RLM's extract).
"""

from __future__ import annotations

import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.testing import ScriptedLM

STEP, CAP = 100, 1_000
REACT = """
import dspy
agent = dspy.ReAct('question -> answer', tools=[read_todos], max_iters=30)
try:
    print(agent(question='Q-REACT loop').answer)
except Exception as exc:
    print('stopped:', type(exc).__name__, exc)
"""


def react_replies(prompt: str):
    if "next_tool_name" in prompt:  # ReAct's loop: always another tool call, never finish
        return {"next_thought": "again", "next_tool_name": "read_todos", "next_tool_args": {}}
    return {"reasoning": "r", "answer": "a"}


def spent_before_the_final_answer(run) -> int:
    return run.tree_usage().tokens - (STEP if run.config.get("spend", {}).get("final_answer") else 0)


@pytest.mark.kernel
def test_a_react_a_subagent_builds_through_the_facade_is_admitted_call_by_call(tmp_path):
    from deepagent_magics.interpreters.pool import KernelPool

    root = [("Delegate.", "print(delegate('CHILD: react'))"), ("Done.", "SUBMIT(result='done')")]
    child = [("React.", REACT), ("Done.", "SUBMIT(result='child done')")]
    lm = ScriptedLM(scripts={"ROOT": root, "CHILD": child}, replies=react_replies, tokens=(STEP, 0))
    pool = KernelPool(size=1).warm()
    try:
        run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, max_tokens=CAP, timeout=60).run("ROOT: go", namespace={})
    finally:
        pool.stop()
    assert spent_before_the_final_answer(run) == CAP  # root step, child step, eight ReAct calls: no more
    (child_run,) = run.children
    assert child_run.status == "budget_exhausted" and "CapReached" in child_run.steps[0].output
    assert "token cap is reached" in run.config["spend"]["reached"]


def test_a_react_the_root_builds_through_the_facade_is_admitted_call_by_call(tmp_path):
    lm = ScriptedLM([("React.", REACT), ("Done.", "SUBMIT(result='done')")], replies=react_replies, tokens=(STEP, 0))
    run = DeepAgent(lm=lm, workspace=tmp_path, max_tokens=CAP).run("react", namespace={})
    assert spent_before_the_final_answer(run) == CAP
    assert "stopped: CapReached" in run.steps[0].output and len(run.steps) == 1


POOL = """
from concurrent.futures import ThreadPoolExecutor
def ask(i):
    try:
        return the_lm(f'direct {i}')[0]
    except Exception as exc:
        return type(exc).__name__
with ThreadPoolExecutor(4) as pool:
    answers = list(pool.map(ask, range(20)))
print(answers.count('CapReached'), 'refused of', len(answers))
"""


def test_direct_lm_calls_from_a_thread_pool_in_the_roots_code_are_checked_and_counted(tmp_path):
    lm = ScriptedLM([("Fan out.", POOL), ("Never.", "never = 1")], replies="r", tokens=(STEP, 0), latency=0.05)
    namespace = {"the_lm": lm}
    run = DeepAgent(lm=lm, workspace=tmp_path, max_tokens=CAP).run("fan out", namespace=namespace)
    assert spent_before_the_final_answer(run) <= CAP + STEP  # at most one call's worth over
    assert run.tree_usage().lm_calls == 1 + 9 + 1 and run.steps[0].output == "11 refused of 20"
    assert "never" not in namespace and "token cap is reached" in run.config["spend"]["reached"]


def test_direct_lm_calls_through_asyncio_in_a_thread_of_the_agents_are_checked_and_counted(tmp_path):
    code = ("import asyncio, threading\nresults = []\ndef go():\n    async def calls():\n"
            "        for i in range(15):\n            try:\n                await asyncio.to_thread(the_lm, f'a{i}')\n"
            "                results.append('ok')\n            except Exception as exc:\n"
            "                results.append(type(exc).__name__)\n    asyncio.run(calls())\n"
            "t = threading.Thread(target=go)\nt.start()\nt.join()\nprint(results.count('ok'))")
    lm = ScriptedLM([("Async.", code), ("Never.", "never = 1")], replies="r", tokens=(STEP, 0))
    run = DeepAgent(lm=lm, workspace=tmp_path, max_tokens=CAP).run("async", namespace={"the_lm": lm})
    assert run.steps[0].output == "9" and spent_before_the_final_answer(run) == CAP


def test_the_users_own_lm_calls_while_no_run_is_live_are_not_touched(tmp_path):
    lm = ScriptedLM([("Done.", "SUBMIT(result='done')")], replies="r", tokens=(STEP, 0))
    DeepAgent(lm=lm, workspace=tmp_path, max_tokens=150).run("one step", namespace={})
    assert [lm(f"mine {i}")[0] for i in range(5)] == ["r"] * 5  # far past the run's cap: not the run's calls
