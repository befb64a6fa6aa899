"""tuning/quality_tables.py: docs/quality.md's tables made from a benchmark's result file: accuracy overall, per half
and per kind, tokens per task and per solved task, how each answer ended, the issue's goal checked, the machine."""

from __future__ import annotations

import json

from deepagent_magics.tuning.bench_report import BenchReport
from deepagent_magics.tuning.quality_tables import main, quality_markdown


def row(system, task, score, half, kind, ending=None, prompt=1000, completion=100, error=None):
    return {"system": system, "task_id": task, "score": score, "scored": True, "answer": "x", "error": error,
            "tokens": prompt + completion, "prompt_tokens": prompt, "completion_tokens": completion, "cost": None,
            "seconds": 60.0, "steps": 1 if system == "cot" else 3, "ending": ending, "half": half, "kind": kind}


def report():
    """cot: 1 of 4 right, cheaply; the deep agent: 3 of 4 (two by SUBMIT, one by a stall), 4,000 tokens read a task."""
    rows = [row("cot", "a", 1.0, "dev", "aggregate", prompt=300, completion=50),
            row("cot", "b", 0.0, "dev", "model", prompt=300, completion=50),
            row("cot", "c", 0.0, "held-out", "aggregate", prompt=300, completion=50),
            row("cot", "d", 0.0, "held-out", "model", prompt=300, completion=50),
            row("deep agent", "a", 1.0, "dev", "aggregate", "SUBMIT", prompt=4000),
            row("deep agent", "b", 1.0, "dev", "model", "SUBMIT", prompt=4000),
            row("deep agent", "c", 1.0, "held-out", "aggregate", "stall", prompt=4000),
            row("deep agent", "d", 0.0, "held-out", "model", "failure", prompt=4000, error="Stalled: ...")]
    made = BenchReport("sklearn", "sklearn", "all", "local", "accuracy", ["cot", "deep agent"], rows,
                       started="2026-11-27T12:00:00+00:00")
    made.machine = {"wall_seconds": 1800.0, "cpu_seconds": 2400.0, "cpus": 2, "load_mean": 5.25, "load_min": 3.0,
                    "load_max": 8.5}
    return made


def test_the_tables_say_accuracy_per_half_and_kind_tokens_per_solved_task_and_endings():
    text = quality_markdown(report())
    assert "| system | accuracy (4) | dev (2) | held-out (2) | steps / task |" in text
    # cot: 1,200 read over 1 solved; the deep agent: 16,000 read and 400 written over 3 solved (16,400 / 3 against
    # 1,400 / 1: 3.90 times the tokens per solved task, in the goal below).
    assert "| cot | 25% | 50% | 0% | 1.0 | 300 | 50 | 1,200 | 200 | 60 | 0/4 |" in text
    assert "| deep agent | 75% | 100% | 50% | 3.0 | 4,000 | 100 | 5,333 | 133 | 60 | 1/4 |" in text
    assert "| aggregate | 2 | 1/2 | 2/2 |" in text and "| model | 2 | 0/2 | 1/2 |" in text
    assert "| system | SUBMIT | stall | failure | right answers by SUBMIT |" in text
    assert "| deep agent | 2 | 1 | 1 | 2 of 3 |" in text and "| cot |" not in text.split("How each answer")[1]
    assert "The run: 2026-11-27T12:00:00+00:00, local, 30 minutes, 40 CPU minutes in its process; load average " \
           "5.2 on 2 cores (3.0–8.5)." in text


def test_the_goal_is_checked_against_the_best_baseline_on_all_tasks_and_each_half():
    text = quality_markdown(report())
    assert "- all: accuracy 75% against cot's 25% (met); tokens per solved task 3.90× cot's (not met); " \
           "2 of 3 right answers by `SUBMIT` (met)" in text
    assert "- held-out: accuracy 50% against cot's 0% (met); tokens per solved task: n/a (nothing solved); " \
           "0 of 1 right answers by `SUBMIT` (not met)" in text


