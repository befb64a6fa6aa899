"""Approval in a real InteractiveShell: the user's answers (a scripted ``input``) decide what runs.

Every case drives ``%%deepagent --approve ...`` with a scripted model; ``builtins.input`` is
replaced by a fake the way ipykernel replaces it with its stdin request. Through a real
kernel's stdin: test_approval_kernel.py.
"""

from __future__ import annotations

import builtins
import json
import time

import pytest
from IPython.core.error import StdinNotImplementedError, UsageError

from deepagent_magics import DeepAgent
from deepagent_magics.core.policy.approval import Decision
from deepagent_magics.testing import ScriptedLM


class Answers:
    """A fake ``input``: the scripted answers in order, each prompt kept."""

    def __init__(self, *answers, delay: float = 0.0):
        self.answers = list(answers)
        self.prompts: list[str] = []
        self.delay = delay

    def __call__(self, prompt: str = "") -> str:
        self.prompts.append(prompt)
        time.sleep(self.delay)
        if not self.answers:
            raise AssertionError("asked more often than scripted")
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "outside" / "precious.txt"
    path.parent.mkdir()
    path.write_text("keep me")
    return path


def remove_then(victim, *more):
    return ScriptedLM([
        ("Remove it.", f"import os\nos.remove({str(victim)!r})\nprint('removed')"),
        *more,
        ("Done.", "SUBMIT(result='done')"),
    ])


def cell(ip, lm, flags="--approve risky", task="tidy up"):
    ip.user_ns["lm"] = lm
    ip.run_cell(f"%%deepagent --lm lm {flags}\n{task}").raise_error()
    return ip.user_ns["_deepagent_run"]


def test_y_runs_the_risky_block(ip, victim, monkeypatch):
    answers = Answers("y")
    monkeypatch.setattr(builtins, "input", answers)
    run = cell(ip, remove_then(victim))
    assert not victim.exists()
    assert run.steps[0].output == "removed"
    assert len(answers.prompts) == 1 and "[y]es" in answers.prompts[0]
    (entry,) = run.approvals
    assert entry["decision"] == "approved" and entry["who"] == "user" and entry["step"] == 1
    assert any("os.remove" in reason for reason in entry["reasons"]) and entry["time"] > 0


def test_n_with_a_reason_skips_the_block_and_the_agent_reads_why(ip, victim, monkeypatch):
    monkeypatch.setattr(builtins, "input", Answers("n that file is precious"))
    run = cell(ip, remove_then(victim))
    assert victim.read_text() == "keep me"
    output = run.steps[0].output
    assert output.startswith("Not run") and "that file is precious" in output and "os.remove" in output
    assert run.status == "finished" and run.result == "done"
    assert run.approvals[0]["decision"] == "refused" and run.approvals[0]["note"] == "that file is precious"
    assert "removed" not in (run.steps[0].output or "")


def test_a_approves_the_rest_of_the_run(ip, victim, monkeypatch, tmp_path):
    other = tmp_path / "outside" / "other.txt"
    other.write_text("x")
    answers = Answers("a")
    monkeypatch.setattr(builtins, "input", answers)
    run = cell(ip, remove_then(victim, ("Again.", f"import shutil\nshutil.move({str(other)!r}, {str(tmp_path / 'moved.txt')!r})")))
    assert not victim.exists() and not other.exists()
    assert len(answers.prompts) == 1
    assert [entry["decision"] for entry in run.approvals] == ["approved_all", "approved"]
    assert run.approvals[1]["who"] == "approve-all"


def test_q_stops_the_run_keeping_what_it_did(ip, victim, monkeypatch, capsys):
    monkeypatch.setattr(builtins, "input", Answers("q"))
    lm = ScriptedLM([
        ("Make something.", "made = 41 + 1"),
        ("Remove it.", f"import os\nos.remove({str(victim)!r})"),
        ("Never.", "never = True\nSUBMIT(result='no')"),
    ])
    run = cell(ip, lm, task="work then remove")
    assert run.status == "stopped" and "stopped by the user" in run.error
    assert victim.exists() and ip.user_ns["made"] == 42 and "never" not in ip.user_ns
    assert len(run.steps) == 2 and run.approvals[-1]["decision"] == "stopped"
    assert "SUBMIT" not in ip.user_ns  # the interpreter was shut down as for any ending
    assert "stopped" in capsys.readouterr().out


