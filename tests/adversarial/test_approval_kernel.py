"""Approval through a real Jupyter kernel: the frontend answers the kernel's ``input_request``s.

A `BlockingKernelClient` plays the frontend (as JupyterLab does): it runs ``%%deepagent --approve``
cells with ``allow_stdin=True`` and answers each input request with a scripted answer; with
``allow_stdin=False`` (nbclient, papermill) nothing may ask, so the block is refused and the cell
ends. One kernel serves every case (in order); each case checks the effects inside the kernel.
"""

from __future__ import annotations

import json
import time

import pytest
from tests.kernels import execute, started_kernel

pytestmark = pytest.mark.kernel

SETUP = """
%load_ext deepagent_magics
import json, os
from deepagent_magics.testing import ScriptedLM
%deepagent_config --workspace ws --quiet on
def remover(path, *more):
    return ScriptedLM([("Remove it.", f"import os\\nos.remove({path!r})\\nprint('removed')"), *more,
                       ("Done.", "SUBMIT(result='done')")])
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("approval-kernel")
    with started_kernel(cwd) as (manager, client):
        status, out, prompts = run_cell(client, SETUP, [])
        assert status == "ok", out
        client.manager = manager  # run_cell's INTERRUPT answer presses the stop button
        yield client, cwd


def run_cell(client, code, answers, allow_stdin=True, timeout=120, delay=0.0):
    """Run ``code``; answer each input request with the next answer. Returns (status, stdout, prompts)."""
    answers, prompts = list(answers), []

    def answer(prompt, cell):
        prompts.append(prompt)
        assert answers, f"asked more often than scripted: {cell.output[-2000:]}"
        time.sleep(delay)  # the user thinks
        given = answers.pop(0)
        if given is INTERRUPT:
            client.manager.interrupt_kernel()
            return None
        return given

    cell = execute(client, code, timeout, allow_stdin=allow_stdin, on_input=answer)
    assert not answers, f"scripted answers left unused: {answers}: {cell.output[-2000:]}"
    return cell.status, cell.output, prompts


def facts(client, expression):
    status, out, _ = run_cell(client, f"print(json.dumps({expression}))", [])
    assert status == "ok", out
    return json.loads(out.strip().splitlines()[-1])


def victim(cwd, name):
    cwd.mkdir(exist_ok=True)
    path = cwd / f"{name}.txt"
    path.write_text("keep me")
    return path


def agent_cell(client, path, answers, flags="--approve risky", more="", allow_stdin=True):
    code = f"lm = remover({str(path)!r}{more})\n"
    assert run_cell(client, code, [])[0] == "ok"
    return run_cell(client, f"%%deepagent --lm lm {flags}\ntidy up", answers, allow_stdin=allow_stdin)


def delegating_lm(client, path, then=""):
    """``lm`` in the kernel: a root that delegates, a child that removes ``path`` (then runs ``then``);
    no kernels kept warm (each sub-agent's kernel starts on demand)."""
    scripts = {
        "ROOT": [("Delegate.", "print(delegate('CHILD: remove it'))"), ("Done.", "SUBMIT(result='done')")],
        "CHILD": [("Remove.", f"import os\nos.remove({str(path)!r})" + then), ("Done.", "SUBMIT(result='child done')")],
    }
    assert run_cell(client, f"lm = ScriptedLM(scripts={scripts!r})\n%deepagent_config --pool-size 0", [])[0] == "ok"


RUN = "_deepagent_run"
INTERRUPT = object()


def test_y_runs_the_block(kernel):
    client, cwd = kernel
    path = victim(cwd, "y")
    status, out, prompts = agent_cell(client, path, ["y"])
    assert status == "ok", out
    assert not path.exists() and len(prompts) == 1 and "[y]es" in prompts[0]
    assert "os.remove" in out and "removes_files" in out  # the question showed the code and the reasons
    assert facts(client, f"[{RUN}.status, {RUN}.steps[0].output, {RUN}.approvals[0]['decision']]") == \
        ["finished", "removed", "approved"]


def test_n_with_a_reason_skips_it_and_the_agent_reads_the_reason(kernel):
    client, cwd = kernel
    path = victim(cwd, "n")
    status, out, prompts = agent_cell(client, path, ["n it is precious"])
    assert status == "ok", out
    assert path.exists()
    output, note = facts(client, f"[{RUN}.steps[0].output, {RUN}.approvals[0]['note']]")
    assert output.startswith("Not run") and "it is precious" in output and note == "it is precious"


def test_a_approves_the_rest(kernel):
    client, cwd = kernel
    path, other = victim(cwd, "a1"), victim(cwd, "a2")
    more = ", " + repr(("Again.", f"import os\nos.remove({str(other)!r})"))
    status, out, prompts = agent_cell(client, path, ["a"], more=more)
    assert status == "ok", out
    assert not path.exists() and not other.exists() and len(prompts) == 1
    assert facts(client, f"[e['who'] for e in {RUN}.approvals]") == ["user", "approve-all"]


def test_q_stops_the_run_and_keeps_the_kernel(kernel):
    client, cwd = kernel
    path = victim(cwd, "q")
    status, out, prompts = agent_cell(client, path, ["q"])
    assert status == "ok", out
    assert path.exists() and "stopped" in out
    assert facts(client, f"[{RUN}.status, len({RUN}.steps), 'SUBMIT' in globals()]") == ["stopped", 1, False]


def test_garbage_asks_again_then_y(kernel):
    client, cwd = kernel
    path = victim(cwd, "garbage")
    status, out, prompts = agent_cell(client, path, ["what?", "", "n, y", "y"])
    assert status == "ok", out
    assert not path.exists() and len(prompts) == 4 and "Answer y, n" in out


def test_without_stdin_the_block_is_refused_and_nothing_hangs(kernel):
    client, cwd = kernel
    path = victim(cwd, "nostdin")
    started = time.monotonic()
    status, out, prompts = agent_cell(client, path, [], allow_stdin=False)
    assert status == "ok", out
    assert time.monotonic() - started < 60 and prompts == []
    assert path.exists() and "no stdin" in out
    assert facts(client, f"[{RUN}.status, {RUN}.approvals[0]['who']]") == ["finished", "no stdin"]


def test_a_subagents_block_asks_the_same_user_labelled_with_the_subagent(kernel):
    client, cwd = kernel
    path = victim(cwd / "ws", "child")  # a sub-agent writes only its workspace (its sandbox)
    delegating_lm(client, path)
    # The root's delegate() is risky too (it costs money): approve it, then refuse the child's block.
    status, out, prompts = run_cell(
        client, "%%deepagent --lm lm --approve risky --max-depth 1\nROOT: have a child remove it",
        ["y", "n not you either"])
    assert status == "ok", out
    assert path.exists() and len(prompts) == 2
    assert "sub-agent" in out and "CHILD: remove it" in out
    child = facts(client, f"[{RUN}.children[0].approvals[0]['agent'], {RUN}.children[0].steps[0].output]")
    assert child[0].startswith("sub-agent ") and "not you either" in child[1]
    record = facts(client, f"json.load(open(os.path.join('ws', '.deepagent', 'runs', {RUN}.id + '.json')))"
                           "['steps'][0]['children'][0]['approvals']")
    assert record[0]["decision"] == "refused" and record[0]["who"] == "user"


def test_a_slow_answer_counts_against_neither_the_block_nor_the_subagents_time_limit(kernel):
    client, cwd = kernel
    path = victim(cwd / "ws", "slow")  # a sub-agent writes only its workspace (its sandbox)
    delegating_lm(client, path, then="\nprint('gone')")
    status, out, prompts = run_cell(
        client, "%%deepagent --lm lm --approve risky --approve-rules=-subagents --max-depth 1 --timeout 1.5 "
                "--subagent-timeout 10\nROOT: have a child remove it", ["y"], delay=12.0)  # 10 s: a kernel's start
    assert status == "ok", out
    assert not path.exists() and len(prompts) == 1
    child = facts(client, f"[{RUN}.children[0].status, {RUN}.children[0].steps[0].output, {RUN}.children[0].result, "
                          f"{RUN}.waited_seconds >= 12]")
    assert child == ["finished", "gone", "child done", True]


def test_the_stop_button_during_a_subagents_question_ends_the_cell_and_keeps_the_kernel(kernel):
    client, cwd = kernel
    path = victim(cwd / "ws", "interrupt")  # a sub-agent writes only its workspace (its sandbox)
    delegating_lm(client, path)
    status, out, prompts = run_cell(
        client, "%%deepagent --lm lm --approve risky --approve-rules=-subagents --max-depth 1\nROOT: go", [INTERRUPT],
        timeout=60)
    assert status == "error" and "KeyboardInterrupt" in out and len(prompts) == 1
    assert path.exists()
    assert facts(client, f"[{RUN}.status, {RUN}.children[0].status]") == ["interrupted", "interrupted"]
    assert facts(client, "1 + 1") == 2
