"""cli/inputs.py: ``--load NAME=FILE`` files become variables of the run's namespace; a bad one is one line."""

from __future__ import annotations

import pytest

from deepagent_magics.cli.inputs import LoadError, load_variables, parse_load


def test_files_become_tables_json_or_text(tmp_path):
    (tmp_path / "sales.csv").write_text("region,amount\nN,10\n")
    (tmp_path / "t.tsv").write_text("a\tb\n1\t2\n")
    (tmp_path / "cfg.json").write_text('{"k": 1}')
    (tmp_path / "notes.md").write_text("# notes")
    loaded = load_variables([f"sales={tmp_path / 'sales.csv'}", f"t={tmp_path / 't.tsv'}",
                             f"cfg={tmp_path / 'cfg.json'}", f"notes={tmp_path / 'notes.md'}"])
    assert loaded["sales"]["amount"].tolist() == [10] and loaded["t"]["b"].tolist() == [2]
    assert loaded["cfg"] == {"k": 1} and loaded["notes"] == "# notes"


@pytest.mark.parametrize("value, says", [("sales.csv", "write NAME=FILE"), ("1x=a.csv", "is not a usable variable name"),
                                         ("SUBMIT=a.csv", "is not a usable variable name"), ("x=", "write NAME=FILE")])
def test_a_malformed_load_is_one_line(value, says):
    with pytest.raises(LoadError, match=says):
        parse_load(value)


def test_missing_twice_binary_and_broken_files_are_one_line_each(tmp_path):
    (tmp_path / "a.json").write_text("{oops")
    (tmp_path / "b.bin").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "c.csv").write_text("a,b\n1,2\n")
    for values, says in [([f"x={tmp_path / 'none.csv'}"], "no such file"),
                         ([f"x={tmp_path / 'c.csv'}", f"x={tmp_path / 'c.csv'}"], "is given twice"),
                         ([f"x={tmp_path / 'a.json'}"], "not valid JSON"), ([f"x={tmp_path / 'b.bin'}"], "not UTF-8 text")]:
        with pytest.raises(LoadError, match=says):
            load_variables(values)
