"""A huge flag value is refused at once, in one line that quotes only its head (issue 30, item 8).

The attack: a 100 KB value for an unknown flag of ``%%deepagent`` took 170 s to give one
`UsageError`, whose message repeated all 100 KB. The time went to IPython's own ``$name``
expansion of a magic's line, a regular expression that scans the line once per character. Here
every magic the extension registers gets a 1 MB value, as an unknown flag, a known flag's value and
a positional word: a quadratic path would run for hours and meet the test's timeout. Each answer must
be exactly one `UsageError` line of bounded length. The command line gets the same through the real
``deepagent`` command.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from IPython.core.error import UsageError

from deepagent_magics.magics import MAGICS
MAX_LINE_CHARS = 4_000  # deepagent_magics.magics.inputs.flags.MAX_LINE_CHARS

HUGE = "x" * 1_000_000
MESSAGE_LIMIT = 400


def one_bounded_line(result) -> str:
    error = result.error_in_exec or result.error_before_exec
    assert error is not None, "the cell did not fail"
    assert type(error) is UsageError, f"{type(error).__name__} (a traceback): {str(error)[:300]}"
    message = str(error)
    assert message.strip() and "\n" not in message.strip(), message[:300]
    assert len(message) <= MESSAGE_LIMIT, f"{len(message):,} characters: {message[:200]}"
    return message


def our_magics(ip) -> list[tuple[str, str]]:
    names = {(kind, name) for cls in MAGICS for kind in ("line", "cell") for name in cls.magics[kind]}
    assert len(names) >= 15, names
    return sorted(names)


def cell(kind: str, name: str, line: str) -> str:
    return f"%%{name} {line}\nbody" if kind == "cell" else f"%{name} {line}"


def test_every_magic_refuses_a_huge_line_in_one_short_line(ip):
    for kind, name in our_magics(ip):
        message = one_bounded_line(ip.run_cell(cell(kind, name, f"--bogus {HUGE}")))
        assert "more than" in message and "x" * 60 in message, message  # says why, quotes the head


@pytest.mark.parametrize("shape", ["--bogus={v}", "--workspace {v}", "{v}", "--lm '{v}'", "--max-iters {v}"])
def test_every_shape_of_a_huge_value_is_refused(ip, shape):
    for text in (f"%%deepagent {shape.format(v=HUGE)}\ndo it", f"%deepagent_config {shape.format(v=HUGE)}"):
        message = one_bounded_line(ip.run_cell(text))
        assert "more than" in message, message


def test_a_long_value_under_the_line_limit_is_quoted_by_its_head_only(ip):
    value = "y" * (MAX_LINE_CHARS - 40)
    for line in (f"--bogus {value}", f"--max-iters {value}", f"--display-mode {value}"):
        message = one_bounded_line(ip.run_cell(f"%%deepagent {line}\ndo it"))
        assert "y" * 40 in message, message


def test_a_huge_value_brought_in_by_expansion_is_refused_too(ip):
    ip.user_ns["big"] = HUGE
    for line in ("--workspace $big", "--workspace {big}"):
        message = one_bounded_line(ip.run_cell(f"%deepagent_runs {line}"))
        assert "more than" in message, message


def test_a_path_too_long_for_the_system_is_one_line(ip):
    for text in (f"%deepagent_runs --workspace {'p' * 300}", f"%%deepagent --workspace {'p' * 300}\ndo it",
                 f"%deepagent_trace some-run --workspace {'q' * 300}"):
        one_bounded_line(ip.run_cell(text))


def test_expansion_still_works_for_an_ordinary_line(ip, tmp_path):
    magics = ip.magics_manager.registry["DeepAgentMagics"]
    for number, line in enumerate(("--workspace $ws", "--workspace {ws}")):
        ip.user_ns["ws"] = str(tmp_path / f"ws{number}")
        result = ip.run_cell(f"%deepagent_config {line}")
        assert result.error_in_exec is None, result.error_in_exec
        assert str(magics.workspace) == str(tmp_path / f"ws{number}")

    def inside_a_function():
        where = str(tmp_path / "from-locals")  # noqa: F841 - IPython expands the caller's locals too
        ip.run_line_magic("deepagent_config", "--workspace $where")

    inside_a_function()
    assert str(magics.workspace) == str(tmp_path / "from-locals")


@pytest.mark.subprocess
def test_the_command_line_quotes_only_the_head(tmp_path):
    value = "z" * 120_000  # one argument of a command line may hold 128 KiB
    for args in (["run", "--max-iters", value, "task"], ["run", "--workspace", value, "task"]):
        done = subprocess.run([sys.executable, "-m", "deepagent_magics", *args], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 2, (done.returncode, done.stderr[-300:])
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and len(lines[0]) <= MESSAGE_LIMIT, done.stderr[:300]
        assert lines[0].startswith("deepagent: error:") and "z" * 40 in lines[0], lines[0][:200]
