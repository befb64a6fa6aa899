"""Approval sees what the root agent's code does (issue 22, item 1): runtime checks through audit hooks.

Each of the 33 ordinary cases (`runtime_cases.CASES`: paths and hosts known only at run time, which
the static preview cannot see) runs as a ``%%deepagent --approve policy`` cell in a real
InteractiveShell; the policy answers ``y`` to every block and ``n`` to every runtime question, and
keeps each question. Every case must be asked, naming the resolved path or host, and nothing outside
the workspace may change. The user's own identical code, outside a run, is never asked and does
what it says. Hostile steps that try to switch the checks off: test_runtime_checks_hostile.py;
sub-agent kernels: test_runtime_checks_kernel.py.
"""

from __future__ import annotations

import builtins
import json
import os
import threading
import time

import pytest

from deepagent_magics.testing import ScriptedLM

from tests.adversarial.runtime_cases import CASES, make_places


def no_input(prompt: str = "") -> str:
    raise AssertionError(f"asked on stdin: {prompt!r}")


class Policy:
    """``y`` for blocks, ``n`` for runtime actions; every proposal kept."""

    def __init__(self, action_answer: str = "n the test refuses"):
        self.proposals: list = []
        self.action_answer = action_answer

    def __call__(self, proposal):
        self.proposals.append(proposal)
        return self.action_answer if proposal.action else "y"

    @property
    def actions(self) -> list[str]:
        return [p.action for p in self.proposals if p.action]


@pytest.fixture
def places(ip, tmp_path, tmp_path_factory, monkeypatch):
    monkeypatch.setattr(builtins, "input", no_input)
    places = make_places(tmp_path, tmp_path_factory.mktemp("outside"), monkeypatch)
    yield places
    places.close()


def agent_cell(ip, steps, policy, flags="--approve policy"):
    ip.user_ns.update(lm=ScriptedLM([*steps, ("Done.", "SUBMIT(result='done')")]), policy=policy)
    ip.run_cell(f"%%deepagent --lm lm {flags}\ndo it").raise_error()
    return ip.user_ns["_deepagent_run"]


def case_steps(places, case):
    return ([("Set up.", places.fill(case.setup))] if case.setup else []) + [("Act.", places.fill(case.code))]


@pytest.mark.parametrize("case", [case.param() for case in CASES])
def test_an_ordinary_risky_action_known_only_at_run_time_is_asked_with_its_target(ip, places, case):
    before = places.state()
    policy = Policy()
    run = agent_cell(ip, case_steps(places, case), policy)
    expected = places.fill(case.asks)
    assert any(expected in action for action in policy.actions), (expected, policy.actions)
    acting = [p for p in policy.proposals if not p.action and p.step == len(run.steps) - 1]
    assert acting and not any(r.rule == case.rule for r in acting[0].reasons)  # the preview could not see it
    assert places.state() == before  # refused: nothing outside the workspace changed, no connection made
    refused = [e for e in run.approvals if e.get("action")]
    assert refused and refused[0]["decision"] == "refused" and refused[0]["who"] == "policy"


@pytest.mark.parametrize("case", [case.param() for case in CASES])
def test_the_users_own_identical_code_outside_a_run_is_never_asked(ip, places, case):
    agent_cell(ip, [("Harmless.", "x = 1")], Policy())  # the hook is installed and stays for good
    before = places.state()
    if case.setup:
        ip.run_cell(places.fill(case.setup))
    ip.run_cell(places.fill(case.code))  # input() fails the test if anything asks
    assert places.changed_from(before) != before  # it did what it says


def test_the_question_names_the_resolved_path_through_links_and_dots(ip, places):
    (places.workspace / "escape").symlink_to(places.outside)
    (places.workspace / "sub").mkdir()
    code = ("import os\nws = os.environ['WS']\n"
            "for path in [os.path.join(ws, 'escape', 'via-link.txt'), ws + '/sub/../../' + os.path.basename("
            "os.environ['OUTSIDE']) + '/home/via-dots.txt']:\n"
            "    try:\n        open(path, 'w')\n    except PermissionError as e:\n        print('refused:', e)")
    policy = Policy()
    run = agent_cell(ip, [("Write.", code)], policy)
    assert policy.actions == [f"write {places.outside}/via-link.txt? outside the workspace",
                              f"write {places.home}/via-dots.txt? outside the workspace"]
    output = run.steps[0].output
    assert output.count("refused: Not allowed: the user's approval policy refused this action") == 2
    assert "the test refuses" in output and not list(places.outside.rglob("via-*"))


