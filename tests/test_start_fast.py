"""Starting fast: ``deepagent --help``, every bad-input error of the command line and ``%load_ext`` load
neither DSPy nor LiteLLM, and the extension loads only what a first cell needs (the rest on first use).

Each check runs in a fresh interpreter and reads its ``sys.modules``: what this test process has imported
already says nothing. (How long it takes is measured in bench/, never here.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.cli.test_commands import BAD

ROOT = Path(__file__).resolve().parents[1]
# `deepagent bench`'s mistakes (tests/cli/test_bench.py has what each says)
BENCH_BAD = [["bench", "nope", "--lm", "openai/x"], ["bench", "sklearn", "--lm", "openai/x", "--limit", "0"],
             ["bench", "sklearn", "--lm", "openai/x", "--threads", "0"],
             ["bench", "sklearn", "--lm", "openai/x", "--baselines", "magic"],
             ["bench", "sklearn", "--lm", "openai/x", "--where", "level"], ["bench", "sklearn", "--lm", "gpt4"],
             ["bench", "sklearn"]]

# Runs the command line's main on each argv in turn, in one process; after each, the model libraries loaded
# so far: the first case that loaded one is the one to blame.
CLI_PROBE = textwrap.dedent("""
    import contextlib, io, json, sys
    from deepagent_magics.cli import main

    out = []
    for argv in json.loads(sys.argv[1]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                status = main(argv)
            except SystemExit as exc:
                status = exc.code
        out.append([argv, status, err.getvalue(), [name for name in ("dspy", "litellm") if name in sys.modules]])
    print(json.dumps(out))
""")


def probe(code: str, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key != "DEEPAGENT_LM"}
    environment |= {"PYTHONPATH": str(ROOT)} | (env or {})
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=environment, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def bad_inputs(tmp_path):
    """The files tests/cli/test_commands.py's bad inputs name."""
    (tmp_path / "s.json").write_text(json.dumps([["x", "SUBMIT(result='x')"]]))
    (tmp_path / "garbage.txt").write_text("{not json")
    (tmp_path / "garbage.json").write_text("{not json")
    (tmp_path / "shape.json").write_text(json.dumps({"steps": [42]}))
    (tmp_path / "n.json").write_text("[1]")
    (tmp_path / "binary.txt").write_bytes(b"\xff\xfe\x00\x81")
    return tmp_path


@pytest.mark.subprocess
def test_help_and_every_bad_input_of_the_command_line_load_neither_dspy_nor_litellm(bad_inputs):
    cases = [["--help"], ["run", "--help"], ["bench", "--help"],
             *BAD.values(), *BENCH_BAD]
    done = probe(CLI_PROBE, json.dumps(cases), cwd=bad_inputs, env={"DEEPAGENT_LM": ""})
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.splitlines()[-1])
    assert [argv for argv, *_ in results] == cases
    for argv, status, stderr, loaded in results:
        assert loaded == [], (argv, stderr)  # the first case that loaded a model library
        if argv[-1:] == ["--help"]:
            assert status == 0
        else:
            assert status == 2 and stderr.startswith("deepagent: error: "), (argv, status, stderr)


@pytest.mark.subprocess
def test_a_run_loads_them_when_it_makes_its_model(tmp_path):
    """The probe sees the libraries when they are loaded (a probe that never saw them would prove nothing)."""
    (tmp_path / "s.json").write_text(json.dumps([["x", "SUBMIT(result='x')"]]))
    done = probe(CLI_PROBE, json.dumps([["run", "x", "--lm", "scripted:s.json", "--max-depth", "0", "--quiet"]]),
                 cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [[_, status, stderr, loaded]] = json.loads(done.stdout.splitlines()[-1])
    assert status == 0 and "dspy" in loaded, stderr


LOAD_EXT = textwrap.dedent("""
    import json, sys
    from IPython.core.interactiveshell import InteractiveShell

    before = set(sys.modules)
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "deepagent_magics")
    loaded = sorted(name for name in set(sys.modules) - before if name.startswith("deepagent_magics"))
    magics = sorted(ip.magics_manager.magics["line"]) + sorted(ip.magics_manager.magics["cell"])
    print(json.dumps({"loaded": loaded, "libraries": [name for name in ("dspy", "litellm") if name in sys.modules],
                      "magics": [name for name in magics if name.startswith("deepagent")]}))
""")

# What a first cell does not need: loaded by the magic that uses it, on first use.
NOT_AT_LOAD = ("deepagent_magics.tuning.", "deepagent_magics.records.listing", "deepagent_magics.records.export",
               "deepagent_magics.mcp", "deepagent_magics.server", "deepagent_magics.cli", "deepagent_magics.core.loop.agent",
               "deepagent_magics.interpreters.shell", "deepagent_magics.interpreters.kernel", "deepagent_magics.display")
ALLOWED_TUNING = {"deepagent_magics.tuning.choices"}  # plain names the magics' help lists (tuning/choices.py)


@pytest.mark.subprocess
def test_load_ext_loads_neither_dspy_nor_the_rooms_a_first_cell_does_not_need(tmp_path):
    done = probe(LOAD_EXT, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["libraries"] == []
    early = [name for name in report["loaded"] if name.startswith(NOT_AT_LOAD) and name not in ALLOWED_TUNING]
    assert early == []
    assert {"deepagent_config", "deepagent_runs", "deepagent_eval", "deepagent_bench", "deepagent"} <= set(report["magics"])


FIRST_USE = textwrap.dedent("""
    import json, sys
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.error import UsageError

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "deepagent_magics")
    out = {}
    for line in sys.argv[1:]:
        name, _, rest = line.partition(" ")
        try:
            ip.run_line_magic(name, rest)
            out[line] = "ok"
        except UsageError as exc:
            out[line] = "UsageError: " + str(exc)
    from deepagent_magics.testing import ScriptedLM
    ip.user_ns["lm"] = ScriptedLM([("Add.", "SUBMIT(result=str(1 + 2))")])
    ip.run_cell_magic("deepagent", "--lm lm --max-depth 0", "Add one and two.")
    out["%%deepagent"] = str(ip.user_ns["_deepagent_run"].result)
    print(json.dumps(out))
""")


@pytest.mark.subprocess
def test_every_magic_works_on_its_first_use_in_a_fresh_kernel(tmp_path):
    """The magics import what they use when first called: in a process where nothing else imported it."""
    lines = ["deepagent_config", "deepagent_runs", "deepagent_prompt", "deepagent_agents", "deepagent_memory",
             "deepagent_eval --devset nothing --metric nothing", "deepagent_optimize --trainset nothing --valset x --metric y",
             "deepagent_bench no-such-suite", "deepagent_trace", "deepagent_export out.ipynb"]
    done = probe(FIRST_USE, *lines, cwd=tmp_path, env={"HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["%%deepagent"] == "3"
    for line in lines[:5]:
        assert out[line] == "ok", (line, out[line])
    assert "nothing" in out[lines[5]] and "nothing" in out[lines[6]]  # the notebook has no such variable
    assert "no-such-suite" in out[lines[7]]
    assert out[lines[8]].startswith("UsageError") and out[lines[9]].startswith("UsageError")
    for line, said in out.items():
        assert "Error" not in said or said.startswith("UsageError: "), (line, said)  # no NameError, no ImportError
