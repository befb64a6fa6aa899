"""The settings table (deepagent_magics/settings.py) is the one place a setting is declared: every front
door agrees with it (names, flags, defaults), a setting added to it appears at every door it names,
and a bound it declares holds at each door as that door's one-line mistake."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from deepagent_magics import settings
from deepagent_magics.settings import AGENT, CELL, CLI, CONFIG, SERVER, SETTINGS, at

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "deepagent_magics"


def options(parser) -> dict[str, object]:
    """Each option string of an argparse parser -> its action."""
    return {option: action for action in parser._actions for option in action.option_strings}


def cell_flag(setting) -> str:
    return "--no-" + setting.flag[2:] if setting.kind is bool and setting.default else setting.flag


# ------------------------------------------------------------------------------------ the doors agree
def test_the_cell_and_config_flags_are_the_tables_and_nothing_else_declares_a_setting(ip):
    magics = ip.find_cell_magic("deepagent").__self__
    cell, config = options(magics.deepagent.parser), options(magics.deepagent_config.parser)
    for setting in at(CELL):
        action = cell[cell_flag(setting)]
        assert action.dest == setting.name and action.default is None, setting.name  # left out: the configured value
    for setting in at(CONFIG):
        assert config[setting.flag].dest == setting.name and config[setting.flag].default is None, setting.name
    # What is not a table setting is a per-cell option (or --reset), never a setting declared by hand.
    assert set(cell) - {cell_flag(s) for s in at(CELL)} == {"--out", "--no-interpolate", "-c",
                                                             "--continue", "--new", "--run-id", "--door"}
    assert set(config) - {s.flag for s in at(CONFIG)} == {"--reset"}


def test_the_traitlets_are_the_tables_with_its_defaults(ip):
    magics = ip.find_cell_magic("deepagent").__self__
    traits = magics.traits(config=True)
    assert set(traits) == {s.name for s in at(CONFIG)} == set(magics.SETTINGS)
    for setting in at(CONFIG):
        assert traits[setting.name].default() == setting.default, setting.name
        assert traits[setting.name].help == setting.where(CONFIG, "help"), setting.name
    shown = magics.describe_config()  # %deepagent_config with no flags lists every setting
    assert all(f"  {name} " in shown for name in magics.SETTINGS)


def test_the_command_lines_run_flags_are_the_tables_with_its_defaults():
    from deepagent_magics.cli.parser import build_parser

    run = options(build_parser()._subparsers._group_actions[0].choices["run"])
    for setting in at(CLI):
        assert run[setting.flag].dest == setting.name, setting.name
        expected = [] if setting.repeat else setting.where(CLI, "default")  # a repeated flag collects its texts
        assert run[setting.flag].default == expected, setting.name
    assert set(run) - {s.flag for s in at(CLI)} == {"-h", "--help", "--load", "--json"}
    assert run["--pool-size"].default == 0 and SETTINGS["pool_size"].default == 2  # the one door's own default


def test_the_run_apis_fields_are_the_tables_and_each_is_a_cell_flag():
    from deepagent_magics.server import launch

    assert list(launch.FLAGS) == [s.name for s in at(SERVER)]
    assert launch.FIELDS == {"task", "kernel_id", "kernel_name", "workspace", "run_id", "continue", "door"} | {
        s.name for s in at(SERVER)}
    assert all(CELL in s.doors for s in at(SERVER))  # the run API hands them on as the cell's flags


def test_deepagent_takes_every_agent_setting_with_the_tables_default():
    from deepagent_magics import DeepAgent

    agent = DeepAgent(lm="openai/gpt-4o-mini")
    for setting in at(AGENT):
        if setting.name not in ("lm", "workspace", "approve_rules"):  # kept as given; a Path; parsed rules
            assert getattr(agent, setting.name) == setting.to_agent(setting.default), setting.name
    signature = inspect.signature(DeepAgent.__init__).parameters
    assert all(signature[s.name].default == s.to_agent(s.default) for s in at(AGENT))
    recorded = {s.name for s in at(AGENT) if s.recorded}
    assert recorded <= set(agent.config()) and "max_subagents" in recorded
    assert DeepAgent(lm="openai/gpt-4o-mini", max_subagents=3, stream=False).config()["max_subagents"] == 3
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_subagent'"):
        DeepAgent(max_subagent=3)  # a typo is refused, as Python would


def test_a_setting_is_declared_in_one_file():
    """``--max-subagents`` was declared in the traitlets, two @argument lists, the CLI parser and the run API, and
    copied to each sub-agent by a hand-kept list: now only the table names it (how a sub-agent takes it too), and
    the code that uses the value (delegation's tree)."""
    naming = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                    if "max_subagents" in path.read_text() or "max-subagents" in path.read_text())
    assert naming == ["settings.py", "tools/delegation/tree.py"]


# ------------------------------------------------------------------------------------ bounds
@pytest.mark.parametrize("name, bad, good, words", [
    ("max_iters", 0, 1, "must be positive, got 0"),
    ("max_depth", -1, 0, "must be 0 or more, got -1"),
    ("timeout", float("inf"), 0.5, "must be a number of seconds above 0 and at most 604800"),
    ("pool_size", 65, 64, "must be a whole number from 0 to 64"),
    ("undo_limit", -1.0, 0.0, "must be a number of megabytes from 0 to 100000"),
])
def test_a_bound_is_one_line_naming_the_flag(name, bad, good, words):
    setting = SETTINGS[name]
    with pytest.raises(ValueError, match=f"^{setting.flag} {words}"):
        setting.check(bad)
    assert setting.check(good) == good and setting.check(None) is None


