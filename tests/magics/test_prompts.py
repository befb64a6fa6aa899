"""magics/prompts.py: %deepagent_prompt: read the prompt, edit it in a cell, diff, reset, save and load, through a real shell."""

from __future__ import annotations

import json

import pytest
from IPython.core.error import UsageError

from deepagent_magics import DeepAgent
from deepagent_magics.tuning import programs
from deepagent_magics.core.loop.profiles import available_profiles
from deepagent_magics.testing import ScriptedLM

PACKAGED = "You are a deep agent: you solve the task in Python, one step at a time"
EDITED = "You are a pirate analyst. MARKER-PIRATE: answer like a pirate."


@pytest.fixture(autouse=True)
def _reset_programs():
    yield
    for profile in available_profiles():
        programs.reset(profile)


def submit_ok(request):
    return ("Done.", "SUBMIT(result='ok')")


def run_agent(ip, lm):
    result = ip.run_cell("%%deepagent --lm lm\nSay ok.")
    assert result.error_in_exec is None, result.error_in_exec
    return ip.user_ns["_deepagent_run"], lm.requests[-1]["system"]


def test_editing_the_prompt_changes_what_the_lm_receives_and_reset_restores_it(ip):
    lm = ip.user_ns["lm"] = ScriptedLM(submit_ok)
    first, system = run_agent(ip, lm)
    assert PACKAGED in system and "MARKER-PIRATE" not in system

    ip.run_cell_magic("deepagent_prompt", "", EDITED)
    edited, system = run_agent(ip, lm)
    assert "MARKER-PIRATE" in system and PACKAGED not in system
    assert "## Your REPL" in system and "## Tools" in system  # the REPL's rules and the tools stay
    assert edited.prompt_hash != first.prompt_hash

    ip.run_line_magic("deepagent_prompt", "--reset")
    reset, system = run_agent(ip, lm)
    assert PACKAGED in system and "MARKER-PIRATE" not in system
    assert reset.prompt_hash == first.prompt_hash


def test_the_prompt_is_shown_as_the_lm_sees_it_with_the_tools_even_without_an_lm(ip, capsys):
    ip.run_line_magic("deepagent_prompt", "")
    out = capsys.readouterr().out
    assert "Profile 'default': packaged" in out
    assert PACKAGED in out
    assert "Added for the model: the REPL's rules and the tools offered" in out
    assert "- `write_file(path, content)`: " in out  # each tool once, as a caller writes it
    assert "You are tasked with producing" not in out and "Additional tools available" not in out  # not RLM's
    for tool in ("write_todos", "grep", "llm_query_batched", "SUBMIT"):
        assert tool in out.split("\n")[1]

    ip.run_cell_magic("deepagent_prompt", "", EDITED)
    ip.run_line_magic("deepagent_prompt", "")
    out = capsys.readouterr().out
    assert "text edited in this kernel" in out and "MARKER-PIRATE" in out and PACKAGED not in out


def test_diff_shows_the_edit_against_the_packaged_text(ip, capsys):
    ip.run_line_magic("deepagent_prompt", "--diff")
    assert "(no changes" in capsys.readouterr().out
    ip.run_cell_magic("deepagent_prompt", "", EDITED)
    ip.run_line_magic("deepagent_prompt", "--diff")
    out = capsys.readouterr().out
    assert "--- prompts/default.md (packaged)" in out and "+++ default (edited in this kernel)" in out
    assert any(line.startswith("-" + PACKAGED) for line in out.splitlines())
    assert f"+{EDITED}" in out.splitlines()


def test_an_edit_reaches_sub_agents_of_the_profile(ip):
    ip.run_cell_magic("deepagent_prompt", "", "Be brief.\n<!-- depth: root -->\nROOT-ONLY\n<!-- depth: sub -->\nSUB-ONLY\n<!-- end depth -->\n")
    assert "SUB-ONLY" in DeepAgent(depth=1).instructions and "ROOT-ONLY" not in DeepAgent(depth=1).instructions
    assert "ROOT-ONLY" in DeepAgent(depth=0).instructions


def test_save_then_load_gives_the_same_program(ip, tmp_path, capsys):
    lm = ip.user_ns["lm"] = ScriptedLM(submit_ok)
    ip.run_cell_magic("deepagent_prompt", "", EDITED)
    saved_run, saved_system = run_agent(ip, lm)
    path = tmp_path / "pirate.json"
    ip.run_line_magic("deepagent_prompt", f"--save {path}")
    state = json.loads(path.read_text())
    assert "MARKER-PIRATE" in state["rlm.generate_action"]["signature"]["instructions"]  # DSPy's JSON

    ip.run_line_magic("deepagent_prompt", "--reset")
    _, system = run_agent(ip, lm)
    assert "MARKER-PIRATE" not in system

    ip.run_line_magic("deepagent_prompt", f"--load {path}")
    assert f"now runs the program in {path}" in capsys.readouterr().out
    loaded_run, loaded_system = run_agent(ip, lm)
    assert loaded_system == saved_system
    assert loaded_run.prompt_hash == saved_run.prompt_hash

    plain = DeepAgent()  # the JSON is a plain DeepAgent state: it loads without the magics too
    plain.load(str(path))
    assert "MARKER-PIRATE" in plain.prompt_instructions


