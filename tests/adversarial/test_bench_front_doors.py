"""The quality benchmark's front doors: ``deepagent bench``, ``%deepagent_bench`` and ``run_suite``.

They run a suite end to end (offline, from a synthetic copy in a temporary cache) and write the
table; every mistake (an unknown suite or baseline, a limit or thread count below 1, no model,
a suite that cannot be had: no package, offline, a cut-short download) is one line, and nothing runs.
"""

from __future__ import annotations

import json
import sys

import pytest
from IPython.core.error import UsageError

from deepagent_magics.cli import main
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tuning import bench
from deepagent_magics.tuning.suites import (
    SuiteUnavailable,
    UnknownSuite,
    get_suite,
    hub,
)

from tests.adversarial import bench_data

MEAN = "rows = test_ave.to_dict('records') if hasattr(test_ave, 'to_dict') else test_ave\n" \
       "m = sum(float(r['Fare']) for r in rows) / len(rows)\nSUBMIT(result=f'@mean_fare[{m:.2f}]')"
STATS = "rows = t_2014_q4.to_dict('records') if hasattr(t_2014_q4, 'to_dict') else t_2014_q4\n" \
        "v = [float(r['Close Price']) for r in rows]\nSUBMIT(result=f'@mean_close_price[{sum(v)/len(v):.2f}] " \
        "@max_close_price[{max(v):g}]')"


def policy(request):
    return ("Compute.", MEAN if "mean fare" in request.task else STATS)


