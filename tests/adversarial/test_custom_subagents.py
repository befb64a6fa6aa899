"""The user's own sub-agent types, and notebook functions as their tools (issue 16, parts 1 and 2).

The promise: a root agent delegates by name to a type the user defined; that sub-agent runs in a
kernel of its own on the type's LM (not the root's), within the type's step limit, and calls the
type's tools, which run on the host with the notebook's state (a host-side list changes; the
sub-agent sees only the result). The type's tools are offered to it and to nobody else: not the
root, not a sibling of another kind. A raising tool is an ``Error:`` string, an async one is
awaited, an unknown type is an ``Error:`` naming the known ones, and a bad type is refused whole.

Real kernels from a real pool; the models are scripted.
"""

from __future__ import annotations

import asyncio

import pytest

from deepagent_magics import DeepAgent, SubAgentType
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.testing import ScriptedLM

pytestmark = pytest.mark.kernel

HOST_LOG: list = []


def bump(n: int) -> dict:
    """Add n to the host-side tally and return the new total and how many calls there were."""
    HOST_LOG.append(n)
    return {"total": sum(HOST_LOG), "calls": len(HOST_LOG)}


def explode(why: str) -> str:
    """Always fails, saying why."""
    raise RuntimeError(f"boom: {why}")


async def slow_double(x: int) -> int:
    """Double x, asynchronously."""
    await asyncio.sleep(0.01)
    return 2 * x


@pytest.fixture(scope="module")
def pool():
    pool = KernelPool(size=1).warm()
    yield pool
    pool.stop()


@pytest.fixture(autouse=True)
def _clean_log():
    HOST_LOG.clear()
    yield
    HOST_LOG.clear()


def counter_type(lm, **kwargs) -> SubAgentType:
    return SubAgentType(name="counter", description="counts things on the host with bump()",
                        instructions="You count. Call bump(n) for each item.", tools=[bump, explode, slow_double],
                        lm=lm, **kwargs)


def test_root_delegates_to_a_user_type_whose_tool_runs_on_the_host_with_the_types_own_lm(pool, tmp_path):
    root_lm = ScriptedLM(scripts={
        "ROOT": [("Delegate to the counter.", "r = delegate('COUNT-CHILD: count three', agent='counter')\nprint(r)"),
                 ("Done.", "SUBMIT(result=r)")],
    })
    child_lm = ScriptedLM(scripts={
        "COUNT-CHILD": [("Count on the host.",
                         "a = bump(3)\nb = bump(4)\nimport os\n"
                         "seen = {'a': a, 'b': b, 'pid': os.getpid(), 'kind': type(bump).__module__}\nprint(seen)"),
                        ("Report.", "SUBMIT(result=str(seen))")],
    })
    agent = DeepAgent(lm=root_lm, workspace=tmp_path, pool=pool, timeout=60, subagents=[counter_type(child_lm)])
    events: list = []
    run = agent.run("ROOT: count with the counter", namespace={}, listeners=[events.append])
    assert run.status == "finished", run.error
    assert HOST_LOG == [3, 4]  # the function ran on the host, mutating the host's list
    import os
    assert "'total': 7" in run.result and "'calls': 2" in run.result  # its result reached the sub-agent
    assert f"'pid': {os.getpid()}" not in run.result  # the sub-agent's code ran elsewhere (its own kernel)
    assert child_lm.requests and all("COUNT-CHILD" in req["user"] for req in child_lm.requests)
    assert not any("COUNT-CHILD" in req["user"] and "ROOT" not in req["user"] for req in root_lm.requests)
    child = run.steps[0].children[0]
    assert child.profile == "counter" and child.status == "finished"
    calls = [e.data for e in events if e.kind == "tool_call" and e.run is child]
    assert [c["name"] for c in calls if c["name"] == "bump"] == ["bump", "bump"]  # recorded on the sub-agent's run
    root_prompt = root_lm.requests[0]["user"]  # what the run has
    assert "- counter: counts things on the host with bump()" in root_prompt  # the root's prompt lists it
    assert "- coder:" in root_prompt  # and the packaged kinds


