"""One run at a time per namespace (issue 10, item 3).

Two `DeepAgent.run` calls on the same namespace dict from two threads used to leave the
tools, SUBMIT, DSPy's sandbox internals, `task` and `context` behind, replace
`__builtins__` (the user's next `import dspy` got DSPy's sandbox stand-in) and send run
A's `write_file` into run B's workspace. Now the second run is refused at once with
`NamespaceBusy` (one line); nothing of either run leaks into the other or stays behind.
Every case is played with real agents on real threads, under many timings.
"""

from __future__ import annotations

import builtins
import json
import threading
import time

import pytest
from IPython.core.error import UsageError

from deepagent_magics import DeepAgent
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import NamespaceBusy
from deepagent_magics.testing import ScriptedLM


def user_namespace():
    import dspy

    namespace = {"__builtins__": builtins, "dspy": dspy, "sales": [1, 2, 3], "__name__": "__main__"}
    return namespace, dict(namespace)


def assert_untouched(namespace, before, created=()):
    """Every name the user had is bound as before; nothing else is left but what the agents created."""
    for name, value in before.items():
        assert namespace.get(name) is value, name
    foreign = sorted(set(namespace) - set(before) - set(created) - {"time"})  # the agents' own `import time`
    assert foreign == [], f"left behind: {foreign}"
    assert namespace["__builtins__"] is builtins
    import dspy

    assert namespace["dspy"] is dspy and type(namespace["dspy"]).__name__ == "module"


def slow_agent(tag, workspace, hold=0.6, steps=2):
    """An agent whose steps take ``hold`` seconds each and write a file named after it."""
    script = [(f"{tag} step {i}.", f"import time\ntime.sleep({hold})\nwrite_file('{tag}-{i}.txt', '{tag}')\n"
                                   f"made_by_{tag}_{i} = {i}") for i in range(steps)]
    script.append(("Done.", f"SUBMIT(result='{tag} done')"))
    return DeepAgent(lm=ScriptedLM(script), workspace=workspace, timeout=30)


def run_in_thread(agent, task, namespace, box, key, **kwargs):
    def work():
        try:
            box[key] = agent.run(task, namespace, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - the refusal, kept for the test
            box[key] = exc
        box[key + " ended"] = time.monotonic()

    thread = threading.Thread(target=work)
    thread.start()
    return thread


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.3, 0.8, 1.1])
def test_a_second_run_on_a_busy_namespace_is_refused_at_once(tmp_path, delay):
    """B starts at several moments of A's run (during set-up, inside a step, between steps), counted from A's
    first event: A holds the namespace by then. (Started together, either may be first: the next test.)"""
    namespace, before = user_namespace()
    box = {}
    started = threading.Event()
    a = run_in_thread(slow_agent("a", tmp_path / "a"), "task A", namespace, box, "a",
                      listeners=[lambda event: started.set()])
    assert started.wait(30), box.get("a")
    time.sleep(delay)
    b = run_in_thread(slow_agent("b", tmp_path / "b"), "task B", namespace, box, "b")
    b.join(10)
    a.join(30)

    assert isinstance(box["b"], NamespaceBusy), box["b"]
    assert box["b ended"] < box["a ended"]  # refused at once, not after waiting for A to finish
    assert len(str(box["b"]).splitlines()) == 1
    run_a = box["a"]
    assert run_a.status == "finished" and run_a.result == "a done"
    assert_untouched(namespace, before, created={"made_by_a_0", "made_by_a_1"})
    assert sorted(p.name for p in (tmp_path / "a").glob("*.txt")) == ["a-0.txt", "a-1.txt"]
    assert not (tmp_path / "b").exists() or not list((tmp_path / "b").glob("*.txt"))


