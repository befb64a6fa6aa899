"""interpreters/runtime_checks/hook.py: the audit hook asks before the agent's code acts, and only the agent's code:
in a fresh interpreter, so that the hook (which cannot be removed) is that process's alone (the attacks on it:
tests/adversarial/test_runtime_checks_hostile.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import ast, json, os, sys
    from deepagent_magics.interpreters.kernel_side import exec_step, split_trailing_expression
    from deepagent_magics.interpreters.runtime_checks import hook

    workspace, outside = sys.argv[1], sys.argv[2]
    asked = []

    def ask(action):
        asked.append([action["rule"], action["action"]])
        return "Not allowed: the user said no."

    def step(code, scope):
        body, tail = split_trailing_expression(ast.parse(code))
        try:
            exec_step(body, tail, "<agent step 1>", {}, scope)
            return "ran"
        except PermissionError as exc:
            return str(exc)

    hook.install(exec_step.__code__)
    scope = hook.scope(ask=ask, workspace=workspace, rules={"writes_outside_workspace", "removes_files"}, run="r1")
    report = {
        "outside": step(f"open({outside!r}, 'w').write('x')", scope),
        "inside": step(f"open({workspace + '/in.txt'!r}, 'w').write('x')", scope),
        "rule off": step(f"import os; os.makedirs({outside + '_dir'!r})", hook.scope(ask=ask, workspace=workspace,
                                                                                   rules=set(), run="r1")),
        "which": step("import deepagent_magics.interpreters.runtime_checks.hook as h; seen = h.which_run()", scope),
        "asked": asked,
        "outside file exists": os.path.exists(outside),
    }
    open(outside, "w").write("host code is never asked")
    report["host wrote"] = os.path.exists(outside)
    report["installed again"] = hook.install(exec_step.__code__)
    print(json.dumps(report))
""")


@pytest.mark.subprocess
def test_a_registered_step_is_asked_before_it_writes_outside_and_host_code_never_is(tmp_path):
    workspace, outside = tmp_path / "ws", tmp_path / "outside.txt"
    workspace.mkdir()
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(workspace), str(outside)], capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["outside"] == "Not allowed: the user said no." and not report["outside file exists"]
    assert report["inside"] == "ran" and (workspace / "in.txt").read_text() == "x"
    assert report["rule off"] == "ran"
    assert report["asked"] == [["writes_outside_workspace", f"write {outside}? outside the workspace"]]
    assert report["host wrote"] and report["installed again"] is False


def test_a_scope_is_plain_data():
    from deepagent_magics.interpreters.runtime_checks.hook import scope

    made = scope(workspace="/ws", rules=["network"], approved=["network"], run="r")
    assert made == {"ask": None, "workspace": "/ws", "rules": frozenset({"network"}),
                    "approved": frozenset({"network"}), "run": "r"}