def test_type_tools_go_to_that_type_only_errors_are_text_async_is_awaited(pool, tmp_path):
    probe = "print({'bump': 'bump' in globals(), 'explode': 'explode' in globals()})"
    root_lm = ScriptedLM(scripts={
        "ROOT": [("Check my own tools, then delegate.",
                  "mine = {'bump': 'bump' in globals()}\n"
                  "rs = delegate_batched([{'task': 'TYPED: try the tools', 'agent': 'counter'},"
                  " {'task': 'PLAIN: look around'}, {'task': 'NOPE: x', 'agent': 'no_such_type'},"
                  " {'task': 'BOTH: x', 'agent': 'counter', 'profile': 'coder'}])\nprint(mine, rs)"),
                 ("Done.", "SUBMIT(result=repr((mine, rs)))")],
        "PLAIN": [("Look.", probe), ("Done.", "SUBMIT(result=str({'bump': 'bump' in globals()}))")],
    })
    child_lm = ScriptedLM(scripts={
        "TYPED": [("Try them.", "e = explode('on purpose')\nd = slow_double(21)\nprint(e, d)"),
                  ("Report.", "SUBMIT(result=repr((e, d)))")],
    })
    agent = DeepAgent(lm=root_lm, workspace=tmp_path, pool=pool, timeout=60, subagents=[counter_type(child_lm)])
    run = agent.run("ROOT: tools", namespace={})
    assert run.status == "finished", run.error
    mine, results = eval(run.result)  # noqa: S307 - our own repr
    assert mine == {"bump": False}  # the root is not offered the type's tools
    typed, plain, nope, both = results
    assert "Error: explode() raised RuntimeError: boom: on purpose" in typed and "42" in typed
    assert plain == "{'bump': False}"  # a sibling of another kind is not offered them either
    assert nope.startswith("Error: unknown sub-agent type 'no_such_type'") and "counter" in nope and "coder" in nope
    assert both.startswith("Error: give agent='counter' or profile='coder', not both")
    assert all("PLAIN" not in req["user"] for req in child_lm.requests)


def test_hostile_agent_names_are_error_strings(pool, tmp_path):
    """(A name that is not a string never reaches delegation: DSPy checks the tool's argument types.)"""
    names = ["../coder", "Coder", "counter ", "x" * 5000, "coder\x00", "counter/../coder", "__init__"]
    code = ("out = []\nfor n in " + repr(names) + ":\n    out.append(delegate('NAMES: x', agent=n))\n"
            "print(out)")
    root_lm = ScriptedLM(scripts={"ROOT": [("Try names.", code), ("Done.", "SUBMIT(result=repr(out))")]})
    agent = DeepAgent(lm=root_lm, workspace=tmp_path, pool=pool, timeout=60, subagents=[counter_type(None)])
    run = agent.run("ROOT: names", namespace={})
    assert run.status == "finished", run.error
    out = eval(run.result)  # noqa: S307 - our own repr
    assert len(out) == len(names) and all(item.startswith("Error: unknown sub-agent type") for item in out), out
    assert all(len(item) < 400 for item in out)
    assert not run.steps[0].children  # nothing was started


