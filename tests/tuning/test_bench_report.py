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
