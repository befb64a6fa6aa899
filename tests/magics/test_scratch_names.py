"""Scratch names: `_`-named variables a run made are gone when it ends; the cell's summary names the results a run
made, not its loop variables; ``{name}`` in a cell expands only the names the user defined, and says so."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from deepagent_magics.testing import ScriptedLM

WORK = ("Work.", "_tmp = [1, 2, 3]\n__pragma = 1\ntotals = {}\nfor k in range(3):\n    totals[k] = k * 2\n"
        "import statistics\nwith open(__file__ if False else '/dev/null') as fh:\n    pass\nmean_total = sum(totals.values()) / 3")


def test_scratch_names_go_at_the_end_and_the_summary_names_the_results(ip, capsys):
    ip.user_ns["_mine"] = "the user's own underscore name"
    ip.user_ns["lm"] = ScriptedLM([WORK, ("Done.", "SUBMIT(result=str(mean_total))")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nAverage").raise_error()
    ns = ip.user_ns
    assert "_tmp" not in ns and "__pragma" not in ns  # the run's scratch is gone ...
    assert ns["_mine"] == "the user's own underscore name"  # ... the user's own `_` names stay
    assert ns["totals"] == {0: 0, 1: 2, 2: 4} and ns["mean_total"] == 2.0 and ns["k"] == 2
    summary = [line for line in capsys.readouterr().out.splitlines() if line.startswith("deepagent: this run created")]
    assert summary == ["deepagent: this run created totals, mean_total (%deepagent_why NAME says how; "
                       "%deepagent_undo takes the run back)"]  # not k, fh, statistics, _tmp
    ip.run_line_magic("deepagent_why", "_tmp")
    assert "a `_`-named scratch variable: taken away when the run ended" in capsys.readouterr().out


def test_braces_expand_only_the_users_names_and_the_cell_says_what_it_expanded(ip, capsys):
    ip.user_ns["lm"] = ScriptedLM([("Make f.", "f = 'sex'\nrows = 3"), ("Done.", "SUBMIT(result='ok')")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nmake f").raise_error()
    ip.user_ns["region"] = "North"
    capsys.readouterr()
    ip.user_ns["lm"] = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nFor {region}, format like {f} -> r; keep {{x}} and {}").raise_error()
    assert ip.user_ns["_deepagent_run"].task.strip() == "For North, format like {f} -> r; keep {x} and {}"
    out = capsys.readouterr().out.splitlines()
    assert "deepagent: expanded {region} (str); left {f} as written (an agent run made it, not you)" in out
    ip.user_ns["f"] = "mine now"  # the user rebinds it: now it is theirs
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nuse {f}").raise_error()
    assert ip.user_ns["_deepagent_run"].task.strip() == "use mine now"
    del ip.user_ns["f"]
    ip.user_ns["maker"] = ScriptedLM([("Make f.", "f = 'sex'"), ("Done.", "SUBMIT(result='ok')")])
    ip.run_cell("%%deepagent --lm maker --max-depth 0\nmake f").raise_error()  # an agent's again ...
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nuse {f}").raise_error()
    assert ip.user_ns["_deepagent_run"].task.strip() == "use {f}"
    ip.run_cell("f = 'sex'")  # ... then a cell of the user's sets it to the very object the agent left
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nuse {f}").raise_error()
    assert ip.user_ns["_deepagent_run"].task.strip() == "use sex"


def test_an_unknown_name_in_braces_is_still_one_usage_error(ip):
    ip.user_ns["lm"] = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
    with pytest.raises(UsageError, match=r"\{nowhere\} in the cell is not a notebook variable"):
        ip.run_cell_magic("deepagent", "--lm lm", "use {nowhere}")


def test_the_scratch_prefix_the_prompt_gives_is_one_no_name_in_the_notebook_has(ip):
    ip.user_ns["_tmp_rows"] = "the user's own"  # the usual prefix is taken: the run gives another
    ip.user_ns["lm"] = lm = ScriptedLM([("Work.", "_tmp2_y = [1, 2]\ntotal = sum(_tmp2_y)"), ("Done.", "SUBMIT(result='3')")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nAdd").raise_error()
    system = lm.requests[0]["system"]
    assert "Throwaway names start with `_tmp2_` (removed at the end)" in system and "`_tmp_`" not in system
    assert "_tmp2_y" not in ip.user_ns and ip.user_ns["total"] == 3 and ip.user_ns["_tmp_rows"] == "the user's own"


def test_ipythons_own_names_are_put_back_silently_and_never_called_the_users(ip, capsys):
    ip.run_cell("41 + 1", store_history=True)  # IPython's output history: _, _1 (or the next number), _i, _oh ...
    ip.user_ns["_r"] = "the user's"
    number = ip.execution_count - 1
    before = {name: ip.user_ns[name] for name in ("_", "_i", "_ii", "_oh", f"_{number}", f"_i{number}")}
    code = (f"_i = 'scratch'\n_ii = 1\n_ = 2\n_oh = {{}}\n_{number} = 'mine'\n_i{number} = 'mine too'\n"
            "_r = 'the agent reused it'\nkept = 1")
    ip.user_ns["lm"] = ScriptedLM([("Scratch.", code), ("Done.", "SUBMIT(result='ok')")])
    ip.run_cell("%%deepagent --lm lm --max-depth 0\nScratch").raise_error()
    run = ip.user_ns["_deepagent_run"]
    assert all(ip.user_ns[name] is value for name, value in before.items())  # IPython's, back as they were
    assert ip.user_ns["_r"] == "the user's" and list(run.reverted) == ["_r"]  # only the user's name is theirs
    out = capsys.readouterr().out
    assert "deepagent: restored your variables _r;" in out and "_i" not in out.split("restored your variables")[1]