def test_a_program_with_demos_survives_save_and_load(ip, tmp_path):
    import dspy

    agent = DeepAgent()
    agent.rlm.generate_action.demos = [dspy.Example(variables_info="v", repl_history="", iteration="1/20",
                                                    reasoning="Answer at once.", code="SUBMIT(result='DEMO')",
                                                    augmented=True)]
    programs.install("default", agent, "test")
    lm = ip.user_ns["lm"] = ScriptedLM(lambda request: ("Done.", f"SUBMIT(result='demos={request.demos}')"))
    with_demos, _ = run_agent(ip, lm)
    assert with_demos.result == "demos=1"
    path = tmp_path / "demos.json"
    ip.run_line_magic("deepagent_prompt", f"--save {path}")
    ip.run_line_magic("deepagent_prompt", "--reset")
    assert run_agent(ip, lm)[0].result == "demos=0"
    ip.run_line_magic("deepagent_prompt", f"--load {path}")
    loaded, _ = run_agent(ip, lm)
    assert loaded.result == "demos=1" and loaded.prompt_hash == with_demos.prompt_hash


@pytest.mark.parametrize("line, cell, message", [
    ("--profile nope", None, "unknown profile 'nope'"),
    ("", "   \n", "the cell is empty"),
    ("--save prompt.txt", None, "give a .json path"),
    ("--load /nonexistent/tuned.json", None, "no such file"),
])
def test_prompt_mistakes_are_one_line_usage_errors(ip, line, cell, message):
    with pytest.raises(UsageError, match=message):
        if cell is None:
            ip.run_line_magic("deepagent_prompt", line)
        else:
            ip.run_cell_magic("deepagent_prompt", line, cell)


def test_loading_a_file_that_is_not_a_program_is_a_usage_error(ip, tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"something": "else"}))
    with pytest.raises(UsageError, match="not a saved deep agent program"):
        ip.run_line_magic("deepagent_prompt", f"--load {path}")
    assert programs.tuned("default") is None


@pytest.mark.parametrize("profile, opening", [
    ("researcher", "You are a research agent"),
    ("coder", "You are a coding agent"),
])
def test_the_researcher_and_coder_profiles_reach_the_lm_with_their_depth_sections(ip, profile, opening):
    lm = ip.user_ns["lm"] = ScriptedLM(submit_ok)
    result = ip.run_cell(f"%%deepagent --lm lm --profile {profile}\nSay ok.")
    assert result.error_in_exec is None
    system = lm.requests[-1]["system"]
    assert opening in system and "## You are the root agent" in system and "## You are a sub-agent" not in system
    assert ip.user_ns["_deepagent_run"].profile == profile
    sections = {depth: DeepAgent(profile=profile, depth=depth).instructions for depth in (0, 1, 2)}
    assert "## You are a sub-agent\n" in sections[1] + "\n" and "at the deepest level" in sections[2]
    for text in sections.values():
        assert "## Workflow" in text and "<!--" not in text
    for depth in (0, 1, 2):  # the tools are the composed prompt's, once, for every depth
        assert DeepAgent(profile=profile, depth=depth).prompt_instructions.count("## Tools") == 1


@pytest.mark.parametrize("profile", available_profiles())
def test_every_profile_can_be_shown_edited_and_reset(ip, capsys, profile):
    ip.run_line_magic("deepagent_prompt", f"--profile {profile}")
    shown = capsys.readouterr().out
    assert f"Profile {profile!r}: packaged" in shown
    assert DeepAgent(profile=profile).instructions.splitlines()[0] in shown
    ip.run_cell_magic("deepagent_prompt", f"--profile {profile}", f"MARKER-{profile}: be brief.")
    for depth in (0, 1, 2):  # sub-agents of the profile (delegates, reviewers) are built from its text
        assert DeepAgent(profile=profile, depth=depth).instructions == f"MARKER-{profile}: be brief."
    ip.run_line_magic("deepagent_prompt", f"--profile {profile} --reset")
    assert "MARKER" not in DeepAgent(profile=profile).instructions


def test_last_shows_the_last_request_as_the_model_read_it(ip, capsys):
    lm = ip.user_ns["lm"] = ScriptedLM([("Look.", "print(1)"), ("Done.", "SUBMIT(result='ok')")])
    ip.user_ns["sales"] = [1, 2]
    run_agent(ip, lm)
    ip.run_line_magic("deepagent_prompt", "--last")
    out = capsys.readouterr().out
    sent = lm.requests[-1]
    assert sent["system"] in out and sent["user"] in out  # exactly what was sent, both messages
    assert f"{len(sent['system']) + len(sent['user']):,} characters" in out
    assert "Step 1. Look." in out and "Say ok." in out and "- sales: list, 2 items" in out
