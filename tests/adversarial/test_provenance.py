"""Provenance and undo in a real InteractiveShell: what a run made or changed, who made a name, taking it back."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from IPython.core.error import UsageError

from deepagent_magics.core.policy.fingerprint import fingerprint, snapshot
from deepagent_magics.testing import ScriptedLM


def agent(ip, *steps, flags=""):
    ip.user_ns["lm"] = ScriptedLM([*steps, ("Done.", "SUBMIT(result='done')")])
    ip.run_cell(f"%%deepagent --lm lm {flags}\nwork on my data").raise_error()
    return ip.user_ns["_deepagent_run"]


def changes(run):
    return [(c["name"], c["kind"], c["step"]) for c in run.changes]


@pytest.fixture
def data(ip):
    values = {
        "rows": [1, 2, 3], "table": {"a": 1}, "tags": {"x"}, "arr": np.arange(5.0),
        "df": pd.DataFrame({"a": [1, 2, 3]}), "ser": pd.Series([1.0, 2.0]), "nested": [{"k": [1]}],
        "untouched": [9],
    }
    ip.user_ns.update(values)
    return values


def test_each_step_s_names_and_in_place_changes_are_on_the_run(ip, data, capsys):
    run = agent(
        ip,
        ("Make.", "total = sum(rows)\nrows.append(4)"),
        ("Change.", "table['b'] = 2\ntags.add('y')\narr[0] = 99\ndf['b'] = df['a'] * 2\nser.iloc[0] = 0.5"),
        ("Deep.", "nested[0]['k'].append(2)\nrows = 'rebound'"),
    )
    got = changes(run)
    assert ("total", "created", 1) in got and ("rows", "changed", 1) in got
    assert {("table", "changed", 2), ("tags", "changed", 2), ("arr", "changed", 2), ("df", "changed", 2),
            ("ser", "changed", 2)} <= set(got)
    assert ("nested", "changed", 3) in got and ("rows", "rebound", 3) in got
    assert not any(name == "untouched" for name, _, _ in got)
    rebound = next(c for c in run.changes if c["kind"] == "rebound")
    assert rebound["restored"] and ip.user_ns["rows"] is data["rows"]  # the user's name is back
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "this run" in line)
    assert "created total" in line and "%deepagent_undo" in line
    assert all(name in line.split("changed in place")[1] for name in ("rows", "table", "tags", "arr", "df", "ser"))


@pytest.mark.parametrize("code", [
    "g = globals()\ng['rows'].append(4)",
    "for value in list(globals().values()):\n    if value.__class__ is list and value == [1, 2, 3]:\n        value.append(4)",
    "get_ipython().user_ns['rows'].append(4)",
    "alias = rows\nalias.append(4)",
])
def test_a_change_made_through_another_route_is_still_seen(ip, data, code):
    run = agent(ip, ("Sneak.", code))
    assert ("rows", "changed") in [(c["name"], c["kind"]) for c in run.changes]


def test_a_change_by_a_function_from_an_earlier_step_is_caught_at_the_end(ip, data):
    run = agent(ip, ("Define.", "def grow(x):\n    x.append(4)"), ("Use.", "grow(rows)"),
                ("Hide.", "def sneaky():\n    table.clear()"), ("Call.", "sneaky()"))
    kinds = {(c["name"], c["kind"]): c["step"] for c in run.changes}
    assert kinds[("rows", "changed")] == 2
    assert ("table", "changed") in kinds  # its step's code never named it: seen by the last look


def test_fingerprints_never_copy_large_data():
    big = np.zeros(25_000_000)  # 200 MB
    frame = pd.DataFrame({"a": np.zeros(2_000_000), "b": np.ones(2_000_000)})
    tracemalloc.start()
    fingerprint(big)
    fingerprint(big[:, None][::2])  # not contiguous: hashed a row at a time
    fingerprint(frame)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20_000_000  # the data is 232 MB; blocks of it are hashed in turn
    assert snapshot(big, 10_000_000) is None and snapshot(frame, 10_000_000) is None


def test_fingerprints_see_small_changes():
    arr, frame = np.arange(1000.0), pd.DataFrame({"a": range(1000), "s": ["x"] * 1000})
    prints = fingerprint(arr), fingerprint(frame)
    arr[500] += 1e-9
    frame.loc[999, "s"] = "y"
    assert fingerprint(arr) != prints[0] and fingerprint(frame) != prints[1]
    assert fingerprint([[1, [2]]]) != fingerprint([[1, [3]]]) and fingerprint({"a": 1}) != fingerprint({"a": 2})


def test_why_names_the_run_the_step_and_the_code(ip, data, capsys):
    run = agent(ip, ("Load.", "print('nothing')"), ("Make the summary.", "summary = len(rows)\ndf['c'] = 1"))
    capsys.readouterr()
    ip.run_line_magic("deepagent_why", "summary")
    out = capsys.readouterr().out
    assert f"summary was created by run {run.id}" in out and "step 2" in out and "summary = len(rows)" in out
    ip.run_line_magic("deepagent_why", "df")
    assert "df was changed in place" in capsys.readouterr().out


@pytest.mark.parametrize("name, message", [
    ("never_made", "no agent run in this kernel session made or changed 'never_made'"),
    ("untouched", "made or changed 'untouched'"),
    ("not-a-name", "give the name of a notebook variable"),
    ("", "the following arguments are required"),
])
def test_why_of_a_name_no_run_made_is_one_line(ip, data, name, message):
    agent(ip, ("Make.", "made = 1"))
    with pytest.raises(UsageError, match=message):
        ip.run_line_magic("deepagent_why", name)


def test_undo_removes_created_names_and_restores_in_place(ip, data, capsys):
    before = {name: (value.copy() if hasattr(value, "copy") else value) for name, value in data.items()}
    other_ref = data["rows"]
    run = agent(ip, ("Work.", "made = [1]\nrows.append(4)\ntable.clear()\ntags.discard('x')\narr[:] = 0\n"
                              "df.drop(columns=['a'], inplace=True)\nser[0] = -1\nnested[0]['k'].append(5)"))
    ip.run_line_magic("deepagent_undo", "")
    out = capsys.readouterr().out
    assert "made" not in ip.user_ns and "removed the names it created: made" in out
    assert other_ref is ip.user_ns["rows"] and other_ref == [1, 2, 3]  # restored into the same object
    assert ip.user_ns["table"] == {"a": 1} and ip.user_ns["tags"] == {"x"} and ip.user_ns["nested"] == [{"k": [1]}]
    assert np.array_equal(ip.user_ns["arr"], before["arr"]) and ip.user_ns["arr"] is data["arr"]
    pd.testing.assert_frame_equal(ip.user_ns["df"], before["df"])
    pd.testing.assert_series_equal(ip.user_ns["ser"], before["ser"])
    assert ip.user_ns["df"] is data["df"]
    with pytest.raises(UsageError, match=f"run {run.id} was already undone"):
        ip.run_line_magic("deepagent_undo", run.id)


def test_undo_keeps_a_name_the_user_rebound_since_and_names_what_it_cannot_restore(ip, data, capsys):
    ip.run_line_magic("deepagent_config", "--undo-limit 0")
    agent(ip, ("Work.", "result = 1\nrows.append(4)"))
    ip.user_ns["result"] = "mine now"
    ip.run_line_magic("deepagent_undo", "")
    out = capsys.readouterr().out
    assert ip.user_ns["result"] == "mine now" and "kept (you have set them since): result" in out
    assert "NOT restored" in out and "rows" in out and ip.user_ns["rows"] == [1, 2, 3, 4]


def test_undo_of_an_older_run_by_id_and_bad_ids(ip, data):
    first = agent(ip, ("One.", "first_made = 1"))
    agent(ip, ("Two.", "second_made = 2"))
    ip.run_line_magic("deepagent_undo", first.id)
    assert "first_made" not in ip.user_ns and ip.user_ns["second_made"] == 2
    for bad in ("nope", "20991231-000000-abcdef", "'x; rm -rf /'"):
        with pytest.raises(UsageError, match="no run"):
            ip.run_line_magic("deepagent_undo", bad)


def test_undo_with_no_run_is_one_line(ip):
    ip.find_magic("deepagent_config").__self__.runs.clear()
    with pytest.raises(UsageError, match="no agent run in this kernel session to undo"):
        ip.run_line_magic("deepagent_undo", "")


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "lots"])
def test_a_bad_undo_limit_is_one_line(ip, value):
    with pytest.raises(UsageError):
        ip.run_line_magic("deepagent_config", f"--undo-limit {value}")
    assert ip.find_magic("deepagent_config").__self__.undo_limit == 10.0


def test_the_record_lists_the_changes_without_the_objects(ip, data, tmp_path):
    run = agent(ip, ("Work.", "made = 'sk-ant-api03-" + "y" * 40 + "'\nrows.append(4)"))
    record = json.loads((tmp_path / ".deepagent" / "runs" / f"{run.id}.json").read_text())
    assert {(c["name"], c["kind"], c["step"]) for c in record["changes"]} == {("made", "created", 1), ("rows", "changed", 1)}
    assert not any(key.startswith("_") for c in record["changes"] for key in c)
    assert "yyyy" not in json.dumps(record["changes"])


def test_a_run_does_not_keep_a_big_object_alive_after_the_user_deletes_it(ip, data):
    import gc
    import weakref

    agent(ip, ("Make.", "import numpy as np\nbig = np.zeros(3_000_000)\nhuge = list(range(2_000_000))"))
    gone = weakref.ref(ip.user_ns["big"])
    del ip.user_ns["big"], ip.user_ns["huge"]
    ip.user_ns.pop("_", None)
    gc.collect()
    assert gone() is None
    run = ip.user_ns["_deepagent_run"]
    assert all(c["_value"].get() is None for c in run.changes if c["name"] in ("big", "huge"))
    ip.user_ns["huge"] = "the user's own"
    ip.run_line_magic("deepagent_undo", "")
    assert ip.user_ns["huge"] == "the user's own"
