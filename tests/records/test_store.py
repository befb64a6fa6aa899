"""records/store.py: finding and reading run records: defensive reads, the host's signature, liveness."""

from __future__ import annotations

import json
import os

import pytest

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.records.store import (
    MAX_RECORD_BYTES,
    find_record,
    list_records,
    load_record,
    record_home,
    record_place,
    runs_dir,
)


def recorded(workspace, task="Count to three.", result="3"):
    lm = ScriptedLM([("Count.", f"SUBMIT(result={result!r})")])
    return DeepAgent(lm=lm, workspace=workspace).run(task, namespace={})


def test_a_run_the_host_recorded_reads_back_signed_with_where_it_came_from(tmp_path):
    run = recorded(tmp_path)
    record = load_record(runs_dir(tmp_path) / f"{run.id}.json")
    assert record["id"] == run.id and record["status"] == "finished" and record["result"] == "3"
    assert record["_host_written"] is True
    assert record_home(record) == tmp_path.resolve()
    assert record_place(record["_path"]) == f".deepagent/runs/{run.id}.json"


def test_a_planted_or_renamed_record_is_shown_but_never_signed(tmp_path):
    run = recorded(tmp_path)
    folder = runs_dir(tmp_path)
    (folder / "planted.json").write_text(json.dumps({"id": "planted", "steps": [], "status": "finished",
                                                     "_host_written": True}))
    os.replace(folder / f"{run.id}.json", folder / "renamed.json")
    records = {record["id"]: record for record in list_records([tmp_path])}
    assert records["planted"]["_host_written"] is False  # the loader's own fields are never taken from the file
    assert records[run.id]["_host_written"] is False  # its signature names another file


def test_list_records_is_newest_first_and_skips_what_is_not_a_record(tmp_path):
    first = recorded(tmp_path, "first")
    second = recorded(tmp_path, "second")
    os.utime(runs_dir(tmp_path) / f"{first.id}.json", (1, 1))
    (runs_dir(tmp_path) / "junk.json").write_text("{not json")
    assert [record["id"] for record in list_records([tmp_path])] == [second.id, first.id]
    assert len(list_records([tmp_path], limit=1)) == 1
    assert list_records([tmp_path / "nowhere"]) == []


def test_what_cannot_be_a_record_is_a_value_error(tmp_path):
    folder = runs_dir(tmp_path)
    folder.mkdir(parents=True)
    (folder / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError):
        load_record(folder / "deep.json")
    os.mkfifo(folder / "fifo.json")
    with pytest.raises(ValueError, match="is not a regular file"):
        load_record(folder / "fifo.json")  # opened without blocking: a FIFO cannot hang the notebook
    assert MAX_RECORD_BYTES >= 2 ** 20


def test_a_record_is_found_by_its_id_or_a_unique_part_of_it(tmp_path):
    run = recorded(tmp_path)
    assert find_record(run.id, [tmp_path])["id"] == run.id
    assert find_record(run.id[-6:], [tmp_path])["id"] == run.id
    with pytest.raises(KeyError, match="no run 'zzz'"):
        find_record("zzz", [tmp_path])
    recorded(tmp_path)
    with pytest.raises(KeyError, match="is ambiguous"):
        find_record(run.id[:8], [tmp_path])
