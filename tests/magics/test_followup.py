"""magics/followup.py: follow-up cells: a continued run receives the earlier turns compactly; threads survive a
restart through the run records; the agent sees the user's recent cells, scrubbed."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.run import conversations as threads

FAKE_KEY = "sk-" + "abcdefghijklmnopqrstu"  # a provider-shaped key, made up (and not written whole here)
SHOW_CONTEXT = [("Read what came before", "SUBMIT(result=context)")]


@pytest.fixture(autouse=True)
def fresh_threads(monkeypatch):
    """Every test starts as a fresh kernel would: no thread in memory."""
    monkeypatch.setattr(threads, "_threads", {})
    monkeypatch.setattr(threads, "_thread_of_run", {})
    monkeypatch.delenv("DEEPAGENT_MEMORY", raising=False)


def _agent(tmp_path, steps):
    return DeepAgent(lm=ScriptedLM(steps), workspace=tmp_path, max_depth=0)


def _first_turn(tmp_path, namespace):
    steps = [("Load the sales and drop the empty rows", "sales_clean = [r for r in sales if r]\nprint(len(sales_clean))"),
             ("Write a note about it", "write_file('notes/clean.md', 'cleaned')"),
             ("Done", "SUBMIT(result='Cleaned: 3 rows kept in sales_clean')")]
    return _agent(tmp_path, steps).run("load and clean the sales", namespace)


def test_a_continued_run_receives_each_earlier_turn_compactly(tmp_path):
    namespace = {"sales": [1, 0, 2, 3]}
    first = _first_turn(tmp_path, namespace)
    assert first.status == "finished" and namespace["sales_clean"] == [1, 2, 3]
    second = _agent(tmp_path, SHOW_CONTEXT).run("now plot it by month", namespace, thread=first.id)
    context = second.result
    assert threads.HEADER in context and "load and clean the sales" in context
    assert "Cleaned: 3 rows kept in sales_clean" in context
    assert "sales_clean (list)" in context and "notes/clean.md" in context
    assert "steps (3): Load the sales and drop the empty rows; Write a note about it; Done" in context
    assert "sales (" not in context  # the user's own variable was not created by the agent
    assert second.config["thread"] == first.id == first.config["thread"]
    third = _agent(tmp_path, SHOW_CONTEXT).run("and by region", namespace, thread=second.id)
    assert "Turn 1" in third.result and "Turn 2" in third.result and "now plot it by month" in third.result


def test_a_long_thread_stays_bounded_newest_in_full(tmp_path):
    namespace: dict = {}
    previous = None
    for i in range(30):
        steps = [(f"step of turn {i} " + "x" * 200, f"value_{i} = {i}\nSUBMIT(result='result {i} ' + 'y' * 1000)")]
        previous = _agent(tmp_path, steps).run(f"task number {i} " + "z" * 300, namespace, thread=previous and previous.id)
    last = _agent(tmp_path, SHOW_CONTEXT).run("what now", namespace, thread=previous.id)
    assert len(last.result) <= threads.CONTEXT_BUDGET + 10
    assert "Turn 30" in last.result and "value_29 (int)" in last.result  # the newest turn in full


def test_an_unknown_thread_is_refused_before_anything_runs(tmp_path):
    namespace = {"keep": 1}
    lm = ScriptedLM(["keep = 2\nSUBMIT(result='ran')"])
    with pytest.raises(threads.UnknownThread, match="no run or thread 'nope'"):
        DeepAgent(lm=lm, workspace=tmp_path, max_depth=0).run("task", namespace, thread="nope")
    assert namespace == {"keep": 1} and not (tmp_path / ".deepagent" / "runs").exists()


def test_a_thread_is_rebuilt_from_the_records_after_a_restart(tmp_path, monkeypatch):
    namespace = {"sales": [1, 0, 2, 3]}
    first = _first_turn(tmp_path, namespace)
    monkeypatch.setattr(threads, "_threads", {})  # the kernel restarted: nothing in memory
    monkeypatch.setattr(threads, "_thread_of_run", {})
    second = _agent(tmp_path, SHOW_CONTEXT).run("now plot it by month", {}, thread=first.id)
    assert "load and clean the sales" in second.result and "sales_clean (list)" in second.result


# ------------------------------------------------------------------ the magic
def _cell(ip, line, task, steps=None):
    ip.user_ns["lm"] = ScriptedLM(steps or SHOW_CONTEXT)
    ip.run_cell_magic("deepagent", f"--lm lm --max-depth 0 --out out {line}", task)
    return ip.user_ns["out"]


def test_two_cell_follow_up_with_continue_and_c(ip):
    ip.user_ns["sales"] = [1, 0, 2]
    _cell(ip, "", "load and clean the sales", [("clean", "sales_clean = [r for r in sales if r]\nSUBMIT(result='ok')")])
    seen = _cell(ip, "--continue", "now plot it by month")
    assert "load and clean the sales" in seen and "sales_clean (list)" in seen
    seen = _cell(ip, "-c", "and by region")
    assert "now plot it by month" in seen and "Turn 2" in seen
    fresh = _cell(ip, "", "unrelated question")
    assert threads.HEADER not in fresh


def test_continue_by_default_and_new(ip):
    ip.run_line_magic("deepagent_config", "--continue on")
    assert ip.magics_manager.registry["DeepAgentMagics"].continue_default is True
    first = _cell(ip, "", "first task")  # nothing to continue yet: starts a conversation
    assert threads.HEADER not in first
    assert "first task" in _cell(ip, "", "second task")
    assert threads.HEADER not in _cell(ip, "--new", "third task")
    assert "third task" in _cell(ip, "", "fourth task") and "first task" not in _cell(ip, "--new", "x")


def test_continue_a_given_run_and_after_a_restart(ip, monkeypatch):
    _cell(ip, "", "alpha task")
    alpha = ip.user_ns["_deepagent_run"].id
    _cell(ip, "", "beta task")
    assert "alpha task" in _cell(ip, f"--continue {alpha}", "gamma") and "beta task" not in _cell(ip, f"-c {alpha}", "d")
    magics = ip.magics_manager.registry["DeepAgentMagics"]
    monkeypatch.setattr(magics, "runs", [])  # a restarted kernel: no runs, no threads in memory
    monkeypatch.setattr(threads, "_threads", {})
    monkeypatch.setattr(threads, "_thread_of_run", {})
    seen = _cell(ip, "--continue", "after the restart")
    assert "alpha task" in seen and "gamma" in seen  # the newest recorded run's thread


@pytest.mark.parametrize("line, message", [
    ("--continue", "no earlier run to continue"),
    ("--continue 20200101-000000-abcdef", "no run or thread"),
    ("--continue --new", "contradict"),
    ("--cells -1", "--cells must be 0 or more"),
])
def test_bad_follow_up_flags_are_one_line_and_change_nothing(ip, line, message):
    ip.user_ns["keep"] = "mine"
    ip.user_ns["lm"] = ScriptedLM(["keep = 'agent'\nSUBMIT(result='ran')"])
    with pytest.raises(UsageError, match=message) as caught:
        ip.run_cell_magic("deepagent", f"--lm lm --max-depth 0 {line}", "a task")
    assert "\n" not in str(caught.value)
    assert ip.user_ns["keep"] == "mine" and "_deepagent_run" not in ip.user_ns


def test_config_flag_mistakes(ip):
    for line in ("--continue maybe", "--cells -3"):
        with pytest.raises(UsageError):
            ip.run_line_magic("deepagent_config", line)


def test_the_agent_sees_recent_cells_scrubbed_and_bounded(ip, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-1234567890abcdef")
    for source in ("sales = [3, 1, 2]", "api_key = 'plain-secret-value-123'", "client = '" + FAKE_KEY + "'",
                   "header = 'tok-1234567890abcdef'", "big = '" + "q" * 5000 + "'", "sales_sorted = sorted(sales)"):
        ip.run_cell(source, store_history=True)
    seen = _cell(ip, "--cells 6", "use what I made")
    assert "sales = [3, 1, 2]" in seen and "sales_sorted = sorted(sales)" in seen
    for secret in ("plain-secret-value-123", FAKE_KEY, "tok-1234567890abcdef"):
        assert secret not in seen
    assert "q" * 1000 not in seen and len(seen) < 3000
    assert seen.index("sales = [3") < seen.index("sales_sorted")  # oldest first
    assert "sales = [3" not in _cell(ip, "--cells 0", "again")
    ip.run_line_magic("deepagent_config", "--cells 1")
    last_only = _cell(ip, "", "again")
    assert "sales_sorted = sorted(sales)" in last_only and "sales = [3, 1, 2]" not in last_only
