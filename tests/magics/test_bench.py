"""magics/bench.py: ``%deepagent_bench``: the quality benchmark from the notebook; a mistake is one line first."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tuning.bench_report import BenchReport


@pytest.mark.parametrize("line, says", [
    ("nope --lm lm", "unknown suite 'nope'"),
    ("sklearn --lm lm --limit 0", "--limit must be a whole number of tasks"),
    ("sklearn --lm lm --threads 0", "--threads must be a whole number"),
    ("sklearn --lm lm --baselines nope", "unknown baseline nope"),
    ("sklearn --lm lm --out print", "would hide Python's builtin print"),
    ("sklearn --lm lm --where =x", "KEY=VALUE"),
    ("sklearn --lm lm --profile nope", "unknown profile 'nope'"),
    ("sklearn --lm lm --resume", "--resume takes the answers an earlier run kept in --save"),
])
def test_a_mistake_is_one_usage_error_line_before_anything_runs(ip, line, says):
    ip.user_ns["lm"] = ScriptedLM([("x", "SUBMIT(result='1')")])
    with pytest.raises(UsageError, match=says) as caught:
        ip.run_line_magic("deepagent_bench", line)
    assert type(caught.value) is UsageError
    assert "_deepagent_bench" not in ip.user_ns


def test_the_offline_suite_runs_with_the_configured_agent_and_stores_the_table(ip, tmp_path):
    ip.user_ns["lm"] = ScriptedLM([("Answer.", "SUBMIT(result='no idea')")])
    report = ip.run_line_magic("deepagent_bench", f"sklearn --lm lm --limit 1 --threads 1 --out table "
                                                  f"--save {tmp_path / 'bench'}")
    assert isinstance(report, BenchReport)
    assert ip.user_ns["table"] is report and ip.user_ns["_deepagent_bench"] is report
    assert len(report.rows) == 1 and report.rows[0]["system"] == "deep agent"
    assert any(name.endswith(".md") for name in report.files) and (tmp_path / "bench").is_dir()
    again = ip.run_line_magic("deepagent_bench", f"sklearn --lm lm --limit 1 --threads 1 --save {tmp_path / 'bench'} "
                                                 f"--resume")
    assert again.resumed.startswith("1 of 1 tasks") and again.rows == report.rows  # nothing asked again


def test_an_interrupted_run_stores_the_table_of_what_it_did(ip, tmp_path, monkeypatch, capsys):
    """A kernel interrupt an hour in leaves the table of the answers done, not a lost hour."""
    from deepagent_magics.tuning import bench
    from tests.tuning.test_bench import interrupted_on

    monkeypatch.setattr(bench, "systems_for", interrupted_on("group-1"))
    ip.user_ns["lm"] = ScriptedLM([("Answer.", "SUBMIT(result='no idea')")])
    report = ip.run_line_magic("deepagent_bench", f"sklearn --lm lm --where half=dev --limit 2 --baselines cot "
                                                  f"--threads 1 --out table --save {tmp_path / 'bench'}")
    assert report.stopped == "after 2 of 4 answers" and ip.user_ns["table"] is report
    assert [row["task_id"] for row in report.rows] == ["agg-1", "agg-1"]
    assert "deepagent_bench: stopped after 2 of 4 answers" in capsys.readouterr().out
