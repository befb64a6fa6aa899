"""Sub-agents in kernels of their own: isolation, nesting, parallelism, limits, faults, interrupts.

Every agent here is a real DeepAgent on dspy.RLM; each sub-agent runs in a real kernel from a real
KernelPool. The model is a ScriptedLM whose scripts are keyed by a fragment of each agent's task.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import dspy
import psutil
import pytest
from dspy.utils.callback import BaseCallback

from deepagent_magics import DeepAgent
from deepagent_magics.tools.delegation import parse_verdict
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.testing import ScriptedLM

pytestmark = pytest.mark.kernel


@pytest.fixture(scope="module")
def pool():
    pool = KernelPool(size=2).warm()
    yield pool
    pool.stop()
    assert pool.pids() == []


def make_agent(lm, workspace, pool, **kwargs) -> DeepAgent:
    kwargs.setdefault("timeout", 60)
    return DeepAgent(lm=lm, workspace=workspace, pool=pool, **kwargs)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def all_runs(run):
    for child in run.children:
        yield child
        yield from all_runs(child)


# --------------------------------------------------------------------------- isolation
def test_a_sub_agent_sees_none_of_its_parents_variables_but_shares_the_workspace(pool, tmp_path):
    lm = ScriptedLM(scripts={
        "ISOLATION-PARENT": [
            ("Delegate.", "secret = 42\nwrite_file('from_parent.txt', 'parent was here')\n"
                          "answer = delegate('ISOLATION-CHILD: look around', context='a hint')\nprint(answer)"),
            ("Read the child's file.", "print(read_file('from_child.txt'))"),
            ("Done.", "SUBMIT(result=answer)"),
        ],
        "ISOLATION-CHILD": [
            ("Look.", "import json, os\ntry:\n    secret\n    seen = 'visible'\nexcept NameError as exc:\n"
                      "    seen = f'NameError: {exc}'\nparent_file = open('from_parent.txt').read()\n"
                      "write_file('from_child.txt', 'child was here')\nprint(seen, context)"),
            ("Report.", "SUBMIT(result=json.dumps({'seen': seen, 'pid': os.getpid(), 'parent_file': parent_file}))"),
        ],
    })
    run = make_agent(lm, tmp_path, pool).run("ISOLATION-PARENT: check the boundary")

    assert run.status == "finished", run.error
    report = json.loads(run.result)
    assert report["seen"] == "NameError: name 'secret' is not defined"
    assert report["pid"] != os.getpid()
    assert report["parent_file"] == "parent was here"
    assert "child was here" in run.steps[1].output, run.trajectory

    [child] = run.steps[0].children  # nested under the step that spawned it
    assert child.status == "finished" and child.depth == 1 and child.parent_step == 1
    assert [step.output for step in child.steps][0] == "NameError: name 'secret' is not defined a hint"
    assert child.usage.lm_calls == 2 and run.usage.lm_calls == 3  # each run counts its own LM calls
    assert run.steps[0].started_at <= child.started_at <= child.ended_at <= run.steps[0].ended_at
    assert run.trajectory[0]["children"][0]["steps"][1]["output"].startswith("SUBMIT(")
    assert child.config["max_iters"] == 10  # sub-agents get fewer iterations than the root (20)
    assert "Jupyter kernel of your own" in [r for r in lm.requests if "ISOLATION-CHILD" in r["user"]][0]["system"]


# --------------------------------------------------------------------------- depth
def test_nested_delegation_reaches_the_depth_limit_and_is_refused_beyond_it(pool, tmp_path):
    lm = ScriptedLM(scripts={
        "DEPTH-ROOT": [("Go.", "r = delegate('DEPTH-ONE: go deeper')\nprint(r)"), ("Done.", "SUBMIT(result=r)")],
        "DEPTH-ONE": [("Go.", "r = delegate('DEPTH-TWO: deepest')\nSUBMIT(result='one<' + r + '>')")],
        "DEPTH-TWO": [("Try.", "r = delegate('DEPTH-THREE: too deep')\nSUBMIT(result='two[' + r + ']')")],
    })
    run = make_agent(lm, tmp_path, pool, max_depth=2).run("DEPTH-ROOT: nest")

    assert run.status == "finished", run.error
    assert run.result.startswith("one<two[Error: delegation depth limit reached")
    runs = list(all_runs(run))
    assert [(r.task, r.depth, r.status) for r in runs] == [
        ("DEPTH-ONE: go deeper", 1, "finished"), ("DEPTH-TWO: deepest", 2, "finished")]
    assert runs[1] in runs[0].steps[0].children  # the grandchild nests under its parent's step
    deepest = [r["system"] for r in lm.requests if "DEPTH-TWO" in r["user"]][0]
    assert "You cannot delegate" in deepest  # the prompt says so at the limit


def test_one_budget_for_the_whole_tree(pool, tmp_path):
    lm = ScriptedLM(scripts={
        "TREE-ROOT": [("Go.", "r = delegate('TREE-ONE: go')\nSUBMIT(result=r)")],
        "TREE-ONE": [("Go.", "r = delegate('TREE-TWO: go')\nSUBMIT(result='one<' + r + '>')")],
        "TREE-TWO": [("Go.", "r = delegate('TREE-THREE: go')\nSUBMIT(result='two[' + r + ']')")],
    })
    run = make_agent(lm, tmp_path, pool, max_depth=5, max_subagents=2).run("TREE-ROOT: spend the budget")
    assert run.result.startswith("one<two[Error: the sub-agent budget of this run is used up (2 started)")
    assert len(list(all_runs(run))) == 2


# --------------------------------------------------------------------------- parallel
def test_delegate_batched_returns_results_in_order_and_children_overlap(pool, tmp_path):
    def child(name):
        return [("Work.", f"import time\ntime.sleep(0.5)\nSUBMIT(result='{name}:' + context)")]

    lm = ScriptedLM(scripts={
        "BATCH-ROOT": [
            ("Fan out.", "rs = delegate_batched(['BATCH-A: first', {'task': 'BATCH-B: second', 'context': 'b'},"
                         " 42, {'task': 'BATCH-C: third', 'context': 'c'}])\nprint(rs)"),
            ("Done.", "import json\nSUBMIT(result=json.dumps(rs))"),
        ],
        "BATCH-A": child("A"), "BATCH-B": child("B"), "BATCH-C": child("C"),
    })
    run = make_agent(lm, tmp_path, pool).run("BATCH-ROOT: fan out")

    results = json.loads(run.result)
    assert results[0] == "A:" and results[1] == "B:b" and results[3] == "C:c"
    assert results[2].startswith("Error: 42 is not a task")
    children = run.steps[0].children
    assert [c.task for c in children] == ["BATCH-A: first", "BATCH-B: second", "BATCH-C: third"]
    # They ran at the same time: every child started before any of them ended.
    assert max(c.started_at for c in children) < min(c.ended_at for c in children)
    assert len({c.id for c in children}) == 3 and all(c.status == "finished" for c in children)


def test_max_parallel_bounds_how_many_children_run_at_once(pool, tmp_path):
    child = [("Work.", "SUBMIT(result='ok')")]
    lm = ScriptedLM(scripts={
        "SERIAL-ROOT": [("Fan out.", "rs = delegate_batched(['SERIAL-A: one', 'SERIAL-B: two'])\nSUBMIT(result=str(rs))")],
        "SERIAL-A": child, "SERIAL-B": child,
    })
    run = make_agent(lm, tmp_path, pool, max_parallel=1).run("SERIAL-ROOT: one at a time")
    first, second = run.steps[0].children
    assert run.result == "['ok', 'ok']"
    assert first.ended_at <= second.started_at


def test_the_subagent_budget_is_exact_under_concurrent_requests(pool, tmp_path):
    lm = ScriptedLM(scripts={
        "BUDGET-ROOT": [
            ("Ask twenty at once.",
             "import threading\nresults = [None] * 20\n"
             "def ask(i):\n    results[i] = delegate(f'BUDGET-CHILD number {i}')\n"
             "threads = [threading.Thread(target=ask, args=(i,)) for i in range(20)]\n"
             "for t in threads:\n    t.start()\nfor t in threads:\n    t.join()\n"
             "refused = sum(r.startswith('Error: the sub-agent budget') for r in results)\n"
             "print(refused, sum(r == 'done' for r in results))"),
            ("Done.", "SUBMIT(result=str(refused))"),
        ],
        "BUDGET-CHILD": [("Finish.", "SUBMIT(result='done')")] * 5,
    })
    run = make_agent(lm, tmp_path, pool, max_subagents=5, max_depth=1).run("BUDGET-ROOT: ask too much")

    assert run.status == "finished", run.error
    assert run.steps[0].output == "15 5"
    assert len(run.children) == 5 and all(c.status == "finished" for c in run.children)
    assert all(len(c.steps) == 1 and c.usage.lm_calls == 1 for c in run.children)  # one observer each


# --------------------------------------------------------------------------- faults
PID_FILE = "import os\nwrite_file(f'kernel-{os.getpid()}.pid', '')\n"


def kernel_processes(kernel) -> list[int]:
    """A kernel's processes as the host sees them: the one it started (bwrap in a sandbox) and the
    kernel below it (in a sandbox, the kernel's own os.getpid() is 1: its PID namespace's)."""
    return [pid for pid in (kernel.pid, kernel.signal_group) if pid]


@pytest.fixture
def taken(pool, monkeypatch):
    """The kernels the pool hands out during the test, each one's host pids."""
    kernels: list[list[int]] = []
    take = pool.take

    def recording_take(*args, **kwargs):
        kernel = take(*args, **kwargs)
        kernels.append(kernel_processes(kernel))
        return kernel

    monkeypatch.setattr(pool, "take", recording_take)
    return kernels