def test_writes_inside_the_workspace_are_not_asked_even_through_a_link_from_outside(ip, places):
    (places.outside / "into-ws").symlink_to(places.workspace)
    code = ("import os\nfrom pathlib import Path\nPath(os.environ['OUTSIDE'], 'into-ws', 'a.txt').write_text('a')\n"
            "os.makedirs(os.path.join(os.environ['WS'], 'made', 'deep'))\nopen('{WS}/b.txt', 'w').write('b')")
    policy = Policy()
    agent_cell(ip, [("Write inside.", places.fill(code))], policy)
    assert policy.actions == []
    assert (places.workspace / "a.txt").read_text() == "a" and (places.workspace / "b.txt").exists()


def test_the_import_system_caching_a_modules_bytecode_is_not_asked_but_the_agent_writing_there_is(ip, places):
    import sys
    import uuid

    name = f"fresh_{uuid.uuid4().hex[:8]}"
    (places.outside / "lib").mkdir()
    (places.outside / "lib" / f"{name}.py").write_text("X = 42\n")
    code = (f"import os, sys\nsys.path.insert(0, os.path.join(os.environ['OUTSIDE'], 'lib'))\nimport {name}\n"
            f"print({name}.X)\ntry:\n    open(os.path.join(os.environ['OUTSIDE'], 'lib', '__pycache__', 'mine.pyc'), 'wb')\n"
            "except PermissionError:\n    print('refused')")
    policy = Policy()
    path, no_bytecode = list(sys.path), sys.dont_write_bytecode
    sys.dont_write_bytecode = False  # as in a notebook (a test runner may have set it)
    try:
        run = agent_cell(ip, [("Import.", code)], policy)
    finally:
        sys.path[:], sys.dont_write_bytecode = path, no_bytecode
        sys.modules.pop(name, None)
    assert run.steps[0].output == "42\nrefused" and list((places.outside / "lib" / "__pycache__").glob(f"{name}.*.pyc"))
    assert policy.actions == [f"write {places.outside}/lib/__pycache__/mine.pyc? outside the workspace"]


def test_an_approved_action_happens_and_one_answer_covers_the_same_folder_for_the_step(ip, places):
    code = ("import os\nfor name in ['a', 'b', 'c']:\n    open(os.path.join(os.environ['OUTSIDE'], name), 'w').write(name)\n"
            "open(os.path.join(os.environ['HOME'], 'd'), 'w').write('d')")
    policy = Policy(action_answer="y")
    run = agent_cell(ip, [("Write three.", code), ("Again.", code)], policy)
    assert policy.actions == [f"write {places.outside}/a? outside the workspace", f"write {places.home}/d? outside the workspace"] * 2
    assert sorted(p.name for p in places.outside.iterdir() if p.is_file()) == ["a", "b", "c", "victim.txt"]
    assert [e["decision"] for e in run.approvals if e.get("action")] == ["approved"] * 4


def test_a_rule_the_user_approved_for_the_block_is_not_asked_again_at_run_time(ip, places):
    code = f"import os\nos.remove({str(places.victim)!r})"  # the preview names os.remove: the user said yes
    policy = Policy()
    agent_cell(ip, [("Remove.", code)], policy)
    assert policy.actions == [] and not places.victim.exists()


def test_the_rules_switched_off_are_not_asked_at_run_time(ip, places):
    code = "import os\nopen(os.path.join(os.environ['OUTSIDE'], 'off.txt'), 'w').write('x')"
    policy = Policy()
    agent_cell(ip, [("Write.", code)], policy, flags="--approve policy --approve-rules=-writes_outside_workspace")
    assert policy.actions == [] and (places.outside / "off.txt").exists()