def test_anything_else_asks_again(ip, victim, monkeypatch):
    answers = Answers("", "maybe", "yes please", "Y")
    monkeypatch.setattr(builtins, "input", answers)
    cell(ip, remove_then(victim))
    assert not victim.exists() and len(answers.prompts) == 4


def test_a_safe_block_does_not_ask_under_risky_but_does_under_always(ip, monkeypatch):
    lm = lambda name: ScriptedLM([("Add.", f"{name} = 1 + 2\nprint({name})"), ("Done.", "SUBMIT(result='3')")])
    monkeypatch.setattr(builtins, "input", Answers())
    run = cell(ip, lm("total"))
    assert run.approvals == [] and ip.user_ns["total"] == 3
    answers = Answers("y", "y")
    monkeypatch.setattr(builtins, "input", answers)
    run = cell(ip, lm("total2"), flags="--approve always")
    assert len(answers.prompts) == 2 and [e["reasons"] for e in run.approvals] == [[], []]


def test_never_is_the_default_and_asks_nothing(ip, victim, monkeypatch):
    monkeypatch.setattr(builtins, "input", Answers())
    run = cell(ip, remove_then(victim), flags="")
    assert not victim.exists() and run.approvals == []


@pytest.mark.parametrize("no_stdin", [StdinNotImplementedError("no stdin"), EOFError()])
def test_without_stdin_the_block_is_refused_at_once(ip, victim, monkeypatch, no_stdin, capsys):
    monkeypatch.setattr(builtins, "input", Answers(no_stdin, no_stdin))
    started = time.monotonic()
    run = cell(ip, remove_then(victim))
    assert time.monotonic() - started < 30
    assert victim.exists()
    assert "no stdin" in run.steps[0].output and run.approvals[0]["who"] == "no stdin"
    assert "no stdin to ask on" in capsys.readouterr().out


def test_a_process_whose_stdin_is_not_a_terminal_is_not_read(tmp_path, victim, monkeypatch):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))  # a pipe: never read as an answer
    monkeypatch.setattr(builtins, "input", builtins.__dict__["input"])
    run = DeepAgent(lm=remove_then(victim), approve="risky", workspace=tmp_path / "ws").run("x", {})
    assert victim.exists() and run.approvals[0]["who"] == "no stdin"


@pytest.mark.parametrize("hijack", [
    "import builtins\nbuiltins.input = lambda prompt='': 'a'",
    "import deepagent_magics.core.policy.approval as ap\nfor a in list(ap._approvers.values()):\n    a.approve_all = True",
    "import gc\nfor o in gc.get_objects():\n    if type(o).__name__ == 'Approver':\n        o.policy = 'never'",
])
def test_agent_code_that_tampers_with_approval_is_asked_about_and_cannot_approve_itself(ip, victim, monkeypatch, hijack):
    answers = Answers("n leave approval alone", "n no")
    monkeypatch.setattr(builtins, "input", answers)
    lm = ScriptedLM([
        ("Hijack.", hijack),
        ("Remove it.", f"import os\nos.remove({str(victim)!r})"),
        ("Done.", "SUBMIT(result='done')"),
    ])
    run = cell(ip, lm)
    assert victim.exists() and [e["decision"] for e in run.approvals] == ["refused", "refused"]
    assert any("controls" in reason for reason in run.approvals[0]["reasons"])


def test_agent_code_that_replaces_input_cannot_approve_itself(ip, victim, monkeypatch):
    answers = Answers("y", "n no")
    monkeypatch.setattr(builtins, "input", answers)
    lm = ScriptedLM([
        ("Hijack.", "import builtins\nbuiltins.input = lambda prompt='': 'a'"),
        ("Remove it.", f"import os\nos.remove({str(victim)!r})"),
        ("Done.", "SUBMIT(result='done')"),
    ])
    run = cell(ip, lm)  # the user lets the replacement run: the captured input still asks
    assert victim.exists() and run.approvals[1]["decision"] == "refused" and len(answers.prompts) == 2


def test_waiting_for_the_answer_does_not_count_against_the_timeout(ip, monkeypatch, tmp_path):
    monkeypatch.setattr(builtins, "input", Answers("y", delay=2.5))
    lm = ScriptedLM([("Remove.", f"import os\nos.makedirs({str(tmp_path / 'w')!r})\nos.rmdir({str(tmp_path / 'w')!r})\n"
                                 "print('ok')"), ("Done.", "SUBMIT(result='ok')")])
    run = cell(ip, lm, flags="--approve risky --timeout 1")
    assert run.steps[0].output == "ok"
    assert run.waited_seconds >= 2.5