@pytest.mark.parametrize("case", ["os._exit", "loops past its timeout", "segfault"])
def test_a_child_whose_kernel_dies_or_hangs_returns_an_error_and_the_parent_carries_on(pool, taken, tmp_path, case):
    code = {
        "os._exit": PID_FILE + "os._exit(1)",
        "loops past its timeout": PID_FILE + "while True:\n    pass",
        "segfault": PID_FILE + "import ctypes\nctypes.string_at(0)",
    }[case]
    lm = ScriptedLM(scripts={
        "FAULT-ROOT": [("Delegate.", "r = delegate('FAULT-CHILD: misbehave')\nprint(r)"),
                       ("Carry on.", "SUBMIT(result='carried on after: ' + r)")],
        "FAULT-CHILD": [("Misbehave.", code)],
    })
    # A sandboxed kernel is made for one workspace: ready ones for this test's, so the 3 s limit is the code's.
    assert pool.warm(str(tmp_path)).wait_ready(timeout=120)
    run = make_agent(lm, tmp_path, pool, subagent_timeout=3).run("FAULT-ROOT: survive the child")

    assert run.status == "finished", run.error
    [child] = run.children
    if case == "loops past its timeout":
        assert run.result.startswith("carried on after: Error: the sub-agent ran past its time limit of 3 s")
    else:
        assert run.result.startswith("carried on after: Error: the sub-agent failed: CodeInterpreterError: "
                                     "the sub-agent's kernel died")
    assert child.status == "failed"
    assert len(list(tmp_path.glob("kernel-*.pid"))) == 1  # the child's code ran
    [pids] = taken
    assert all(gone(pid) for pid in pids)


