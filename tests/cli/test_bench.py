"""cli/bench.py: ``deepagent bench SUITE``: the table on stdout, one line and status 2 for bad input."""

from __future__ import annotations

import json

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