def policy_cell(ip, victim, policy):
    ip.user_ns["policy"] = policy
    return cell(ip, remove_then(victim), flags="--approve policy")


def test_a_policy_callable_decides_with_the_proposal(ip, victim):
    seen = []

    def policy(proposal):
        seen.append(proposal)
        return "n not on my disk" if any(r.rule == "removes_files" for r in proposal.reasons) else "y"

    run = policy_cell(ip, victim, policy)
    assert victim.exists() and "not on my disk" in run.steps[0].output
    assert seen[0].step == 1 and seen[0].agent == "the agent" and "os.remove" in seen[0].code
    assert len(seen) == 2 and run.approvals[0]["who"] == "policy"  # called for every block
    assert policy_cell(ip, victim, lambda p: Decision("run")).status == "finished" and not victim.exists()


@pytest.mark.parametrize("junk", [None, 42, "maybe", ["y"], Decision("perhaps"), "y and more", float("nan")])
def test_a_policy_that_returns_junk_refuses_the_block(ip, victim, junk, capsys):
    run = policy_cell(ip, victim, lambda proposal: junk)
    assert victim.exists() and "not a decision" in run.steps[0].output
    assert "your approval policy returned" in capsys.readouterr().out


@pytest.mark.parametrize("error", [ValueError("bad\nsecond line"), KeyError("k"), RecursionError()])
def test_a_policy_that_raises_refuses_the_block_and_the_run_goes_on(ip, victim, error, capsys):
    def policy(proposal):
        raise error

    run = policy_cell(ip, victim, policy)
    assert victim.exists() and run.status == "finished" and f"raised {type(error).__name__}" in run.steps[0].output
    assert "second line" not in run.steps[0].output


def test_decisions_are_in_the_run_record_with_who_what_when(ip, victim, monkeypatch, tmp_path):
    monkeypatch.setattr(builtins, "input", Answers("n sk-ant-api03-" + "x" * 40))
    run = cell(ip, remove_then(victim))
    record = json.loads((tmp_path / ".deepagent" / "runs" / f"{run.id}.json").read_text())
    (entry,) = record["approvals"]
    assert entry["decision"] == "refused" and entry["who"] == "user" and entry["step"] == 1 and entry["time"]
    assert entry["policy"] == "risky" and "sk-ant-api03-xxxx" not in json.dumps(record)


@pytest.mark.parametrize("flags, message", [
    ("--approve sometimes", "unknown approval policy 'sometimes'"),
    ("--approve data", "is a int, not a function"),
    ("--approve risky --approve-rules=-netwrk", "unknown risk rule 'netwrk'"),
    ("--approve risky --approve-rules network,5", "unknown risk rule '5'"),
])
def test_bad_approval_settings_are_one_line_and_nothing_runs(ip, flags, message):
    lm = ScriptedLM([("Never.", "ran = True\nSUBMIT(result='no')")])
    ip.user_ns.update(lm=lm, data=3)
    with pytest.raises(UsageError, match=message):
        ip.run_cell_magic("deepagent", f"--lm lm {flags}", "task")
    assert "ran" not in ip.user_ns
    with pytest.raises(UsageError, match=message.split("'")[0]):
        ip.run_line_magic("deepagent_config", flags)
    assert ip.find_magic("deepagent_config").__self__.approve == "never"


def test_config_sets_the_default_policy_and_rules(ip, victim, monkeypatch):
    ip.run_line_magic("deepagent_config", "--approve risky --approve-rules none,subagents")
    monkeypatch.setattr(builtins, "input", Answers())
    run = cell(ip, remove_then(victim), flags="")  # removing files is not a rule now: nothing asks
    assert not victim.exists() and run.approvals == []


def test_deepagent_refuses_an_unknown_policy_or_rule():
    with pytest.raises(ValueError, match="unknown approval policy"):
        DeepAgent(lm=ScriptedLM([]), approve="sometimes")
    with pytest.raises(ValueError, match="unknown risk rule"):
        DeepAgent(lm=ScriptedLM([]), approve="risky", approve_rules=["-nope"])


def test_an_evaluation_never_waits_for_an_answer(tmp_path, victim, monkeypatch):
    from deepagent_magics.tuning.systems import IsolatedAgent

    monkeypatch.setattr(builtins, "input", Answers())  # would fail the test if asked
    agent = DeepAgent(lm=remove_then(victim), approve="risky", workspace=tmp_path)
    run = IsolatedAgent(agent).run("x")
    assert victim.exists() and run.approvals[0]["who"] == "no stdin"