def test_two_runs_started_together_many_times_one_runs_the_other_is_refused(tmp_path):
    namespace, before = user_namespace()
    for attempt in range(12):
        box = {}
        barrier = threading.Barrier(2)

        def start(tag):
            barrier.wait()
            try:
                box[tag] = slow_agent(tag, tmp_path / f"{attempt}-{tag}", hold=0.05, steps=1).run(f"task {tag}", namespace)
            except NamespaceBusy as exc:
                box[tag] = exc

        threads = [threading.Thread(target=start, args=(tag,)) for tag in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        runs = [r for r in box.values() if isinstance(r, Run)]
        refused = [r for r in box.values() if isinstance(r, NamespaceBusy)]
        # Either one ran and the other was refused, or (A finished before B claimed) both ran in turn.
        assert len(runs) + len(refused) == 2 and runs, box
        for run in runs:
            assert run.status == "finished", run.error
            tag = run.task.split()[-1]
            assert [p.name for p in (tmp_path / f"{attempt}-{tag}").glob("*.txt")] == [f"{tag}-0.txt"]
        created = {f"made_by_{r.task.split()[-1]}_0" for r in runs}
        assert_untouched(namespace, before, created=created)
        for name in created:
            del namespace[name]


def test_after_a_run_ends_however_the_namespace_is_free_again(tmp_path):
    namespace, before = user_namespace()

    def broken(request):
        raise RuntimeError("provider down")

    failed = DeepAgent(lm=ScriptedLM(broken), workspace=tmp_path).run("fails", namespace)
    assert failed.status == "failed"

    def interrupt(request):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        DeepAgent(lm=ScriptedLM(interrupt), workspace=tmp_path).run("interrupted", namespace)

    ok = DeepAgent(lm=ScriptedLM([("Done.", "SUBMIT(result='ok')")]), workspace=tmp_path).run("works", namespace)
    assert ok.status == "finished" and ok.result == "ok"
    assert_untouched(namespace, before)


def test_a_refused_run_given_by_the_caller_ends_failed_and_touches_nothing(tmp_path):
    namespace, before = user_namespace()
    box = {}
    a = run_in_thread(slow_agent("a", tmp_path / "a", hold=0.5, steps=1), "task A", namespace, box, "a")
    time.sleep(0.2)
    refused = Run("task B")
    events = []
    refused.subscribe(events.append)
    with pytest.raises(NamespaceBusy):
        slow_agent("b", tmp_path / "b").run("task B", namespace, run=refused)
    a.join(30)
    assert refused.status == "failed" and "NamespaceBusy" in refused.error
    assert not (tmp_path / "b" / ".deepagent").exists()  # no record of a run that never started
    assert_untouched(namespace, before, created={"made_by_a_0"})


def test_agent_code_that_starts_a_nested_run_on_its_own_namespace_is_refused(tmp_path):
    """The agent's own code calling DeepAgent.run on globals(): an error it reads, not a second run."""
    namespace, before = user_namespace()
    namespace["DeepAgent"] = DeepAgent
    namespace["ScriptedLM"] = ScriptedLM
    before = dict(namespace)
    code = ("inner = DeepAgent(lm=ScriptedLM([('x', \"SUBMIT(result='inner')\")]), workspace='.')\n"
            "inner.run('nested', globals())")
    lm = ScriptedLM([("Nest.", code), ("Done.", "SUBMIT(result='outer')")])
    run = DeepAgent(lm=lm, workspace=tmp_path, timeout=30).run("outer", namespace)
    assert run.status == "finished" and run.result == "outer"
    assert "NamespaceBusy" in run.steps[0].output
    assert_untouched(namespace, before, created={"inner"})


def test_the_magic_turns_a_busy_namespace_into_one_usage_error_line(ip, tmp_path):
    """A %%deepagent cell started (from another thread) while a run uses the notebook's namespace."""
    box = {}
    namespace = ip.user_ns
    a = run_in_thread(slow_agent("a", tmp_path / "a", hold=0.6, steps=1), "task A", namespace, box, "a")
    time.sleep(0.2)
    ip.user_ns["lm"] = ScriptedLM([("Done.", "SUBMIT(result='b')")])
    with pytest.raises(UsageError) as info:
        ip.run_cell_magic("deepagent", "--lm lm", "task B")
    a.join(30)
    assert type(info.value) is UsageError
    assert "another agent run" in str(info.value) and len(str(info.value).splitlines()) == 1
    assert box["a"].status == "finished"


def test_write_file_of_one_run_never_lands_in_another_runs_workspace(tmp_path):
    """Runs on different namespaces in parallel threads: each one's files go to its own workspace."""
    box, threads = {}, []
    for tag in ("a", "b", "c"):
        namespace, _ = user_namespace()
        threads.append(run_in_thread(slow_agent(tag, tmp_path / tag, hold=0.2, steps=3), f"task {tag}",
                                     namespace, box, tag))
    for t in threads:
        t.join(30)
    for tag in ("a", "b", "c"):
        assert box[tag].status == "finished"
        names = sorted(p.name for p in (tmp_path / tag).glob("*.txt"))
        assert names == [f"{tag}-0.txt", f"{tag}-1.txt", f"{tag}-2.txt"]
        record = json.loads((tmp_path / tag / ".deepagent" / "runs" / f"{box[tag].id}.json").read_text())
        assert all(path.startswith(tag) for path in record["files_written"])
