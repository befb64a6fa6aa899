"""The risk analysis sees through code that hides what it does, and leaves harmless code alone."""

from __future__ import annotations

import pytest

from deepagent_magics import standard_extensions
from deepagent_magics.core.policy.risk import RULES, UnknownRule, analyse, parse_rules, tool_rules

USER = {"x", "df", "sales"}
TOOLS = tool_rules(standard_extensions().builtin_tools())  # what the agent's tools say of themselves (delegation's)


def rules_of(code: str, workspace: str = "/tmp/deepagent-ws") -> set[str]:
    return {risk.rule for risk in analyse(code, user_names=USER, workspace=workspace, tool_rules=TOOLS)}


HIDDEN = {
    # deleting or rebinding the user's variables
    "del x": "deletes_variable",
    "x = None": "deletes_variable",
    "x += 1": "deletes_variable",
    "for x in range(3): pass": "deletes_variable",
    "import json as x": "deletes_variable",
    "def df(): pass": "deletes_variable",
    "del globals()['x']": "deletes_variable",
    "globals()['sales'] = []": "deletes_variable",
    "g = globals()\ndel g['x']": "deletes_variable",
    "globals().pop('x')": "deletes_variable",
    "globals().clear()": "deletes_variable",
    "vars().update(x=1)": "deletes_variable",
    "name = 'x'\ndel globals()[name + '']": "deletes_variable",
    "del globals()[input_name]": "deletes_variable",
    "exec('del x')": "deletes_variable",
    "code = 'del x'\nexec(code)": "deletes_variable",
    "exec('exec(\"del x\")')": "deletes_variable",
    "eval(compile('globals().pop(\"x\")', 'f', 'eval'))": "deletes_variable",
    "import __main__\ndel __main__.x": "deletes_variable",
    "import sys\nsys.modules['__main__'].__dict__.pop('x')": "deletes_variable",
    "delattr(__import__('__main__'), 'x')": "deletes_variable",
    "get_ipython().user_ns.pop('df')": "deletes_variable",
    "get_ipython().run_line_magic('reset', '-f')": "deletes_variable",
    "%reset -f": "deletes_variable",
    "def f():\n    global x\n    x = 1": "deletes_variable",
    "df.drop(columns=['a'], inplace=True)": "deletes_variable",
    "del df['a']": "deletes_variable",
    "sales.clear()": "deletes_variable",
    # files
    "import os\nos.remove('a')": "removes_files",
    "import os as o\no.remove('a')": "removes_files",
    "from os import remove as rm\nrm('a')": "removes_files",
    "import os\ngetattr(os, 'remove')('a')": "removes_files",
    "import os\nf = os.unlink\nf('a')": "removes_files",
    "__import__('shutil').rmtree('d')": "removes_files",
    "import importlib\nimportlib.import_module('shutil').rmtree('d')": "removes_files",
    "import posix\nposix.unlink('a')": "removes_files",
    "import shutil\nshutil.move('a', 'b')": "removes_files",
    "from pathlib import Path\nPath('a').unlink()": "removes_files",
    "import os\nlist(map(os.remove, files))": "removes_files",
    "import os\nvars(os)['remove']('a')": "removes_files",
    "import os\nos.__dict__['rmdir']('d')": "removes_files",
    "from shutil import *\nrmtree('d')": "removes_files",
    # writing outside the workspace
    "open('/etc/passwd', 'w').write('x')": "writes_outside_workspace",
    "open('../escape.txt', 'a')": "writes_outside_workspace",
    "open('~/.bashrc', mode='w')": "writes_outside_workspace",
    "p = '/tmp/elsewhere.txt'\nwith open(p, 'w') as f: f.write('x')": "writes_outside_workspace",
    "from pathlib import Path\nPath('/etc/x').write_text('x')": "writes_outside_workspace",
    "from pathlib import Path\np = Path('/etc/x')\np.write_text('x')": "writes_outside_workspace",
    "df.to_csv('/tmp/out.csv')": "writes_outside_workspace",
    "import shutil\nshutil.copy('a', '/usr/local/bin/a')": "writes_outside_workspace",
    "import io\nio.open('/etc/x', 'w')": "writes_outside_workspace",
    # processes
    "import subprocess\nsubprocess.run(['ls'])": "starts_process",
    "from subprocess import run as r\nr(['ls'])": "starts_process",
    "import os\nos.system('ls')": "starts_process",
    "__import__('os').popen('ls')": "starts_process",
    "!ls": "starts_process",
    "%%bash\nls": "starts_process",
    "get_ipython().system('ls')": "starts_process",
    "import os\nos.execv('/bin/ls', ['ls'])": "starts_process",
    "import multiprocessing": "starts_process",
    # network
    "import requests\nrequests.get('https://example.com')": "network",
    "import urllib.request\nurllib.request.urlopen('x')": "network",
    "from httpx import get": "network",
    "import socket as s": "network",
    "__import__('socket')": "network",
    "import pandas as pd\npd.read_csv('https://example.com/a.csv')": "network",
    # packages
    "%pip install leftpad": "installs_packages",
    "!pip install leftpad": "installs_packages",
    "import subprocess\nsubprocess.run('pip install x', shell=True)": "installs_packages",
    "import pip\npip.main(['install', 'x'])": "installs_packages",
    # computed code
    "exec(model_text)": "dynamic_code",
    "eval(input_expr)": "dynamic_code",
    "e = exec\ne(text)": "dynamic_code",
    "import builtins\nbuiltins.exec(text)": "dynamic_code",
    "getattr(__builtins__, 'exec')(text)": "dynamic_code",
    "__import__(name)": "dynamic_code",
    "import os\ngetattr(os, name)('a')": "dynamic_code",
    "get_ipython().run_cell(text)": "dynamic_code",
    # sub-agents
    "delegate('summarise')": "subagents",
    "delegate_batched(['a', 'b'])": "subagents",
    "d = delegate\nd('x')": "subagents",
    "globals()['delegate']('x')": "subagents",
    "list(map(delegate, tasks))": "subagents",
    # the agent's own controls: code that could approve itself
    "import deepagent_magics.core.policy.approval as ap\nap._approvers.clear()": "controls",
    "from deepagent_magics.core import approval": "controls",
    "__import__('deepagent_magics')": "controls",
    "import gc\n[o for o in gc.get_objects()]": "controls",
    "import sys\nsys._getframe(1).f_locals": "controls",
    "import inspect\ninspect.currentframe().f_back": "controls",
    "import builtins\nbuiltins.input = lambda prompt='': 'a'": "controls",
    "setattr(__import__('builtins'), 'input', print)": "controls",
    "_deepagent_run.approvals.clear()": "controls",
    "import ctypes": "controls",
}


