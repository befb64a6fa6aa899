"""The first hour with a real model: what a user meets before any deep feature.

The README's local-server line and the environment route reach an OpenAI-compatible server (a stub on
127.0.0.1 that answers like one: tests/core/model/test_real_lm_client.py); LM options reach the request; the
two usage totals are named; a cost no provider priced says so; the settings the docs name are the
ones ``%deepagent_config`` lists; ``make demo`` ends without a kernel complaining its parent left.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import dspy
import pytest
from IPython.core.error import UsageError
from tests.core.model.test_real_lm_client import STEPS, StubOpenAI, stub_server  # noqa: F401  (stub_server is a fixture)

from deepagent_magics import DeepAgent
from deepagent_magics.cli import main
from deepagent_magics.core.run.run import Run
from deepagent_magics.display import summary
from deepagent_magics.display.markup import status_line
from deepagent_magics.records.listing import runs_table

ROOT = Path(__file__).resolve().parents[2]


def fresh(task: str) -> str:
    """The task made unique: DSPy caches a model id's replies (on disk), and these tests must reach the server."""
    return f"{task} ({uuid.uuid4().hex})"


@pytest.fixture
def no_key(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL", "DEEPAGENT_LM"):
        monkeypatch.delenv(name, raising=False)


def test_the_readme_local_server_line_works_as_written(stub_server, no_key, tmp_path):  # noqa: F811
    line = re.search(r'dspy\.LM\("openai/my-model", api_base="http://127\.0\.0\.1:8000/v1"[^`]*\)', (ROOT / "README.md").read_text())
    assert line, "README's local-server line is gone"
    lm = eval(line.group(0).replace("http://127.0.0.1:8000/v1", stub_server), {"dspy": dspy})  # as a user pastes it
    run = DeepAgent(lm=lm, workspace=tmp_path).run(fresh("double the numbers"), namespace={"numbers": [1, 2, 3]})
    assert run.status == "finished", run.error
    assert run.result == "12" and len(StubOpenAI.requests) == 2


def test_the_environment_route_needs_no_code(stub_server, no_key, monkeypatch, tmp_path):  # noqa: F811
    monkeypatch.setenv("OPENAI_API_BASE", stub_server)
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    monkeypatch.setenv("DEEPAGENT_LM", "openai/my-model")
    with dspy.context(lm=None):
        run = DeepAgent(workspace=tmp_path).run(fresh("double the numbers"), namespace={"numbers": [1, 2, 3]})
    assert run.status == "finished" and run.result == "12"
    assert StubOpenAI.requests[0]["body"]["model"] == "my-model"
    documented = (ROOT / "docs" / "getting-started.md").read_text()
    assert all(name in documented for name in ("OPENAI_API_BASE", "OPENAI_API_KEY", "DEEPAGENT_LM=openai/"))


def test_lm_options_reach_the_request_from_the_config(ip, stub_server, no_key):  # noqa: F811
    ip.run_line_magic("deepagent_config", f"--lm openai/my-model --lm-option api_base={stub_server} "
                                          "--lm-option api_key=local --lm-option max_tokens=4000 "
                                          "--lm-option temperature=0.25 --lm-option timeout=600")
    ip.user_ns["numbers"] = [1, 2, 3]
    ip.run_cell(f"%%deepagent --out answer\n{fresh('double the numbers')}").raise_error()
    assert ip.user_ns["answer"] == "12"
    body = StubOpenAI.requests[0]["body"]
    assert body["temperature"] == 0.25 and 4000 in (body.get("max_tokens"), body.get("max_completion_tokens"))
    core = ip.magics_manager.registry["DeepAgentMagics"]
    assert core.lm_options == {"api_base": stub_server, "api_key": "local", "max_tokens": 4000, "temperature": 0.25,
                               "timeout": 600}
    listing = core.describe_config()
    assert "api_key=(set)" in listing and "'local'" not in listing and "timeout=600" in listing
    ip.run_line_magic("deepagent_config", "--lm-option off")
    assert core.lm_options == {}


@pytest.mark.parametrize("flag, expected", [
    ("--lm-option max_tokens", "write KEY=VALUE"),
    ("--lm-option =4", "write KEY=VALUE"),
    ("--lm-option 'max tokens=4'", "is not an option name"),
    ("--lm-option model=x", "name the model with --lm"),
    ("--lm-option 'stop=[1]'", "must be a number, true/false, null or text"),
])
def test_a_bad_lm_option_is_one_usage_error_line_and_changes_nothing(ip, flag, expected):
    ip.run_line_magic("deepagent_config", "--lm-option timeout=60")
    result = ip.run_cell(f"%deepagent_config {flag}")
    error = result.error_in_exec
    assert type(error) is UsageError and expected in str(error) and "\n" not in str(error)
    assert ip.magics_manager.registry["DeepAgentMagics"].lm_options == {"timeout": 60}


@pytest.mark.subprocess
def test_the_command_line_takes_lm_options(stub_server, no_key, tmp_path, capsys):  # noqa: F811
    (tmp_path / "numbers.json").write_text("[1, 2, 3]")
    status = main(["run", fresh("double the numbers"), "--lm", "openai/my-model", "--lm-option", f"api_base={stub_server}",
                   "--lm-option", "api_key=local", "--lm-option", "max_tokens=321", "--load",
                   f"numbers={tmp_path / 'numbers.json'}", "--workspace", str(tmp_path), "--quiet"])
    out, err = capsys.readouterr()
    assert status == 0 and out.strip() == "12", err
    assert 321 in (StubOpenAI.requests[0]["body"].get("max_tokens"), StubOpenAI.requests[0]["body"].get("max_completion_tokens"))
    assert main(["run", "x", "--lm", "openai/my-model", "--lm-option", "oops"]) == 2
    assert "--lm-option 'oops': write KEY=VALUE" in capsys.readouterr().err


def tree_run() -> Run:
    """A root with 2 calls of its own and a sub-agent with 3: 5 in the tree."""
    root = Run("the task")
    root.start()
    root.begin_step("Delegate.", "delegate('sub')")
    child = root.add_child("sub")
    child.start()
    for _ in range(3):
        child.record_usage("openai/local", 1000, 100, None)
    child.finish("finished", result="ok")
    root.child_finished(child)
    root.end_step("ok")
    for _ in range(2):
        root.record_usage("openai/local", 2000, 200, None)
    root.finish("finished", result="done")
    return root


def test_the_two_usage_totals_are_named_where_they_are_shown():
    run = tree_run()
    assert run.usage.lm_calls == 2 and run.tree_usage().lm_calls == 5  # the root's own; the whole tree
    line = summary(run)
    assert "5 LM calls, 7,700 tokens" in line and "whole tree; the root's own: 2 calls, 4,400 tokens" in line
    assert "whole tree; the root&#x27;s own: 2 calls" in status_line(run) or "the root's own: 2 calls" in status_line(run)
    record = {"id": run.id, "status": "finished", "task": "the task", "steps": [], "usage": run.usage.to_dict(),
              "usage_total": run.tree_usage().to_dict()}
    header, row = runs_table([record]).splitlines()
    assert "tokens (tree)" in header and "cost (tree)" in header and "7,700" in row


def test_a_cost_no_provider_priced_is_unknown_not_zero(capsys):
    run = tree_run()
    assert "cost unknown" in summary(run) and "$0.0000" not in summary(run)
    assert "cost unknown" in status_line(run) and "$0.0000" not in status_line(run)
    record = {"id": run.id, "status": "finished", "task": "t", "steps": [], "usage_total": run.tree_usage().to_dict()}
    assert "cost unknown" in runs_table([record]) and "$0.0000" not in runs_table([record])
    priced = Run("priced")
    priced.record_usage("openai/gpt-4o-mini", 100, 10, 0.0021)
    priced.record_usage("openai/local", 100, 10, None)
    assert priced.usage.cost_text() == "$0.0021 + 1 unpriced calls"
    free = Run("free")
    free.record_usage("openai/gpt-4o-mini", 100, 10, 0.0)  # priced at zero is a price
    assert free.usage.cost_text() == "$0.0000"


@pytest.mark.subprocess
def test_the_command_line_summary_says_cost_unknown(tmp_path, capsys):
    script = tmp_path / "steps.json"
    script.write_text(json.dumps([["Done.", "SUBMIT(result='ok')"]]))
    assert main(["run", "t", "--lm", f"scripted:{script}", "--workspace", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "cost unknown" in err and "$0.0000" not in err
    assert main(["runs", "--workspace", str(tmp_path)]) == 0
    assert "cost unknown" in capsys.readouterr().out


def test_the_settings_the_docs_name_are_the_ones_the_config_lists(ip):
    listed = {line.split()[0] for line in ip.magics_manager.registry["DeepAgentMagics"].describe_config().splitlines()[1:]}
    text = (ROOT / "docs" / "magics.md").read_text()
    paragraph = text[text.index("Settings: `lm`"):text.index("`--pool-size`")]
    named = {name for name in re.findall(r"`([a-z_]+)`", paragraph)}
    assert named and named <= listed, f"docs/magics.md names settings %deepagent_config does not list: {named - listed}"
    assert "display_mode" in named


@pytest.mark.kernel
def test_the_demo_ends_without_a_kernel_left_behind(tmp_path):
    """``make demo``: the notebook's kernel (and its sub-agent pool) is shut down before the demo exits,
    so no kernel prints "Parent appears to have exited"."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("DEEPAGENT_LM", None)
    done = subprocess.run([sys.executable, "-m", "deepagent_magics.demos.quickstart",
                           str(ROOT / "notebooks" / "01_quickstart.ipynb")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "3 of 5 regions fell in Q3" in done.stdout
    assert "Parent appears to have exited" not in done.stdout + done.stderr