def test_a_child_whose_code_raises_or_whose_model_fails_returns_to_a_parent_that_carries_on(pool, tmp_path):
    def broken_model(request):
        raise RuntimeError("the provider is down")

    lm = ScriptedLM(scripts={
        "RAISE-ROOT": [("Delegate.", "a = delegate('RAISE-CODE: raise')\nb = delegate('RAISE-MODEL: fail')"),
                       ("Carry on.", "import json\nSUBMIT(result=json.dumps([a, b]))")],
        "RAISE-CODE": [("Raise.", "raise RuntimeError('child broke')"), ("Give up.", "SUBMIT(result='gave up')")],
        "RAISE-MODEL": broken_model,
    })
    run = make_agent(lm, tmp_path, pool).run("RAISE-ROOT: survive")

    assert run.status == "finished", run.error
    code_result, model_result = json.loads(run.result)
    assert code_result == "gave up"
    code_child, model_child = run.children
    assert "RuntimeError: child broke" in code_child.steps[0].output
    assert model_child.status == "failed" and model_result.startswith("Error: the sub-agent failed:")
    assert "the provider is down" in model_result


def test_dspy_settings_reach_the_child_threads(pool, tmp_path):
    seen = []

    class Spy(BaseCallback):
        def on_lm_start(self, call_id, instance, inputs):
            seen.append(threading.current_thread().name)

    lm = ScriptedLM(scripts={
        "SETTINGS-ROOT": [("Go.", "r = delegate('SETTINGS-CHILD: go')\nSUBMIT(result=r)")],
        "SETTINGS-CHILD": [("Go.", "SUBMIT(result=llm_query('say hi'))")],
    }, replies="hi")
    with dspy.context(lm=lm, callbacks=[Spy()]):
        run = make_agent(None, tmp_path, pool).run("SETTINGS-ROOT: inherit")  # the LM comes from dspy.context

    assert run.result == "hi"
    on_child_thread = [name for name in seen if name.startswith("deepagent-subagent")]
    assert len(on_child_thread) == 2  # the child's step and its llm_query
    [child] = run.children
    assert child.usage.lm_calls == 2 and run.usage.lm_calls == 1  # the child's own observer, not the parent's


