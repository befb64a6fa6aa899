"""magics/memory.py: ``%deepagent_memory``: list, search, add and forget memories; the table shows who wrote each."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from deepagent_magics.magics.memory import memories_table


def test_the_table_shows_who_wrote_each_memory_and_cuts_long_text():
    table = memories_table([{"id": 1, "when": "2026-01-01", "author": "agent", "run": "r1", "tags": ["csv"],
                             "text": "word " * 100},
                            {"id": 2, "when": "2026-01-02", "author": None, "run": None, "tags": [], "text": "short"}])
    header, first, second = table.splitlines()
    assert header.split() == ["id", "when", "by", "run", "tags", "text"]
    assert first.split()[:5] == ["#1", "2026-01-01", "agent", "r1", "csv"] and first.endswith("…")
    assert second.split() == ["#2", "2026-01-02", "unknown", "-", "-", "short"]


def test_add_search_and_forget_through_the_magic(ip, capsys):
    ip.run_line_magic("deepagent_memory", '--add "Sales CSVs use ; as separator" --tags csv,sales')
    added = capsys.readouterr().out
    assert added.startswith("Remembered (memory #")
    memory_id = int(added.split("#")[1].split(")")[0])
    ip.run_line_magic("deepagent_memory", "separator")
    found = capsys.readouterr().out
    assert "Sales CSVs use ; as separator" in found and " user " in found
    ip.run_line_magic("deepagent_memory", f"--forget {memory_id}")
    assert capsys.readouterr().out == f"Forgot memory #{memory_id}.\n"
    ip.run_line_magic("deepagent_memory", "separator")
    assert capsys.readouterr().out == "No memories match 'separator'.\n"


def test_mistakes_are_one_line(ip):
    with pytest.raises(UsageError, match="--limit must be at least 1, not 0"):
        ip.run_line_magic("deepagent_memory", "-n 0")
    with pytest.raises(UsageError, match="there is no memory #424242"):
        ip.run_line_magic("deepagent_memory", "--forget 424242")


def test_a_memory_a_model_wrote_cannot_move_the_terminals_cursor(ip, capsys):
    ip.run_line_magic("deepagent_memory", '--add "fine\x1b[2Jgone"')
    capsys.readouterr()
    ip.run_line_magic("deepagent_memory", "")
    assert "\x1b" not in capsys.readouterr().out
