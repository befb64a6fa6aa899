"""tuning/bench_resume.py: a benchmark resumed from the answers an earlier run kept, and what it refuses to take."""

from __future__ import annotations

import json

import dspy
import pytest

from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tuning import bench
from deepagent_magics.tuning.bench import BenchError, BenchStopped, run_suite
from deepagent_magics.tuning.bench_resume import earlier_answers
from deepagent_magics.tuning.systems import Outcome


def systems(asked, stop_at=None):
    """cot and the deep agent, answering 178 with one step each; ``asked`` collects (system, task) as asked;
    the user's ^C comes when cot is asked ``stop_at`` (and holds for whatever a worker thread starts after it)."""
    stopped = []

    def system(name):
        def answer(example):
            asked.append((name, example.bench_task.id))
            if stopped or (name, example.bench_task.id) == ("cot", stop_at):
                stopped.append(True)
                raise KeyboardInterrupt
            return Outcome(dspy.Prediction(result="178", trajectory=[{"reasoning": f"{name} on {example.bench_task.id}", "code": "print(178)"}]),
                           1, 10, ending="SUBMIT" if name == "deep agent" else None)
        return answer
    return lambda agent, names, lm=None: {name: system(name) for name in ("cot", "deep agent")}


def run(tmp_path, **options):
    return run_suite("sklearn", ScriptedLM([]), limit=3, baselines=["cot"], threads=1, out=tmp_path,
                     where={"half": "dev"}, **options)


def done_rows(tmp_path):
    return [json.loads(line) for line in (tmp_path / "sklearn-all.done.jsonl").read_text().splitlines()]


def test_a_stopped_run_resumed_asks_only_what_it_had_not_finished_and_its_table_is_the_whole(tmp_path, monkeypatch):
    first, second = [], []
    monkeypatch.setattr(bench, "systems_for", systems(first, stop_at="group-1"))
    with pytest.raises(BenchStopped):
        run(tmp_path)
    assert first[:3] == [("cot", "agg-1"), ("deep agent", "agg-1"), ("cot", "group-1")]
    monkeypatch.setattr(bench, "systems_for", systems(second))
    report = run(tmp_path, resume=True)
    assert ("cot", "agg-1") not in second and ("deep agent", "agg-1") not in second
    assert {task for _, task in second} == {"group-1", report.rows[-1]["task_id"]} and len(second) == 4
    assert report.resumed == f"1 of 3 tasks from the earlier run in {tmp_path}"
    assert sorted((row["system"], row["task_id"]) for row in report.rows) == sorted(
        (system, task) for system in ("cot", "deep agent") for task in {"agg-1", *(task for _, task in second)})
    assert report.steps[("deep agent", "agg-1")] and report.steps[("deep agent", "agg-1")] != report.steps[
        ("deep agent", "group-1")]  # the first run's steps, kept
    assert "deep agent on agg-1" in json.dumps(report.steps[("deep agent", "agg-1")])
    written = json.loads((tmp_path / "sklearn-all.json").read_text())
    assert written["resumed"] == report.resumed and len(written["rows"]) == 6
    assert "(resumed: 1 of 3 tasks" in (tmp_path / "sklearn-all.md").read_text()
    assert len(done_rows(tmp_path)) == 6  # the done file is the whole run's again: resumable once more
    third = []
    monkeypatch.setattr(bench, "systems_for", systems(third))
    assert len(run(tmp_path, resume=True).rows) == 6 and third == []  # nothing left to ask


def test_a_question_some_system_had_not_answered_is_asked_again_of_every_system(tmp_path, monkeypatch):
    first, second = [], []
    monkeypatch.setattr(bench, "systems_for", systems(first))
    run(tmp_path)
    rows = done_rows(tmp_path)
    kept = [row for row in rows if not (row["system"] == "deep agent" and row["task_id"] == "agg-1")]
    (tmp_path / "sklearn-all.done.jsonl").write_text("".join(json.dumps(row) + "\n" for row in kept))
    monkeypatch.setattr(bench, "systems_for", systems(second))
    report = run(tmp_path, resume=True)
    assert second == [("cot", "agg-1"), ("deep agent", "agg-1")]
    assert len(report.rows) == 6 and len({(row["system"], row["task_id"]) for row in report.rows}) == 6


