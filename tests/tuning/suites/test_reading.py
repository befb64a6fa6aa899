"""tuning/suites/reading.py: a suite's files as the variables a user would have made from them."""

from __future__ import annotations

import pytest

from deepagent_magics.tuning.suites.reading import read_jsonl, read_table, read_value, variable_name


def test_files_become_tables_json_or_text(tmp_path):
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    (tmp_path / "f.json").write_text('{"k": [1]}')
    (tmp_path / "n.md").write_text("# notes")
    assert read_table(tmp_path / "t.csv")["a"].tolist() == [1]
    assert read_value(tmp_path / "f.json") == {"k": [1]} and read_value(tmp_path / "n.md") == "# notes"


@pytest.mark.parametrize("filename, name", [("payments-readme.md", "payments_readme"), ("2014_q4.csv", "t_2014_q4"),
                                            ("Merchant Data.json", "merchant_data"), ("---.csv", "data")])
def test_a_file_name_becomes_a_usable_identifier(filename, name):
    assert variable_name(filename) == name


def test_jsonl_is_read_line_by_line_and_a_bad_line_is_named(tmp_path):
    (tmp_path / "rows.jsonl").write_text('{"a": 1}\n\n{"a": 2}\n')
    assert read_jsonl(tmp_path / "rows.jsonl") == [{"a": 1}, {"a": 2}]
    (tmp_path / "bad.jsonl").write_text('{"a": 1}\n{oops\n')
    with pytest.raises(ValueError, match="bad.jsonl line 2 is not JSON"):
        read_jsonl(tmp_path / "bad.jsonl")