# --------------------------------------------------------------------------- review
def test_review_runs_an_isolated_reviewer_and_returns_its_verdict(pool, tmp_path):
    lm = ScriptedLM(scripts={
        "REVIEW-ROOT": [
            ("Review.", "v = review('count the rows', 'There are 3 rows.', ['The count matches data.csv'])\nprint(v)"),
            ("Done.", "import json\nSUBMIT(result=json.dumps(v))"),
        ],
        "Review a draft answer": [
            ("Read.", "print(task)\nprint(context)\nrows = len(open('data.csv').read().splitlines())"),
            ("Verdict.", "SUBMIT(status='fail', issues=[f'Criterion 1: data.csv has {rows} rows, not 3.'], "
                         "suggestions=['Recount.'])"),
        ],
    })
    (tmp_path / "data.csv").write_text("a\nb\nc\nd\n")
    run = make_agent(lm, tmp_path, pool).run("REVIEW-ROOT: check my draft")

    verdict = json.loads(run.result)
    assert verdict == {"status": "fail", "issues": ["Criterion 1: data.csv has 4 rows, not 3."],
                       "suggestions": ["Recount."]}
    [reviewer] = run.children
    assert reviewer.profile == "reviewer"
    assert "There are 3 rows." in reviewer.steps[0].output and "1. The count matches data.csv" in reviewer.steps[0].output
    system = [r["system"] for r in lm.requests if "Review a draft answer" in r["user"]][0]
    assert "You are a reviewer" in system


@pytest.mark.parametrize("text, status, issues", [
    ('{"status": "pass", "issues": [], "suggestions": []}', "pass", []),
    ('{"status": "low", "issues": ["wording"], "suggestions": ["tighten"]}', "low", ["wording"]),
    ({"status": "fail", "issues": ["wrong total"]}, "fail", ["wrong total"]),
    # only exactly one verdict object is read (the reviewer's typed SUBMIT makes one): never prose
    ('Here it is:\n```json\n{"status": "LOW", "issues": ["wording"], "suggestions": "tighten"}\n```', "fail", None),
    ("My verdict: {'status': 'failed', 'issues': ['wrong total']} -- done", "fail", None),
    ({"verdict": "pass", "issues": None}, "fail", None),
    ('{"issues": ["no status given"]}', "fail", None),
    ("looks great to me!", "fail", None),
    ('{"status": "excellent"}', "fail", None),
])
def test_verdicts_are_parsed_robustly_and_never_pass_by_accident(text, status, issues):
    verdict = parse_verdict(text)
    assert verdict["status"] == status
    assert isinstance(verdict["issues"], list) and isinstance(verdict["suggestions"], list)
    if issues is not None:
        assert verdict["issues"] == issues
    else:
        assert verdict["issues"]  # says why it failed


