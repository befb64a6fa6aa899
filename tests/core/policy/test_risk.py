"""core/policy/risk.py: what makes a block risky, read from its syntax tree through aliases (the full preview cases:
tests/adversarial/test_risk_rules.py)."""

from __future__ import annotations

import pytest

from deepagent_magics.core.policy.risk import Risk, analyse, tool_rules


def rules(code, **kwargs):
    return [risk.rule for risk in analyse(code, **kwargs)]


@pytest.mark.parametrize("code, rule", [
    ("import subprocess\nsubprocess.run(['ls'])", "starts_process"),
    ("import os as o\no.system('ls')", "starts_process"),
    ("from shutil import rmtree as r\nr('x')", "removes_files"),
    ("f = __import__('shutil').rmtree\nf('x')", "removes_files"),
    ("import requests\nrequests.get('http://x')", "network"),
    ("!pip install pandas", "installs_packages"),
    ("exec(input())", "dynamic_code"),
    ("import ctypes", "controls"),
])
def test_risky_code_is_found_through_aliases_and_ipython_syntax(code, rule):
    assert rule in rules(code)


def test_a_constant_string_given_to_exec_is_analysed_as_code():
    assert "starts_process" in rules("exec('import os\\nos.system(\"ls\")')")
    assert rules("exec('x = 1')") == []


def test_the_users_variables_and_paths_outside_the_workspace(tmp_path):
    assert rules("del sales", user_names={"sales"}) == ["deletes_variable"]
    assert rules("del mine") == []
    assert "writes_outside_workspace" in rules("open('/etc/x', 'w').write('y')", workspace=str(tmp_path))
    assert rules(f"open('{tmp_path}/in.txt', 'w').write('y')", workspace=str(tmp_path)) == []


def test_harmless_code_and_code_that_does_not_parse_are_not_risky():
    assert rules("import math\nprint(math.sqrt(4))") == []
    assert analyse("def (:") == []


def test_only_enabled_rules_are_reported_each_once():
    code = "import subprocess\nsubprocess.run('a')\nsubprocess.run('b')\nimport requests"
    assert rules(code, rules={"network"}) == ["network"]
    found = analyse("import os\nos.system('a')\nos.system('a')")
    assert len(found) == len(set(found)) and found  # the same risk, found twice, is reported once


def test_a_tool_says_which_rule_a_call_of_it_falls_under():
    def delegate(task):
        return task

    delegate.risk_rule = "subagents"
    assert tool_rules([delegate, len]) == {"delegate": "subagents"}
    assert rules("delegate('x')", tool_rules={"delegate": "subagents"}) == ["subagents"]
    assert str(Risk("network", "touches the network")) == "network: touches the network"