def test_never_asks_nothing_and_installs_nothing_new(ip, places):
    code = "import os\nopen(os.path.join(os.environ['OUTSIDE'], 'never.txt'), 'w').write('x')"
    run = agent_cell(ip, [("Write.", code)], Policy(), flags="")
    assert run.approvals == [] and (places.outside / "never.txt").exists()


def test_the_users_thread_writing_while_a_run_runs_is_never_asked(ip, places):
    stop, written = threading.Event(), []

    def users_logger():
        while not stop.is_set():
            path = places.outside / f"user-{len(written)}.log"
            path.write_text("mine")
            written.append(path)
            time.sleep(0.02)

    logger = threading.Thread(target=users_logger, daemon=True)
    logger.start()
    try:
        policy = Policy()
        agent_cell(ip, [("Wait.", "import time\ntime.sleep(0.5)\nprint('waited')")], policy)
    finally:
        stop.set()
        logger.join(5)
    assert policy.actions == [] and len(written) > 5


def test_the_question_waits_outside_the_time_limit_and_is_in_the_record(ip, places, monkeypatch, tmp_path):
    answers = []

    def slow_input(prompt=""):
        answers.append(prompt)
        time.sleep(1.5)
        return "n not there"

    monkeypatch.setattr(builtins, "input", slow_input)
    code = "import os\ntry:\n    open(os.path.join(os.environ['OUTSIDE'], 'slow.txt'), 'w')\nexcept PermissionError:\n    print('ok')"
    run = agent_cell(ip, [("Write.", code)], None, flags="--approve risky --timeout 1")
    assert run.steps[0].output == "ok" and answers == ["Allow it? [y]es / [n]o [reason] / [a]ll the rest / [q]uit the run: "]
    record = json.loads((tmp_path / ".deepagent" / "runs" / f"{run.id}.json").read_text())
    (entry,) = record["approvals"]
    assert entry["action"] == f"write {places.outside}/slow.txt? outside the workspace" and entry["who"] == "user"
    assert entry["note"] == "not there" and run.waited_seconds >= 1.5


def test_q_at_a_runtime_question_stops_the_run(ip, places, monkeypatch):
    monkeypatch.setattr(builtins, "input", lambda prompt="": "q")
    code = "import os\nopen(os.path.join(os.environ['OUTSIDE'], 'q.txt'), 'w')\nprint('never')"
    run = agent_cell(ip, [("Write.", code), ("Never.", "never = 1")], None, flags="--approve risky")
    assert run.status == "stopped" and "never" not in ip.user_ns and not (places.outside / "q.txt").exists()


def test_without_stdin_a_runtime_question_is_refused_at_once(ip, places, monkeypatch, capsys):
    from IPython.core.error import StdinNotImplementedError

    def no_stdin(prompt=""):
        raise StdinNotImplementedError("no stdin")

    monkeypatch.setattr(builtins, "input", no_stdin)
    code = "import os\ntry:\n    open(os.path.join(os.environ['OUTSIDE'], 'ns.txt'), 'w')\nexcept PermissionError as e:\n    print(e)"
    run = agent_cell(ip, [("Write.", code)], None, flags="--approve risky")
    assert "no one can answer here" in run.steps[0].output and not (places.outside / "ns.txt").exists()
    assert "wants to write" in capsys.readouterr().out


def test_a_thread_the_agent_leaves_running_is_not_asked_once_its_run_has_ended(ip, places):
    code = ("import os, threading, time\ngo = threading.Event()\n"
            "def later():\n    go.wait(10)\n    open(os.path.join(os.environ['OUTSIDE'], 'later.txt'), 'w').write('x')\n"
            "left = threading.Thread(target=later)\nleft.start()")
    policy = Policy()
    agent_cell(ip, [("Leave a thread.", code)], policy)
    ip.user_ns["go"].set()
    ip.user_ns["left"].join(10)
    assert policy.actions == [] and (places.outside / "later.txt").exists()
    assert os.environ["OUTSIDE"] == str(places.outside)
