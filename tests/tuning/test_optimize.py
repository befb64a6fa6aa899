"""tuning/optimize.py, through %deepagent_optimize: DSPy optimisers improve the agent on a tiny train set, with scripted LMs
whose answers depend on the prompt they receive (so a better prompt measurably scores higher)."""

from __future__ import annotations

import re
import sys

import dspy
import pytest
from IPython.core.error import UsageError

from deepagent_magics.tuning import programs
from deepagent_magics.core.loop.profiles import available_profiles
from deepagent_magics.testing import ScriptedLM

HINT = "Always give the answer in CAPITAL LETTERS."
TRAIN = [{"task": f"Shout the word {word} (easy)", "answer": word.upper()} for word in ("cat", "dog")]
VAL = [{"task": f"Shout the word {word}", "answer": word.upper()} for word in ("sun", "sea", "sky")]


@pytest.fixture(autouse=True)
def _reset_programs():
    yield
    for profile in available_profiles():
        programs.reset(profile)


def word(request) -> str:
    return re.search(r"Shout the word (\w+)", request.task).group(1)


def demo_policy(request):
    """Shouts when the task says it is easy, or when few-shot demos show how (what Bootstrap adds)."""
    if "(easy)" in request.task or request.demos:
        return ("Shout it.", f"SUBMIT(result={word(request).upper()!r})")
    return ("Say it.", f"SUBMIT(result={word(request)!r})")


def instruction_policy(request):
    """Shouts only when the instructions say so (what GEPA's reflection adds)."""
    if HINT in request.system:
        return ("The instructions say capitals.", f"SUBMIT(result={word(request).upper()!r})")
    return ("Say it.", f"SUBMIT(result={word(request)!r})")


def reflect(prompt):
    """The reflection LM: reads the metric's feedback and appends what it asks for to the instruction."""
    current = re.search(r"\[\[ ## current_instruction ## \]\]\n(.*?)\n\n\[\[ ## ", prompt, re.S)
    if current and "capital letters" in prompt:
        return {"new_instruction": current.group(1) + "\n\n" + HINT}
    return {"new_instruction": current.group(1) if current else "Do the task."}


def shout_metric(example, pred, trace=None, pred_name=None, pred_trace=None):
    correct = pred.result == example.answer
    return dspy.Prediction(score=float(correct),
                           feedback="Correct." if correct else "The answer must be in capital letters.")


def plain_metric(example, pred):
    return float(pred.result == example.answer)


def setup(ip, policy):
    ip.user_ns.update(train=TRAIN, val=VAL, shout=shout_metric, plain=plain_metric,
                      lm=ScriptedLM(policy), reflector=ScriptedLM([], replies=reflect))


def run_cell(ip, task="Shout the word moon"):
    result = ip.run_cell(f"%%deepagent --lm lm\n{task}")
    assert result.error_in_exec is None, result.error_in_exec
    return ip.user_ns["_deepagent_run"]


def test_bootstrap_adds_demos_that_raise_the_validation_score(ip, capsys):
    setup(ip, demo_policy)
    assert run_cell(ip).result == "moon"
    outcome = ip.run_line_magic("deepagent_optimize", "--trainset train --valset val --metric plain "
                                                      "--optimizer bootstrap --lm lm --threads 2")
    out = capsys.readouterr().out
    assert "bootstrap: validation score 0.00 -> 1.00" in out
    assert outcome.before.score("deep agent") == 0.0 and outcome.after.score("deep agent (optimized)") == 1.0
    assert 1 <= len(outcome.agent.rlm.generate_action.demos) <= 2

    tuned = run_cell(ip)  # the optimised program is the active one for %%deepagent
    assert tuned.result == "MOON"
    assert ip.user_ns["lm"].requests[-1]["user"].count("[[ ## variables_info ## ]]") >= 2  # demo + request
    ip.run_line_magic("deepagent_prompt", "")
    assert "optimized with bootstrap" in capsys.readouterr().out

    ip.run_line_magic("deepagent_prompt", "--reset")
    untuned = run_cell(ip)
    assert untuned.result == "moon" and untuned.prompt_hash != tuned.prompt_hash