@pytest.mark.parametrize("code, rule", list(HIDDEN.items()))
def test_each_hiding_place_is_found(code, rule):
    assert rule in rules_of(code) or (rule == "removes_files" and "dynamic_code" in rules_of(code))


HARMLESS = [
    "total = sum(range(10))\nprint(total)",
    "df2 = df.rename(columns={'a': 'b'})",
    "s = 'a-b'.replace('-', '_')",
    "def f():\n    x = 2\n    return x",
    "[x for x in range(3)]",
    "import os\nprint(os.path.join('a', 'b'), os.getcwd())",
    "open('report.md', 'w').write('# ok')",
    "open('/etc/hostname').read()",
    "from pathlib import Path\nPath('notes/a.txt').write_text('x')",
    "df.head()",
    "import json\njson.dumps({'a': 1})",
    "print('delegate the work')",
    "this is not python",
]


@pytest.mark.parametrize("code", HARMLESS)
def test_harmless_code_is_not_risky(code):
    assert rules_of(code) == set()


def test_rules_switch_on_and_off():
    code = "import os\nos.remove('a')\ndelegate('x')"
    assert {r.rule for r in analyse(code, rules=parse_rules("-subagents"), tool_rules=TOOLS)} == {"removes_files"}
    assert {r.rule for r in analyse(code, rules=parse_rules("none,subagents"), tool_rules=TOOLS)} == {"subagents"}
    assert {r.rule for r in analyse(code, rules=parse_rules({"removes_files": False}), tool_rules=TOOLS)} == {"subagents"}


def test_a_tool_s_own_rule_is_what_makes_its_call_risky():
    """The core names no tool: the delegation tools say they start sub-agents, and a user's tool may say so too."""
    assert TOOLS == {"delegate": "subagents", "delegate_batched": "subagents"}
    assert rules_of("delegate('x')") == {"subagents"}
    assert analyse("delegate('x')") == []  # without the agent's tools, a name is only a name
    assert {r.rule for r in analyse("spawn('x')", tool_rules={"spawn": "subagents"})} == {"subagents"}
    assert parse_rules(None) == parse_rules("") == parse_rules("all") == frozenset(RULES)


@pytest.mark.parametrize("spec", ["netwrk", "-nope", ["network", 5], "network,,bogus"])
def test_an_unknown_rule_is_refused(spec):
    with pytest.raises(UnknownRule):
        parse_rules(spec)


def test_a_deeply_nested_or_huge_block_does_not_break_the_analysis():
    nested = "exec(" * 50 + "'del x'" + ")" * 50
    analyse(nested, user_names=USER)
    analyse("x = 1\n" * 20000, user_names=USER)
    analyse("(" * 5000 + ")" * 5000)  # too deep for the parser: no risks, no crash