def test_a_bound_holds_at_the_run_api():
    from deepagent_magics.server.launch import RequestError, check_body

    with pytest.raises(RequestError, match='"subagent_timeout" must be a number of seconds above 0'):
        check_body({"task": "t", "subagent_timeout": 1e9})
    assert check_body({"task": "t", "max_depth": 0})["max_depth"] == 0  # 0: no delegation, as at every door


# ------------------------------------------------------------------------------------ one entry, every door
NEW_SETTING = r'''
import io, json, os, sys
from contextlib import redirect_stderr, redirect_stdout

from deepagent_magics import settings
settings.SETTINGS["frob_limit"] = settings.setting(
    "frob_limit", int, 7, settings.EVERYWHERE, help="most frobs per run", recorded=True, minimum=0, above=True)

from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython
from deepagent_magics import DeepAgent
from deepagent_magics.cli import main
from deepagent_magics.cli.parser import build_parser
from deepagent_magics.server import launch
from deepagent_magics.testing import ScriptedLM

out = {}
ip = start_ipython()
ip.run_line_magic("load_ext", "deepagent_magics")
magics = ip.find_cell_magic("deepagent").__self__
out["cell_flag"] = "--frob-limit" in magics.deepagent.parser.format_help()
out["trait"] = magics.frob_limit
with redirect_stdout(io.StringIO()) as shown:
    ip.run_line_magic("deepagent_config", "--frob-limit 3 --quiet on --pool-size 0")
out["configured"], out["listed"] = magics.frob_limit, "frob_limit     3" in shown.getvalue()
bad = ip.run_cell("%deepagent_config --frob-limit 0")
out["config_bad"] = [type(bad.error_in_exec).__name__, str(bad.error_in_exec)]
ip.user_ns["lm"] = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
ip.run_cell("%%deepagent --lm lm --frob-limit 5\ndo it")
out["cell_run"] = ip.user_ns["_deepagent_run"].config["frob_limit"]
ip.user_ns["lm"] = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
ip.run_cell("%%deepagent --lm lm\ndo it")
out["configured_run"] = ip.user_ns["_deepagent_run"].config["frob_limit"]

run = build_parser()._subparsers._group_actions[0].choices["run"]
out["cli_help"] = "--frob-limit" in run.format_help()
with open("steps.json", "w") as handle:
    json.dump([["Done.", "SUBMIT(result='ok')"]], handle)
with redirect_stdout(io.StringIO()) as printed, redirect_stderr(io.StringIO()):
    out["cli_status"] = main(["run", "x", "--lm", "scripted:steps.json", "--frob-limit", "4", "--json", "--quiet"])
out["cli_run"] = json.loads(printed.getvalue())["config"]["frob_limit"]
with redirect_stderr(io.StringIO()) as error:
    out["cli_bad"] = [main(["run", "x", "--frob-limit", "0"]), error.getvalue()]

out["server_field"] = "frob_limit" in launch.FIELDS
out["server_cell"] = "--frob-limit 4" in launch.cell_code("r1", "t", ".", {"frob_limit": 4})
try:
    launch.check_body({"task": "t", "frob_limit": 0})
except launch.RequestError as exc:
    out["server_bad"] = [exc.status, str(exc)]
out["agent"] = [DeepAgent(lm="openai/x").frob_limit, DeepAgent(lm="openai/x", frob_limit=2).frob_limit]
print(json.dumps(out))
'''


@pytest.mark.subprocess
def test_a_setting_added_to_the_table_appears_at_every_door(tmp_path):
    """One entry in the table (added before the front doors are imported, in a fresh process): a
    %%deepagent and a %deepagent_config flag, a traitlet listed by %deepagent_config, a `deepagent run`
    flag, a run API field, a DeepAgent keyword in the run record, its bound held at each door."""
    done = subprocess.run([sys.executable, "-c", NEW_SETTING], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**dict(__import__("os").environ), "PYTHONPATH": str(ROOT),
                                            "DEEPAGENT_LM": "", "DSPY_CACHEDIR": str(tmp_path / ".dspy")})
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["cell_flag"] and out["trait"] == 7 and out["configured"] == 3 and out["listed"]
    assert out["config_bad"] == ["UsageError", "--frob-limit must be positive, got 0"]
    assert out["cell_run"] == 5 and out["configured_run"] == 3
    assert out["cli_help"] and out["cli_status"] == 0 and out["cli_run"] == 4
    assert out["cli_bad"][0] == 2 and out["cli_bad"][1].count("\n") == 1 and "must be positive" in out["cli_bad"][1]
    assert out["server_field"] and out["server_cell"]
    assert out["server_bad"][0] == 400 and "must be positive" in out["server_bad"][1]
    assert out["agent"] == [7, 2]


def test_the_table_is_plain_data_importing_no_front_door():
    import ast

    tree = ast.parse((PACKAGE / "settings.py").read_text())
    imported = {node.module if isinstance(node, ast.ImportFrom) else alias.name
                for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names}
    assert imported == {"__future__", "inspect", "math", "os", "dataclasses", "typing", "errors"}  # (.errors; os: env)
    assert all(setting.doors <= set(settings.DOORS) and setting.help for setting in SETTINGS.values())
