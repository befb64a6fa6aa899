"""cli/__init__.py: ``main`` runs one command and says every mistake in one line with exit status 2 (the real
command as a process: tests/cli/test_commands.py)."""

from __future__ import annotations

import pytest

from deepagent_magics.cli import MESSAGE_CHARS, main


def test_a_mistake_is_one_line_on_stderr_and_status_2(capsys):
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepagent: error: ") and err.count("\n") == 1 and "see deepagent run --help" in err


def test_a_huge_value_is_not_quoted_whole(capsys):
    assert main(["runs", "--limit", "x" * 5000]) == 2
    line = capsys.readouterr().err.strip()
    assert len(line) <= len("deepagent: error: ") + MESSAGE_CHARS and line.endswith("…")


def test_a_command_runs_and_says_how_it_ended(tmp_path, capsys):
    assert main(["runs", "--workspace", str(tmp_path)]) == 0
    assert main(["trace", "--workspace", str(tmp_path)]) == 2  # no run to show: one line
    assert "deepagent: error:" in capsys.readouterr().err


def test_help_exits_zero():
    with pytest.raises(SystemExit) as caught:
        main(["--help"])
    assert caught.value.code == 0
