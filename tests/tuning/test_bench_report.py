"""tuning/bench_report.py: the benchmark's table per system, written as Markdown, JSON and JSONL answers and steps."""

from __future__ import annotations

import json

from deepagent_magics.tuning.bench_report import BenchReport


def row(system, task, score, scored=True, error=None, cost=0.01, answer="42"):
    return {"system": system, "task_id": task, "score": score, "scored": scored, "tokens": 100, "cost": cost,
            "seconds": 2.0, "steps": 3, "error": error, "answer": answer}


def report():
    return BenchReport("sklearn", "sklearn suite", "dev", "openai/x", "accuracy", ["cot", "deep agent"],
                       [row("cot", "t1", 0.0, error="ValueError:\n bad"), row("cot", "t2", 1.0),
                        row("deep agent", "t1", 1.0, cost=None), row("deep agent", "t2", 1.0, cost=None),
                        row("deep agent", "t3", 0.0, scored=False, cost=None)],
                       steps={("deep agent", "t1"): [{"code": "print(1)", "output": "1"}]})


def test_the_summary_per_system_counts_only_scored_tasks_and_says_unknown_cost():
    summary = report().summary()
    assert summary["cot"]["accuracy"] == 0.5 and summary["cot"]["failures"] == 1
    assert summary["deep agent"]["accuracy"] == 1.0 and summary["deep agent"]["scored"] == 2
    assert summary["deep agent"]["cost"] is None and summary["cot"]["cost"] == 0.02


def test_the_markdown_table_and_its_failures():
    text = report().to_markdown()
    assert text.startswith("## sklearn suite (dev): 3 tasks, openai/x")
    assert "| cot | 50.0% (2 scored) |" in text and "| unknown | unknown |" in text
    assert "- cot, task t1: ValueError: bad" in text


def test_writing_makes_the_table_the_json_and_each_systems_answers_and_steps(tmp_path):
    made = report()
    paths = made.write(tmp_path / "out")
    names = sorted(path.name for path in paths)
    assert names == ["sklearn-dev.cot.answers.jsonl", "sklearn-dev.cot.steps.jsonl", "sklearn-dev.deep-agent.answers.jsonl",
                     "sklearn-dev.deep-agent.steps.jsonl", "sklearn-dev.json", "sklearn-dev.md"]
    answers = [json.loads(line) for line in (tmp_path / "out" / "sklearn-dev.deep-agent.answers.jsonl").read_text().splitlines()]
    assert answers[0] == {"task_id": "t1", "agent_answer": "42"}
    steps = json.loads((tmp_path / "out" / "sklearn-dev.deep-agent.steps.jsonl").read_text().splitlines()[0])
    assert steps["steps"] == [{"code": "print(1)", "output": "1"}]
    assert json.loads((tmp_path / "out" / "sklearn-dev.json").read_text())["summary"]["cot"]["accuracy"] == 0.5
    assert made.files == [str(path) for path in paths]


def spent(system, task, score, ending, half, prompt=1000, completion=100, scored=True):
    return {**row(system, task, score, scored=scored), "tokens": prompt + completion, "prompt_tokens": prompt,
            "completion_tokens": completion, "ending": ending, "half": half, "kind": "aggregate"}


def test_tokens_per_solved_task_endings_and_a_subset_of_the_tasks():
    made = BenchReport("sklearn", "sklearn", "all", "local", "accuracy", ["deep agent"],
                       [spent("deep agent", "a", 1.0, "SUBMIT", "dev"), spent("deep agent", "b", 1.0, "stall", "dev"),
                        spent("deep agent", "c", 0.0, "extraction", "held-out", prompt=4000),
                        spent("deep agent", "d", 0.0, "failure", "held-out", scored=False)])
    agent = made.summary()["deep agent"]
    assert agent["solved"] == 2 and agent["accuracy"] == 2 / 3
    assert agent["prompt_tokens_per_task"] == 7000 / 4 and agent["prompt_tokens_per_solved"] == 7000 / 2
    assert agent["completion_tokens_per_solved"] == 200 and agent["tokens_per_solved"] == 7400 / 2
    assert agent["endings"] == {"SUBMIT": 1, "stall": 1, "extraction": 1, "failure": 1}
    assert agent["right_endings"] == {"SUBMIT": 1, "stall": 1}
    held_out = made.summary({"half": "held-out"})["deep agent"]
    assert held_out["tasks"] == 2 and held_out["accuracy"] == 0.0 and held_out["prompt_tokens_per_solved"] is None


def test_a_written_report_is_read_back_with_its_rows_and_the_machine_it_ran_on(tmp_path):
    made = report()
    made.machine = {"wall_seconds": 60.0, "cpu_seconds": 90.0, "cpus": 2, "load_mean": 3.5}
    made.write(tmp_path)
    again = BenchReport.read(tmp_path / "sklearn-dev.json")
    assert again.rows == made.rows and again.systems == made.systems and again.machine == made.machine
    assert again.summary() == made.summary() and again.started == made.started
    assert made.done_file(tmp_path) == tmp_path / "sklearn-dev.done.jsonl"