def test_a_line_cut_by_a_kill_a_foreign_row_and_a_repeated_one_are_not_taken(tmp_path, monkeypatch):
    """What a killed process, a hand-edited file or another run left in the folder: only whole rows of this
    run's questions and systems are taken, each answer once; the done file keeps only what was taken."""
    asked = []
    monkeypatch.setattr(bench, "systems_for", systems(asked))
    run(tmp_path)
    rows = done_rows(tmp_path)
    agg = [row for row in rows if row["task_id"] == "agg-1"]
    foreign = [{**agg[0], "task_id": "no-such-question"}, {**agg[0], "system": "react"}, "a string", [1, 2]]
    wrong = {**agg[0], "score": 0.0}  # a second answer to the same question: the first one counts
    lines = [json.dumps(row) for row in agg + [wrong] + foreign] + [json.dumps(rows[-1])[:40]]
    (tmp_path / "sklearn-all.done.jsonl").write_text("\n".join(lines) + "\n")
    asked.clear()
    report = run(tmp_path, resume=True)
    assert {task for _, task in asked} == {row["task_id"] for row in rows} - {"agg-1"}
    assert [row["score"] for row in report.rows if row["task_id"] == "agg-1"] == [1.0, 1.0]
    assert {row["task_id"] for row in done_rows(tmp_path)} == {row["task_id"] for row in rows}
    assert {row["system"] for row in done_rows(tmp_path)} == {"cot", "deep agent"}


def test_answers_of_another_model_stop_the_resumed_run_with_one_line_and_nothing_is_lost(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(bench, "systems_for", systems(asked))
    run(tmp_path)
    before = (tmp_path / "sklearn-all.done.jsonl").read_text()
    assert all(row["lm"] for row in done_rows(tmp_path))  # each answer names its model
    other = before.replace(json.dumps(done_rows(tmp_path)[0]["lm"]), json.dumps("openai/gpt-4o-mini"))
    (tmp_path / "sklearn-all.done.jsonl").write_text(other)
    asked.clear()
    with pytest.raises(BenchError, match=r"^--resume: the answers in .* are openai/gpt-4o-mini's, this run's model"):
        run(tmp_path, resume=True)
    assert asked == [] and (tmp_path / "sklearn-all.done.jsonl").read_text() == other


def test_resume_without_a_folder_or_without_an_earlier_run(tmp_path, monkeypatch):
    with pytest.raises(BenchError, match="--resume takes the answers kept in --out"):
        run_suite("sklearn", ScriptedLM([]), limit=1, threads=1, resume=True)
    asked = []
    monkeypatch.setattr(bench, "systems_for", systems(asked))
    report = run(tmp_path / "new", resume=True)  # nothing to take: the whole run, as without --resume
    assert len(asked) == 6 and report.resumed == f"0 of 3 tasks from the earlier run in {tmp_path / 'new'}"
    assert earlier_answers(tmp_path / "none.jsonl", ["agg-1"], ["cot"], "m") == []


def test_a_resume_over_fewer_questions_keeps_the_old_done_file_beside_the_new_one(tmp_path, monkeypatch):
    """Resumed with a smaller --limit, the run takes one question of three: the other two measured answers are
    not thrown away with the done file it starts again."""
    asked = []
    monkeypatch.setattr(bench, "systems_for", systems(asked))
    run(tmp_path)
    before = (tmp_path / "sklearn-all.done.jsonl").read_text()
    report = run_suite("sklearn", ScriptedLM([]), limit=1, baselines=["cot"], threads=1, out=tmp_path,
                       where={"half": "dev"}, resume=True)
    assert len(report.rows) == 2 and len(done_rows(tmp_path)) == 2
    [kept] = tmp_path.glob("sklearn-all.done.jsonl.before-resume-*")
    assert kept.read_text() == before
    run(tmp_path, resume=True)  # nothing beyond what it took: no copy kept
    assert len(list(tmp_path.glob("sklearn-all.done.jsonl.before-resume-*"))) == 1
