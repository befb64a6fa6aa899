"""The runtime checks inside a sub-agent's kernel (issue 22, item 1): the same hook, asking the host.

A root `DeepAgent` in this process delegates to a sub-agent in a real kernel from a `KernelPool`.
The kernel runs the same audit hook (`runtime_checks.hook`, shipped as source); a risky action
there is asked on the host through the kernel's stdin bridge (`kernel_bridge.ToolBridge._approve`),
to the root's one approval policy, labelled with the sub-agent, with the path resolved in the
kernel. A refusal raises ``PermissionError`` in the sub-agent's code and nothing happens.
"""

from __future__ import annotations

import os

import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.testing import ScriptedLM
from tests.adversarial.runtime_cases import CASES, Places

pytestmark = pytest.mark.kernel
PICKED = ["join_expanduser", "path_open_w", "path_rename", "kept_subprocess_run", "kept_connect", "pool_write"]


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    """The places (their environment set before the kernels start: they inherit it) and a pool."""
    places = Places(tmp_path_factory.mktemp("kernel-ws"), tmp_path_factory.mktemp("kernel-outside"))
    saved = {name: os.environ.get(name) for name in places.environ()}
    os.environ.update(places.environ())
    pool = KernelPool(size=1).warm()
    yield places, pool
    pool.stop()
    places.close()
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


class Policy:
    def __init__(self):
        self.proposals: list = []

    def __call__(self, proposal):
        self.proposals.append(proposal)
        return "n not from a sub-agent" if proposal.action else "y"


def delegate(places, pool, child_steps, policy):
    root = [("Delegate.", "print(delegate('CHILD: do it'))"), ("Done.", "SUBMIT(result='done')")]
    child = [*child_steps, ("Done.", "SUBMIT(result='child done')")]
    lm = ScriptedLM(scripts={"ROOT": root, "CHILD": child})
    return DeepAgent(lm=lm, workspace=places.workspace, pool=pool, approve=policy, timeout=60).run(
        "ROOT: delegate", namespace={})


@pytest.mark.parametrize("case", [case for case in CASES if case.name in PICKED], ids=lambda case: case.name)
def test_a_subagents_risky_action_is_asked_on_the_host_with_its_target(setting, case):
    places, pool = setting
    before = places.state()
    policy = Policy()
    steps = ([("Set up.", places.fill(case.setup))] if case.setup else []) + [("Act.", places.fill(case.code))]
    run = delegate(places, pool, steps, policy)
    asked = [p for p in policy.proposals if p.action]
    expected = places.fill(case.asks)
    assert any(expected in p.action for p in asked), (expected, [p.action for p in policy.proposals])
    assert all(p.agent.startswith("sub-agent ") and p.depth == 1 for p in asked)
    assert places.state() == before
    (child,) = run.children
    assert any(e.get("action") and e["decision"] == "refused" for e in child.approvals)
    assert "PermissionError" in " ".join(step.output for step in child.steps)