def test_gepa_reflects_on_feedback_and_the_new_instruction_raises_the_score(ip, capsys):
    setup(ip, instruction_policy)
    outcome = ip.run_line_magic("deepagent_optimize", "--trainset train --valset val --metric shout "
                                                      "--optimizer gepa --max-metric-calls 12 "
                                                      "--reflection-lm reflector --lm lm --threads 2")
    out = capsys.readouterr().out
    assert "gepa: validation score 0.00 -> 1.00" in out
    assert HINT in outcome.agent.prompt_instructions
    reflection_prompts = [request["user"] for request in ip.user_ns["reflector"].requests]
    assert any("The answer must be in capital letters." in prompt for prompt in reflection_prompts)

    assert run_cell(ip).result == "MOON"
    assert HINT in ip.user_ns["lm"].requests[-1]["system"]
    ip.run_line_magic("deepagent_prompt", "--diff")
    assert f"+{HINT}" in capsys.readouterr().out.splitlines()

    table = ip.run_line_magic("deepagent_eval", "--devset val --metric plain --lm lm")
    assert table.systems == ["deep agent", "deep agent (optimized)"]
    assert table.score("deep agent") == 0.0 and table.score("deep agent (optimized)") == 1.0

    ip.run_line_magic("deepagent_prompt", "--reset")
    assert run_cell(ip).result == "moon"
    assert HINT not in ip.user_ns["lm"].requests[-1]["system"]


def test_editing_after_optimising_keeps_demos_and_takes_the_new_text(ip):
    setup(ip, demo_policy)
    ip.run_line_magic("deepagent_optimize", "--trainset train --metric plain --optimizer bootstrap --lm lm")
    ip.run_cell_magic("deepagent_prompt", "", "MARKER-EDIT: shout things.")
    run = run_cell(ip)
    assert run.result == "MOON"  # the demos are still there
    assert "MARKER-EDIT" in ip.user_ns["lm"].requests[-1]["system"]


@pytest.mark.parametrize("line, message", [
    ("--trainset nope --metric plain", "--trainset nope: there is no notebook variable 'nope'"),
    ("--trainset train --valset one --metric plain", "--valset one: one must be a list of examples"),
    ("--trainset val --metric plain --optimizer adam", "invalid choice: 'adam'"),
    ("--trainset train --metric plain --max-metric-calls 0", "--max-metric-calls must be positive"),
    ("--trainset train --metric broken", "the metric failed on every example"),
    ("--trainset train --metric plain --reflection-lm gpt", "--reflection-lm: 'gpt' is not a model id"),
])
def test_optimisation_mistakes_are_one_line_usage_errors(ip, line, message):
    setup(ip, demo_policy)
    ip.user_ns.update(broken=lambda example, pred: 1 / 0, one={"task": "x", "answer": "X"})
    with pytest.raises(UsageError, match=message):
        ip.run_line_magic("deepagent_optimize", line + " --lm lm")
    assert programs.tuned("default") is None


def test_optimising_without_an_lm_is_a_usage_error(ip):
    setup(ip, demo_policy)
    with pytest.raises(UsageError, match="No LM configured"):
        ip.run_line_magic("deepagent_optimize", "--trainset train --metric plain")


@pytest.mark.needs_extra("optimize")
def test_mipro_searches_demos_and_instructions_and_raises_the_score(ip, capsys):
    setup(ip, demo_policy)
    ip.user_ns["lm"].script_engine.replies = lambda prompt: {
        "proposed_instruction": "Shout the word you are given.", "program_description": "A deep agent.",
        "module_description": "Proposes the next code step.", "observations": "Words.", "summary": "Words.",
        "reasoning": "Scripted."}
    ip.user_ns["train"] = TRAIN + [{"task": f"Shout the word {w} (easy)", "answer": w.upper()} for w in ("cow", "pig")]
    outcome = ip.run_line_magic("deepagent_optimize", "--trainset train --valset val --metric plain "
                                                      "--optimizer mipro --auto light --lm lm --threads 2")
    assert "mipro: validation score 0.00 -> 1.00" in capsys.readouterr().out
    assert outcome.agent.rlm.generate_action.demos
    assert run_cell(ip).result == "MOON"


def test_mipro_without_optuna_says_what_to_install(ip, monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)  # `import optuna` now raises ImportError
    setup(ip, demo_policy)
    with pytest.raises(UsageError, match="MIPROv2 needs optuna"):
        ip.run_line_magic("deepagent_optimize", "--trainset train --metric plain --optimizer mipro --lm lm")
