"""The user's sub-agent types are tuned like the packaged profiles (issue 16, part 1, last promise).

``--profile NAME`` of a type runs it as the root agent (its instructions and its tools);
``%%deepagent_prompt --profile NAME`` hand-tunes its instructions, which its sub-agents then use;
``--diff``/``--reset`` work on it; ``%deepagent_optimize --profile NAME`` installs a tuned program
for it; ``%deepagent_prompt --save`` keeps the types beside the program, and ``--load`` brings them
back, all or nothing: a saved type whose tool is not in the notebook loads nothing.
"""

from __future__ import annotations

import json
import re

import pytest
from IPython.core.error import UsageError

from deepagent_magics.magics import agents
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tuning import programs

SOURCE = '''
shouted = []

def shout(word: str) -> str:
    """The word in capitals (and noted in the notebook)."""
    shouted.append(word)
    return word.upper()
'''
TRAIN = [{"task": f"Shout the word {word} (easy)", "answer": word.upper()} for word in ("cat", "dog")]
VAL = [{"task": f"Shout the word {word}", "answer": word.upper()} for word in ("sun", "sea", "sky")]


def word(request) -> str:
    return re.search(r"Shout the word (\w+)", request.task).group(1)


def demo_policy(request):
    if "(easy)" in request.task or request.demos:
        return ("Shout it.", f"SUBMIT(result={word(request).upper()!r})")
    return ("Say it.", f"SUBMIT(result={word(request)!r})")


@pytest.fixture
def shell(ip):
    core = ip.magics_manager.registry["DeepAgentMagics"]
    core.agent_types = {}
    ip.run_cell(SOURCE)
    ip.run_cell_magic("deepagent_agent", "shouter --description 'shouts words' --tools shout",
                      "SHOUTER-INSTRUCTIONS: you shout.")
    yield ip
    programs.drop("shouter")
    core.agent_types = {}


def core_of(ip):
    return ip.magics_manager.registry["DeepAgentMagics"]


def test_a_type_runs_as_the_root_agent_with_its_instructions_and_tools(shell):
    shell.user_ns["lm"] = ScriptedLM([("Shout.", "r = shout('moon')\nprint(r)"), ("Done.", "SUBMIT(result=r)")])
    shell.run_cell_magic("deepagent", "--lm lm --profile shouter --out answer --max-depth 0", "Shout moon")
    assert shell.user_ns["answer"] == "MOON" and shell.user_ns["shouted"] == ["moon"]
    assert "SHOUTER-INSTRUCTIONS" in shell.user_ns["lm"].requests[0]["system"]
    assert shell.user_ns["_deepagent_run"].profile == "shouter"


def test_hand_tuning_a_type_reaches_its_sub_agents_and_diff_and_reset_work(shell, capsys):
    shell.run_cell_magic("deepagent_prompt", "--profile shouter", "RETUNED: shout louder.")
    [kind] = agents.type_list(core_of(shell), shell.user_ns)
    assert kind.instructions.startswith("RETUNED")  # what delegate(agent='shouter') builds from
    capsys.readouterr()
    shell.run_line_magic("deepagent_prompt", "--profile shouter --diff")
    out = capsys.readouterr().out
    assert "-SHOUTER-INSTRUCTIONS: you shout." in out and "+RETUNED: shout louder." in out
    shell.run_line_magic("deepagent_prompt", "--profile shouter")
    assert "your sub-agent type; text edited in this kernel" in capsys.readouterr().out
    shell.run_line_magic("deepagent_prompt", "--profile shouter --reset")
    [kind] = agents.type_list(core_of(shell), shell.user_ns)
    assert kind.instructions.startswith("SHOUTER-INSTRUCTIONS")


def test_optimising_a_type_installs_its_program(shell, capsys):
    shell.user_ns.update(train=TRAIN, val=VAL, plain=lambda example, pred: float(pred.result == example.answer),
                         lm=ScriptedLM(demo_policy))
    shell.run_cell_magic("deepagent", "--lm lm --profile shouter --out before --max-depth 0", "Shout the word moon")
    assert shell.user_ns["before"] == "moon"
    shell.run_line_magic("deepagent_optimize", "--profile shouter --trainset train --valset val --metric plain "
                                               "--optimizer bootstrap --lm lm --threads 1")
    assert "validation score 0.00 -> 1.00" in capsys.readouterr().out
    shell.run_cell_magic("deepagent", "--lm lm --profile shouter --out after --max-depth 0", "Shout the word moon")
    assert shell.user_ns["after"] == "MOON"
    shell.run_cell_magic("deepagent", "--lm lm --out plain_default --max-depth 0", "Shout the word moon")
    assert shell.user_ns["plain_default"] == "moon"  # the default profile is not touched


def test_save_keeps_the_types_and_load_brings_them_back_all_or_nothing(shell, tmp_path, capsys):
    path = tmp_path / "tuned.json"
    shell.run_line_magic("deepagent_prompt", f"--profile shouter --save {path}")
    saved = json.loads(path.read_text())
    assert [t["name"] for t in saved["deepagent_subagent_types"]] == ["shouter"]
    assert saved["deepagent_subagent_types"][0]["tools"] == ["shout"]
    shell.run_line_magic("deepagent_agents", "--remove shouter")
    assert core_of(shell).agent_types == {}
    shell.run_line_magic("deepagent_prompt", f"--profile default --load {path}")
    assert "sub-agent types shouter are defined again" in capsys.readouterr().out
    assert list(core_of(shell).agent_types) == ["shouter"]
    programs.reset("default")

    saved["deepagent_subagent_types"].append(dict(saved["deepagent_subagent_types"][0], name="other",
                                                  tools=["no_such_function"]))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(saved))
    shell.run_line_magic("deepagent_agents", "--remove shouter")
    with pytest.raises(UsageError) as info:
        shell.run_line_magic("deepagent_prompt", f"--profile default --load {bad}")
    assert "no_such_function" in str(info.value) and "\n" not in str(info.value)
    assert core_of(shell).agent_types == {} and programs.tuned("default") is None  # nothing half loaded
    for garbage in ([{"name": "../x"}], "not a list", [{"name": "coder", "description": "d", "instructions": "i"}]):
        saved["deepagent_subagent_types"] = garbage
        bad.write_text(json.dumps(saved))
        with pytest.raises(UsageError):
            shell.run_line_magic("deepagent_prompt", f"--profile default --load {bad}")
        assert core_of(shell).agent_types == {} and programs.tuned("default") is None


def test_a_type_in_use_as_the_profile_cannot_be_removed(shell):
    shell.run_line_magic("deepagent_config", "--profile shouter")
    with pytest.raises(UsageError, match="configured --profile"):
        shell.run_line_magic("deepagent_agents", "--remove shouter")
    shell.run_line_magic("deepagent_config", "--profile default")
    with pytest.raises(UsageError, match="unknown profile 'nobody'"):
        shell.run_line_magic("deepagent_prompt", "--profile nobody")
