"""core/policy/risk_tables.py: which names fall under which rule, and the rule set a user turns on and off."""

from __future__ import annotations

import pytest

from deepagent_magics.core.policy.risk_tables import (
    RULES,
    UnknownRule,
    parse_rules,
    qualify_alias,
    rule_of_name,
    star_rule,
)


@pytest.mark.parametrize("name, qualified", [("posix.remove", "os.remove"), ("builtins.exec", "exec"),
                                             ("pathlib.PosixPath", "pathlib.Path"), ("numpy.sum", "numpy.sum"),
                                             ("__builtins__", "__builtins__")])
def test_module_aliases_fold_to_the_name_the_rules_know(name, qualified):
    assert qualify_alias(name) == qualified


@pytest.mark.parametrize("name, rule", [
    ("os.system", "starts_process"), ("os.execvp", "starts_process"), ("subprocess.run", "starts_process"),
    ("os.remove", "removes_files"), ("shutil.rmtree", "removes_files"), ("requests.get", "network"),
    ("pip", "installs_packages"), ("deepagent_magics.core", "controls"), ("sys._getframe", "controls"),
    ("urllib.request.urlopen", "network"), ("os.path.join", None), ("subprocessing", None), (None, None),
])
def test_each_name_falls_under_its_rule(name, rule):
    assert rule_of_name(name) == rule


def test_a_star_import_of_a_module_with_risky_functions_is_risky():
    assert star_rule("os") in ("removes_files", "starts_process")
    assert star_rule("shutil") == "removes_files" and star_rule("math") is None


@pytest.mark.parametrize("spec, enabled", [
    (None, set(RULES)),
    ("none,subagents", {"subagents"}),
    ("-network, -subagents", set(RULES) - {"network", "subagents"}),
    (["none", "+network"], {"network"}),
    ({"network": False}, set(RULES) - {"network"}),
    ("all,-all", set()),
    ("", set(RULES)),
])
def test_rules_are_applied_in_order_to_all_on(spec, enabled):
    assert parse_rules(spec) == frozenset(enabled)


def test_an_unknown_rule_names_the_rules():
    with pytest.raises(UnknownRule, match="unknown risk rule 'nope'; the rules are: deletes_variable"):
        parse_rules("nope")
    with pytest.raises(UnknownRule, match="must be a name, not int"):
        parse_rules([3])