def test_the_command_reads_a_written_result_file_and_refuses_anything_else(tmp_path, capsys):
    made = report()
    made.write(tmp_path)
    assert main([str(tmp_path / "sklearn-all.json")]) == 0
    assert capsys.readouterr().out == quality_markdown(made)
    assert main([str(tmp_path / "missing.json")]) == 2 and main([]) == 2
    assert "usage: python -m deepagent_magics.tuning.quality_tables RESULTS.json" in capsys.readouterr().err


def test_a_run_of_the_agent_alone_has_no_goal_line_and_a_run_without_halves_no_half_columns():
    made = report()
    made.systems, made.rows = ["deep agent"], [{**each, "half": None} for each in made.rows if each["system"] != "cot"]
    text = quality_markdown(made)
    assert "The goal" not in text and "| system | accuracy (4) | steps / task |" in text


def test_a_subset_with_no_scored_task_says_so_in_the_goal():
    made = report()
    made.rows = [{**each, "scored": each["half"] == "dev"} for each in made.rows]
    assert "- held-out: n/a (no scored task here)" in quality_markdown(made)


def test_a_stopped_run_has_its_tables_from_the_rows_it_kept_as_they_were_done(tmp_path, capsys):
    made = report()
    kept = tmp_path / "sklearn-all.done.jsonl"
    kept.write_text("".join(json.dumps({**each, "steps_taken": [{"code": "print(1)", "output": "1"}]}) + "\n"
                            for each in made.rows[:6]))  # stopped during the deep agent's third question
    assert main([str(kept)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("(2 rows of questions not every system answered left out")  # cot's c and d
    assert "| deep agent | 100% | 100% |" in text and "| cot | 50% | 50% |" in text and "The run:" not in text
    again = BenchReport.read_done(kept)
    assert again.systems == ["cot", "deep agent"] and (again.suite, again.split) == ("sklearn", "all")
    assert again.steps[("deep agent", "b")] == [{"code": "print(1)", "output": "1"}]
    assert "steps_taken" not in again.rows[0]


def test_systems_are_compared_only_on_the_questions_every_one_answered():
    """Stopped while the deep agent worked on a question the others had answered, a run's rows of that question
    would count for cot only: the tables leave it out and say so."""
    made = report()
    made.rows = [each for each in made.rows if not (each["system"] == "deep agent" and each["task_id"] == "d")]
    text = quality_markdown(made)
    assert text.startswith("(1 row of a question not every system answered left out: the systems are compared")
    assert "| system | accuracy (3) |" in text and "| cot | 33% |" in text and "| deep agent | 100% |" in text


def test_runs_made_side_by_side_make_one_set_of_tables_with_each_runs_machine(tmp_path, capsys):
    made = report()
    dev, held = (tmp_path / "dev", tmp_path / "held")
    for folder, half in ((dev, "dev"), (held, "held-out")):
        part = report()
        part.rows = [each for each in made.rows if each["half"] == half]
        part.write(folder)
    kept = tmp_path / "stopped" / "sklearn-all.done.jsonl"
    kept.parent.mkdir()
    kept.write_text(json.dumps(made.rows[0]) + "\n")
    assert main([str(dev / "sklearn-all.json"), str(held / "sklearn-all.json")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(quality_markdown(BenchReport(made.suite, made.title, made.split, made.lm, made.metric,
                                                       made.systems, sorted(made.rows, key=lambda r: r["half"]))))
    assert out.count("The run: 2026-11-27T12:00:00+00:00, local, 30 minutes") == 2
    assert "| cot | 25% | 50% | 0% |" in out and "| deep agent | 75% | 100% | 50% |" in out
    other = tmp_path / "other" / "dabench-dev.done.jsonl"
    other.parent.mkdir()
    other.write_text(json.dumps(made.rows[0]) + "\n")
    assert main([str(kept), str(other)]) == 2
    assert "different suites: sklearn, dabench" in capsys.readouterr().err
