"""records/__init__.py: the records capability: each root run keeps its record and event log."""

from __future__ import annotations

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.loop.extensions import Extensions
from deepagent_magics.interpreters import ROOT_INTERPRETER
from deepagent_magics.records import RECORDS, Records, events_path, load_record, runs_dir


def test_the_capability_makes_a_record_and_an_event_log_for_a_root_run(tmp_path):
    lm = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
    run = DeepAgent(lm=lm, workspace=tmp_path, extensions=Extensions(ROOT_INTERPRETER, RECORDS)).run("Do it", namespace={})
    record = load_record(runs_dir(tmp_path) / f"{run.id}.json")
    assert record["status"] == "finished" and record["_host_written"]
    assert events_path(tmp_path, run.id).is_file()
    assert isinstance(RECORDS, Records) and RECORDS.name == "records"


def test_without_it_nothing_is_written(tmp_path):
    lm = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
    DeepAgent(lm=lm, workspace=tmp_path, extensions=Extensions(ROOT_INTERPRETER)).run("Do it", namespace={})
    assert not runs_dir(tmp_path).exists()
