"""cli/bench.py: ``deepagent bench SUITE``: the table on stdout, one line and status 2 for bad input."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from deepagent_magics.cli import main


def test_the_offline_suite_prints_its_table_and_writes_its_files(tmp_path, capsys):
    (tmp_path / "steps.json").write_text(json.dumps({"steps": ["SUBMIT(result='no idea')"]}))
    status = main(["bench", "sklearn", "--lm", f"scripted:{tmp_path / 'steps.json'}", "--limit", "1", "--threads", "1",
                   "--out", str(tmp_path / "out"), "--quiet"])
    out, err = capsys.readouterr()
    assert status == 0 and out.startswith("## scikit-learn datasets (offline) (all): 1 tasks")
    assert "deepagent bench: wrote" in err and (tmp_path / "out" / "sklearn-all.md").is_file()


def test_bad_input_is_one_line_and_status_2(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DEEPAGENT_LM", raising=False)
    for argv, says in [(["bench", "nope", "--lm", "openai/x"], "unknown suite 'nope'"),
                       (["bench", "sklearn", "--lm", "openai/x", "--baselines", "magic"], "unknown baseline magic"),
                       (["bench", "sklearn", "--lm", "openai/x", "--where", "level"], "write KEY=VALUE"),
                       (["bench", "sklearn"], "no model: pass --lm")]:
        import dspy

        with dspy.context(lm=None):
            assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("deepagent: error: ") and says in err, (argv, err)


def test_an_interrupted_run_prints_the_table_of_what_it_did_and_exits_130(tmp_path, capsys, monkeypatch):
    from deepagent_magics.tuning import bench
    from tests.tuning.test_bench import interrupted_on

    monkeypatch.setattr(bench, "systems_for", interrupted_on("group-1"))
    (tmp_path / "steps.json").write_text(json.dumps({"steps": ["SUBMIT(result='no idea')"]}))
    status = main(["bench", "sklearn", "--lm", f"scripted:{tmp_path / 'steps.json'}", "--where", "half=dev",
                   "--limit", "2", "--baselines", "cot", "--threads", "1", "--out", str(tmp_path / "out"), "--quiet"])
    out, err = capsys.readouterr()
    assert status == 130 and out.startswith("## scikit-learn datasets (offline) (all): 1 tasks, ")
    assert "(stopped after 2 of 4 answers)" in out and "| deep agent | 100.0% (1 scored) |" in out
    assert err.startswith("deepagent bench: stopped after 2 of 4 answers; wrote ") and "Traceback" not in err


@pytest.mark.subprocess
def test_ctrl_c_while_the_agents_step_runs_prints_the_table_and_the_files_and_exits_130(tmp_path):
    """The user's ^C, a real SIGINT, comes while the deep agent's code is running in the evaluation's worker
    thread: the table and the line naming the files reach the terminal (not the step's captured output,
    where they went before), and the status is 130."""
    started = tmp_path / "started"
    step = f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\ntime.sleep(3)\nSUBMIT(result='1')"
    (tmp_path / "steps.json").write_text(json.dumps({"steps": [step]}))
    command = [sys.executable, "-m", "deepagent_magics", "bench", "sklearn", "--lm",
               f"scripted:{tmp_path / 'steps.json'}", "--limit", "2", "--threads", "1", "--out", str(tmp_path / "out")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while not started.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), process.communicate(timeout=30)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err[-2000:]
    assert out.startswith("## scikit-learn datasets (offline) (all): 0 tasks") and "(stopped after 0 of 2 answers)" in out
    assert "deepagent bench: stopped after 0 of 2 answers; wrote " in err
    steps = (tmp_path / "out" / "sklearn-all.done.jsonl").read_text()
    assert "scikit-learn datasets" not in steps and "deepagent bench:" not in steps
