"""cli/acp.py: ``deepagent acp`` checks its model and folder before it serves, and hands the server the settings.

In-process through `cli.main`, with the ACP server replaced by one that keeps what it is given (serving
reads this process's stdin; tests/acp/test_protocol.py serves for real): a model that cannot be had, a
scripted sub-LM, a workspace that is no folder are each one line and exit status 2, nothing served; a
scripted model becomes the set-up code of a session's own kernel, which really configures it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("acp")
from deepagent_magics.acp import protocol  # noqa: E402
from deepagent_magics.acp.options import FLAGS, Options  # noqa: E402
from deepagent_magics.cli import main  # noqa: E402
from deepagent_magics.cli.acp import serve_acp  # noqa: E402,F401  (what `deepagent acp` runs)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def served(monkeypatch):
    """The options each `serve` was called with."""
    calls: list[Options] = []

    async def keep(options: Options) -> None:
        calls.append(options)

    monkeypatch.setattr(protocol, "serve", keep)
    monkeypatch.delenv("DEEPAGENT_LM", raising=False)
    return calls


def steps(folder: Path) -> Path:
    path = folder / "steps.json"
    path.write_text(json.dumps([["Done.", "SUBMIT(result='ok')"]]))
    return path


def test_a_model_id_and_the_settings_reach_the_server(served, tmp_path):
    assert main(["acp", "--lm", "openai/gpt-4o-mini", "--workspace", str(tmp_path), "--approve", "risky"]) == 0
    [options] = served
    assert options.lm_flag == "openai/gpt-4o-mini" and options.lm_setup == ""
    assert options.workspace == tmp_path.resolve() and set(options.settings) == set(FLAGS)
    assert options.flags()["approve"] == "risky" and options.flags()["lm"] == "openai/gpt-4o-mini"


def test_the_environment_names_the_model_when_the_flag_does_not(served, monkeypatch):
    monkeypatch.setenv("DEEPAGENT_LM", "  anthropic/claude-x  ")
    assert main(["acp"]) == 0
    assert served[0].lm_flag == "anthropic/claude-x" and served[0].workspace is None
    monkeypatch.setenv("DEEPAGENT_LM", "")
    assert main(["acp"]) == 0 and served[1].lm_flag is None  # no model: each cell finds its own


@pytest.mark.subprocess
def test_a_scripted_model_is_set_up_in_the_sessions_own_kernel_not_passed_as_a_flag(served, tmp_path, monkeypatch):
    path = steps(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["acp", "--lm", "scripted:steps.json"]) == 0
    [options] = served
    assert options.lm_flag is None and str(path) in options.lm_setup  # resolved: the kernel's cwd is the session's
    done = subprocess.run([sys.executable, "-c", options.lm_setup + "\nimport dspy; print(type(dspy.settings.lm).__name__)"],
                          cwd="/", capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ScriptedLM"


@pytest.mark.parametrize("args, said", [
    (["--lm", "not a model id"], "--lm"),
    (["--lm", "openai/x", "--sub-lm", "scripted:steps.json"], "--sub-lm: a scripted model is not handed to a kernel"),
    (["--lm", "openai/x", "--workspace", "no-such-folder"], "--workspace no-such-folder: not a directory"),
])
def test_what_cannot_be_served_is_one_line_and_nothing_is_served(served, tmp_path, monkeypatch, capsys, args, said):
    steps(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["acp", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("deepagent: error: ") and said in err
    assert served == []


@pytest.mark.subprocess
def test_deepagent_acp_refuses_a_model_it_cannot_have_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "deepagent_magics", "acp", "--lm", "scripted:missing.json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "cannot read the script" in done.stderr