def test_the_command_line_runs_a_suite_and_writes_the_table(tmp_path, capsys):
    bench_data.dabench(tmp_path / "cache")
    script = tmp_path / "steps.json"
    script.write_text(json.dumps({"scripts": {"mean fare": [["Compute.", MEAN]], "Close Price": [["Compute.", STATS]]},
                                  "replies": {"": {"reasoning": "Guess.", "result": "@mean_fare[1]"}}}))
    status = main(["bench", "dabench", "--lm", f"scripted:{script}", "--baselines", "cot", "--threads", "1",
                   "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out"), "--quiet"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert out.startswith("## InfiAgent-DABench (dev): 2 tasks")
    assert "| deep agent | 100.0% (2 scored) |" in out and "| cot | 0.0% (2 scored) |" in out
    assert (tmp_path / "out/dabench-dev.md").read_text() == out
    assert json.loads((tmp_path / "out/dabench-dev.json").read_text())["summary"]["deep agent"]["accuracy"] == 1.0
    assert "evaluating" not in err and "bench dabench:" not in err and "wrote" in err  # --quiet: no progress


def test_the_command_line_says_when_every_task_failed(tmp_path, capsys, monkeypatch):
    from deepagent_magics.cli import bench as cli_bench

    def no_key(request):
        raise RuntimeError("AuthenticationError: invalid api key")

    monkeypatch.setattr(cli_bench, "model_maker", lambda spec, *args, **kwargs: lambda: ScriptedLM(no_key))
    bench_data.dabench(tmp_path / "cache")
    status = main(["bench", "dabench", "--lm", "openai/gpt-4o-mini", "--cache-dir", str(tmp_path / "cache"),
                   "--out", str(tmp_path / "out"), "--quiet"])
    out, err = capsys.readouterr()
    assert status == 1 and "| deep agent | 0.0% (2 scored) |" in out and "| 2/2 |" in out  # the table all the same
    assert "deepagent bench: every task failed; the first: " in err and "invalid api key" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv, expected", [
    (["bench", "nope"], "unknown suite 'nope'; choose one of: dabstep, dabench, oolong, sklearn"),
    (["bench", "dabench", "--limit", "0"], "--limit: must be positive, got 0"),
    (["bench", "dabench", "--limit", "-1"], "--limit: must be positive, got -1"),
    (["bench", "dabench", "--limit", "many"], "--limit: 'many' is not a whole number"),
    (["bench", "dabench", "--threads", "0"], "--threads: must be positive, got 0"),
    (["bench", "dabench", "--baselines", "cot,langchain"], "unknown baseline langchain; choose from: cot, react, rlm"),
    (["bench", "dabench"], "no model"),
    (["bench", "dabench", "--lm", "gpt4"], "is not a model id"),
    (["bench", "dabench", "--lm", "openai/gpt-4o-mini", "--split", "test"], "dabench has no split 'test'"),
    (["bench", "dabench", "--where", "level"], "--where 'level': write KEY=VALUE"),
    (["bench", "dabench", "--lm", "openai/gpt-4o-mini", "--where", "level=expert"], "no dabench task in the dev split"),
])
def test_command_line_mistakes_are_one_line(argv, expected, capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("DEEPAGENT_LM", raising=False)
    bench_data.dabench(tmp_path / "cache")
    status = main(argv + ["--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err.startswith("deepagent: error: ") and expected in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()  # nothing ran


def test_a_suite_not_downloaded_without_huggingface_hub_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # not installed
    status = main(["bench", "dabstep", "--lm", "openai/gpt-4o-mini", "--cache-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert "needs huggingface_hub: pip install 'deepagent-magics[quality]'" in err and str(tmp_path / "dabstep") in err


def test_offline_download_is_one_line_naming_where_to_put_the_files(tmp_path, monkeypatch):
    import huggingface_hub

    def offline(**kwargs):
        raise ConnectionError("Failed to resolve 'huggingface.co'\n(a long traceback-like tail)")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(SuiteUnavailable) as caught:
        get_suite("dabench").load(tmp_path)
    message = str(caught.value)
    assert "\n" not in message and "ConnectionError: Failed to resolve 'huggingface.co'" in message
    assert f"put its files in {tmp_path / 'dabench'}" in message


def test_a_download_that_leaves_files_missing_is_one_line(tmp_path, monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda **kwargs: str(tmp_path))  # "succeeded", no files
    with pytest.raises(SuiteUnavailable, match="the download did not produce the expected files"):
        get_suite("dabstep").load(tmp_path)


def test_oolong_without_datasets_and_a_cut_short_download(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(SuiteUnavailable, match=r"needs the datasets package: pip install 'deepagent-magics\[quality\]'"):
        get_suite("oolong").load(tmp_path)

    def rows():
        yield {"id": 1, "context_window_text": "x", "question": "q", "answer": "[1]"}
        raise ConnectionError("connection reset")

    monkeypatch.setattr(hub, "dataset_rows", lambda *args, **kwargs: rows())
    monkeypatch.setattr("deepagent_magics.tuning.suites.oolong.dataset_rows", lambda *args, **kwargs: rows())
    with pytest.raises(ConnectionError):
        get_suite("oolong").load(tmp_path)
    assert not (tmp_path / "oolong/oolong-synth/validation.jsonl").exists()  # half a split never passes for one


@pytest.mark.parametrize("kwargs, error, expected", [
    ({"suite": "DABSTEPP"}, UnknownSuite, "unknown suite 'DABSTEPP'"),
    ({"suite": "dabench", "limit": 0}, bench.BenchError, "--limit must be a whole number of tasks, 1 or more, got 0"),
    ({"suite": "dabench", "limit": -1}, bench.BenchError, "got -1"),
    ({"suite": "dabench", "limit": 2.5}, bench.BenchError, "got 2.5"),
    ({"suite": "dabench", "limit": True}, bench.BenchError, "got True"),
    ({"suite": "dabench", "threads": 0}, bench.BenchError, "--threads must be a whole number, 1 or more, got 0"),
    ({"suite": "dabench", "baselines": ["cot", "langgraph"]}, bench.BenchError, "unknown baseline langgraph"),
])
def test_the_python_function_refuses_bad_arguments_before_running(kwargs, error, expected, tmp_path):
    with pytest.raises(error, match=expected.replace("(", r"\(").replace("'", "'")):
        bench.run_suite(lm=ScriptedLM(policy), cache_dir=tmp_path, **kwargs)


def test_the_magic_runs_a_suite_stores_and_saves_the_table(ip, tmp_path, capsys):
    bench_data.dabench(tmp_path / "cache")
    ip.user_ns["lm"] = ScriptedLM(policy, replies={"": {"reasoning": "Guess.", "result": "@mean_fare[3]"}})
    report = ip.run_line_magic("deepagent_bench", f"dabench --lm lm --baselines cot --threads 2 "
                                                  f"--cache-dir {tmp_path / 'cache'} --save {tmp_path / 'saved'} --out table")
    assert ip.user_ns["table"] is report and ip.user_ns["_deepagent_bench"] is report
    assert report.summary()["deep agent"]["accuracy"] == 1.0 and report.summary()["cot"]["accuracy"] == 0.0
    assert (tmp_path / "saved/dabench-dev.md").read_text() == report._repr_markdown_()
    assert "deepagent_bench: wrote" in capsys.readouterr().out
    assert "test_ave" not in ip.user_ns  # each task ran in a fresh namespace, not the notebook's


def _one_line_usage_error(ip, line):
    result = ip.run_cell(f"%deepagent_bench {line}")
    error = result.error_in_exec or result.error_before_exec
    assert type(error) is UsageError, f"{type(error).__name__}: {error}"
    assert "\n" not in str(error).strip()
    return str(error)


@pytest.mark.parametrize("line, expected", [
    ("nope --lm lm", "unknown suite 'nope'"),
    ("dabench --lm lm --limit 0", "--limit must be a whole number of tasks, 1 or more, got 0"),
    ("dabench --lm lm --limit -1", "got -1"),
    ("dabench --lm lm --threads 0", "--threads must be a whole number, 1 or more, got 0"),
    ("dabench --lm lm --baselines cot,,nope", "unknown baseline nope"),
    ("dabench --lm lm --out 1table", "is not a valid variable name"),
    ("dabench --lm lm --out _deepagent_bench", "choose another"),
    ("dabench --lm lm --split test", "dabench has no split 'test'"),
    ("dabench --lm lm --where =hard", "write KEY=VALUE"),
    ("dabench --lm lm --where nope=1", "dabench tasks have no 'nope' to select on"),
    ("dabench", "No LM configured"),
])
def test_magic_mistakes_are_one_usage_error_line(ip, tmp_path, line, expected):
    bench_data.dabench(tmp_path / "cache")
    ip.user_ns["lm"] = ScriptedLM(policy)
    message = _one_line_usage_error(ip, f"{line} --cache-dir {tmp_path / 'cache'}")
    assert expected in message, message
    assert "_deepagent_bench" not in ip.user_ns


def test_magic_offline_suite_is_one_usage_error_line(ip, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    ip.user_ns["lm"] = ScriptedLM(policy)
    message = _one_line_usage_error(ip, f"dabstep --lm lm --cache-dir {tmp_path}")
    assert "needs huggingface_hub" in message
