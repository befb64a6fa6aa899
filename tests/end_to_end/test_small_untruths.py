"""Small things the agent and the cell said that were not true (issue 28, item 7), each held to the truth:
a summary that says "created" of names a run only imported, a follow-up told its names survive "unless the
kernel restarted" after a resume brought them back, a tool line whose "them" refers to nothing, a cost that
is "unknown" on screen and 0.0 in ``run.usage``, and a resume that leaves the ``--out`` result behind."""

from __future__ import annotations

import re

import pytest

from deepagent_magics import ScriptedLM
from deepagent_magics.core.run import conversations as threads
from deepagent_magics.core.run.run import Usage
from deepagent_magics.display.markup import usage_parts
from deepagent_magics.tools.delegation.subagent import SubAgent

IMPORTS = ("Fit.", "from statistics import mean, median\nimport json as js\nfrom collections import Counter\n"
                   "totals = Counter('abca')\nmean_total = mean(totals.values())")


@pytest.fixture(autouse=True)
def fresh_threads(monkeypatch, _shell):
    monkeypatch.setattr(_shell.magics_manager.registry["DeepAgentMagics"], "runs", [])
    monkeypatch.setattr(threads, "_threads", {})
    monkeypatch.setattr(threads, "_thread_of_run", {})
    yield
    _shell.magics_manager.registry["DeepAgentMagics"].__dict__.pop("resumed", None)


def _restart(ip, monkeypatch, names):
    core = ip.magics_manager.registry["DeepAgentMagics"]
    monkeypatch.setattr(core, "runs", [])
    monkeypatch.setattr(threads, "_threads", {})
    monkeypatch.setattr(threads, "_thread_of_run", {})
    for name in names:
        ip.user_ns.pop(name, None)


def test_the_summary_and_the_next_turn_do_not_call_imported_names_created(ip, capsys):
    ip.user_ns["lm"] = ScriptedLM([IMPORTS, ("Done.", "SUBMIT(result=str(mean_total))")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nAverage the letters").raise_error()
    summary = [line for line in capsys.readouterr().out.splitlines() if line.startswith("deepagent: this run")]
    assert summary == ["deepagent: this run created totals, mean_total (%deepagent_why NAME says how; "
                       "%deepagent_undo takes the run back)"]  # not mean, median, Counter, js
    ip.user_ns["lm"] = ScriptedLM([("See.", "SUBMIT(result=context)")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0 --continue --out seen\nAnd the median?").raise_error()
    seen = ip.user_ns["seen"]
    created = re.search(r"names created: (.*)", seen).group(1)
    assert "totals (Counter)" in created and "mean_total" in created and "mean" not in created.replace("mean_total", "")
    assert re.search(r"imported: (.*)", seen).group(1).split(", ") == ["mean", "median", "Counter"]


def test_after_a_resume_the_follow_up_is_told_which_names_are_defined(ip, monkeypatch):
    ip.user_ns["lm"] = ScriptedLM([("Make.", "kept_total = 41 + 1\nother = [1, 2]"), ("Done.", "SUBMIT(result='42')")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nmake the total").raise_error()
    ip.run_line_magic("deepagent_checkpoint", "t1")
    _restart(ip, monkeypatch, ["kept_total", "other", "_deepagent_run"])
    ip.run_line_magic("deepagent_resume", "t1")
    ip.user_ns["lm"] = ScriptedLM([("See.", "SUBMIT(result=context)")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0 --continue --out seen\nuse the total").raise_error()
    head = ip.user_ns["seen"].splitlines()[0]
    assert "unless the kernel restarted" not in head and "the names they made are defined" in head

    _restart(ip, monkeypatch, ["kept_total", "seen", "_deepagent_run"])  # a restart with no resume: say what is gone
    ip.user_ns["lm"] = ScriptedLM([("See.", "SUBMIT(result=context)")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0 --continue --out seen\nuse the total again").raise_error()
    head = ip.user_ns["seen"].splitlines()[0]
    assert "of the names they made, kept_total is not defined now" in head, head


def test_a_tool_shown_without_its_partner_says_what_it_acts_on():
    """The reviewer is offered ``recall`` without ``remember``: its line must not lean on the line it lost."""
    text = SubAgent(profile="reviewer", depth=1, max_depth=2).prompt_instructions
    lines = {match.group(1): match.group(2) for match in re.finditer(r"^- `(\w+)\([^`]*\)`: (.*)$", text, re.M)}
    assert "recall" in lines and "remember" not in lines
    dangling = re.compile(r"^(search them|read one|many at once|several at once|your plan)\b", re.I)
    assert [name for name, doc in lines.items() if dangling.match(doc)] == []


def test_a_cost_no_call_priced_is_unknown_in_the_usage_too():
    usage = Usage()
    usage.add(10, 5, cost=None)
    usage.add(10, 5, cost=None)
    assert usage.cost is None and usage.cost_text() == "cost unknown" and "cost=None" in repr(usage)
    assert usage.to_dict()["cost"] is None and Usage.from_dict(usage.to_dict()).cost is None
    usage.add(10, 5, cost=0.25)  # one priced call: the priced part is known, the rest is said
    assert usage.cost == 0.25 and usage.cost_text() == "$0.2500 + 2 unpriced calls"
    free = Usage()
    assert free.cost == 0.0 and free.cost_text() == "$0.0000"  # no call: nothing spent


def test_a_run_on_an_unpriced_model_shows_and_keeps_the_same_cost(ip):
    ip.user_ns["lm"] = ScriptedLM([("Done.", "SUBMIT(result='ok')")])  # a scripted LM prices nothing
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nsay ok").raise_error()
    run = ip.user_ns["_deepagent_run"]
    assert run.usage.cost is None and "cost unknown" in usage_parts(run)
    assert run.to_dict()["usage"]["cost"] is None


def test_resume_restores_the_out_variable_of_the_checkpointed_run(ip, monkeypatch, capsys):
    ip.user_ns["lm"] = ScriptedLM([("Make.", "made = 7"), ("Done.", "SUBMIT(result='**seven**')")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0 --out t1\nmake seven").raise_error()
    ip.run_line_magic("deepagent_checkpoint", "c1")
    _restart(ip, monkeypatch, ["made", "t1", "_deepagent_run"])
    ip.run_line_magic("deepagent_resume", "c1")
    assert ip.user_ns["t1"] == "**seven**" and ip.user_ns["made"] == 7
    assert "(made, t1)" in capsys.readouterr().out