def test_a_typed_sub_agents_own_sub_agents_of_another_kind_do_not_get_its_tools(pool, tmp_path):
    probe = "SUBMIT(result=str('bump' in globals()))"
    root_lm = ScriptedLM(scripts={"ROOT": [("Go.", "r = delegate('TYPED-PARENT: go', agent='counter')"),
                                           ("Done.", "SUBMIT(result=r)")]})
    child_lm = ScriptedLM(scripts={
        "TYPED-PARENT": [("Delegate both ways.", "rs = delegate_batched([{'task': 'GRAND-OTHER: probe', "
                          "'agent': 'default'}, 'GRAND-SAME: probe'])\nprint(rs)"), ("Done.", "SUBMIT(result=repr(rs))")],
        "GRAND-OTHER": [("Probe.", probe)], "GRAND-SAME": [("Probe.", probe)]})
    agent = DeepAgent(lm=root_lm, workspace=tmp_path, pool=pool, timeout=60, max_depth=2,
                      subagents=[counter_type(child_lm)])
    run = agent.run("ROOT: nest", namespace={})
    assert run.status == "finished", run.error
    assert eval(run.result) == ["False", "True"]  # noqa: S307 - another kind: no; its own kind again: yes
    assert all("PLAIN" not in req["user"] for req in child_lm.requests)  # a plain child uses the root's LM


def test_a_types_max_iters_bounds_its_loop(pool, tmp_path):
    root_lm = ScriptedLM(scripts={"ROOT": [("Go.", "r = delegate('LOOPER: spin', agent='counter')"),
                                           ("Done.", "SUBMIT(result=r)")]},
                         replies="(extracted)")
    child_lm = ScriptedLM(scripts={"LOOPER": [("Spin.", "print('spin')")] * 10}, replies="(extracted)")
    agent = DeepAgent(lm=root_lm, workspace=tmp_path, pool=pool, timeout=60, subagent_max_iters=8,
                      subagents=[counter_type(child_lm, max_iters=2)])
    run = agent.run("ROOT: bounded", namespace={})
    child = run.steps[0].children[0]
    assert len(child.steps) == 2, [s.code for s in child.steps]


def read_file(path: str) -> str:
    """A user function that would shadow the workspace tool."""
    return path


def task() -> str:
    """Would shadow the agent's task input."""
    return ""


def _private() -> str:
    """Private."""
    return ""


BAD_TYPES = [
    (dict(name="not an id"), "is not an identifier"),
    (dict(name="9lives"), "is not an identifier"),
    (dict(name="class"), "is not an identifier"),
    (dict(name="coder"), "is a packaged profile"),
    (dict(name="reviewer"), "is a packaged profile"),
    (dict(description="  "), "needs a description"),
    (dict(description="x" * 400), "keep it to one line"),
    (dict(instructions=""), "needs instructions"),
    (dict(tools=[lambda n: n]), "has no usable name"),
    (dict(tools=["bump"]), "is not callable"),
    (dict(tools="bump"), "tools must be a list"),
    (dict(tools=[bump, bump]), "two tools named 'bump'"),
    (dict(max_iters=0), "max_iters must be a positive integer"),
    (dict(max_iters=True), "max_iters must be a positive integer"),
    (dict(lm=42), "lm must be an LM or a model id"),
    (dict(lm="nomodel"), "is not a model id"),
    (dict(tools=[read_file]), "built-in tool's or the REPL's own name"),
    (dict(tools=[task]), "built-in tool's or the REPL's own name"),
    (dict(tools=[_private]), "may not start with '_'"),
]


def undocumented(x):
    return x


@pytest.mark.parametrize("change,message", BAD_TYPES + [(dict(tools=[undocumented]), "has no docstring")])
def test_a_bad_type_is_refused_in_one_line(change, message):
    kwargs = dict(name="counter", description="counts", instructions="Count.", tools=[bump]) | change
    with pytest.raises(ValueError) as info:
        SubAgentType(**kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_two_types_with_one_name_or_a_non_type_are_refused():
    kind = SubAgentType(name="counter", description="counts", instructions="Count.")
    with pytest.raises(ValueError, match="two types named 'counter'"):
        DeepAgent(lm=ScriptedLM([]), subagents=[kind, kind])
    with pytest.raises(ValueError, match="is not a SubAgentType"):
        DeepAgent(lm=ScriptedLM([]), subagents=[{"name": "counter"}])