# --------------------------------------------------------------------------- interrupt
INTERRUPT_HOST = """
import json, sys
from deepagent_magics import DeepAgent
from deepagent_magics.interpreters.pool import KernelPool, live_kernel_pids
from deepagent_magics.core.run.run import Run
from deepagent_magics.testing import ScriptedLM

pool = KernelPool(size=2, cwd=sys.argv[1]).warm()  # kernels for this workspace (a sandboxed one serves one)
assert pool.wait_ready(timeout=120)
take = pool.take
def recording_take(*args):  # each kernel's host pids (in a sandbox, os.getpid() in the kernel is 1)
    kernel = take(*args)
    open(f"{sys.argv[1]}/host-{kernel.pid}-{kernel.signal_group or 0}.pids", "w").close()
    return kernel
pool.take = recording_take
hang = [("Hang.", "import os, time, uuid\\nopen(f'kernel-{uuid.uuid4().hex}.pid', 'w').close()\\nwhile True:\\n    time.sleep(0.05)")]
lm = ScriptedLM(scripts={
    "INTERRUPT-ROOT": [("Fan out.", "rs = delegate_batched(['HANG-A: wait', 'HANG-B: wait', 'HANG-C: wait'])")],
    "HANG-A": hang, "HANG-B": hang, "HANG-C": hang,
})
agent = DeepAgent(lm=lm, workspace=sys.argv[1], pool=pool, max_parallel=2, timeout=600)
run = Run("INTERRUPT-ROOT: fan out and wait")
try:
    agent.run(run.task, run=run)
    outcome = "returned"
except KeyboardInterrupt:
    outcome = "KeyboardInterrupt"
live = live_kernel_pids()
print(json.dumps({
    "outcome": outcome, "status": run.status, "steps": [s.code for s in run.steps],
    "children": [[c.task, c.status] for c in run.children], "live": live,
}), flush=True)
pool.stop()
"""


def test_a_keyboard_interrupt_during_delegate_batched_stops_every_child_kernel(tmp_path):
    script = tmp_path / "host.py"
    script.write_text(textwrap.dedent(INTERRUPT_HOST))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    host = subprocess.Popen([sys.executable, str(script), str(workspace)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while len(list(workspace.glob("kernel-*.pid"))) < 2 and time.monotonic() < deadline:
            assert host.poll() is None, host.stderr.read()
            time.sleep(0.1)
        assert len(list(workspace.glob("kernel-*.pid"))) == 2  # two running (max_parallel=2), one waiting
        kernels = [int(pid) for p in workspace.glob("host-*.pids") for pid in p.stem.split("-")[1:] if pid != "0"]
        assert len(kernels) in (2, 4)  # bwrap and the kernel in it, or the kernel only
        host.send_signal(signal.SIGINT)
        out, err = host.communicate(timeout=60)
    finally:
        if host.poll() is None:
            host.kill()
    report = json.loads(out.strip().splitlines()[-1])
    assert report["outcome"] == "KeyboardInterrupt" and report["status"] == "interrupted", err
    assert report["steps"] and "delegate_batched" in report["steps"][0]  # the trajectory is kept
    assert report["children"] == [["HANG-A: wait", "interrupted"], ["HANG-B: wait", "interrupted"],
                                  ["HANG-C: wait", "interrupted"]]
    assert not set(kernels) & set(report["live"])  # stopped before KeyboardInterrupt reached the caller
    assert all(gone(pid) for pid in kernels)
