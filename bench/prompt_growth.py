"""Row 5: how the prompt grows over one run, against deepagents' message history.

One 50-step run each of `DeepAgent.run` and LangChain deepagents on the same
trajectory; the characters of each LM request are read at steps 5, 25 and 50.
For DeepAgent that is everything DSPy sends (system message with instructions
and tool docs, the user message with the inputs and the REPL history); for
deepagents, the messages it sends (system prompt included) and, separately, the
JSON schemas of its bound tools, which a provider receives with every call too.
"""

from __future__ import annotations

from typing import Any

from . import langchain_peer, peers
from .common import Config, result, table, target
from .trajectory import actions

NAME = "prompt_growth"
TITLE = "5. Prompt growth over a run"
COMMAND = "python -m bench.run --only prompt_growth"


def run(config: Config) -> dict[str, Any]:
    steps = 10 if config.smoke else 50
    marks = sorted({min(5, steps), steps // 2, steps}) if config.smoke else [5, 25, 50]
    script = actions(steps)
    ours = peers.deepagent(script)
    curves = {"DeepAgent.run (DSPy RLM prompt)": ours.prompt_chars}
    lang = None
    if langchain_peer.available() is None and not config.smoke:
        lang = peers.deepagents(script)
        schemas = lang.extra["tool_schema_chars"]
        curves["deepagents: messages"] = lang.prompt_chars
        curves["deepagents: messages + tool schemas"] = [chars + schemas for chars in lang.prompt_chars]

    rows = []
    for label, curve in curves.items():
        values = [curve[mark - 1] for mark in marks]
        slope = (curve[marks[-1] - 1] - curve[marks[0] - 1]) / (marks[-1] - marks[0])
        rows.append([label] + [f"{value:,}" for value in values] + [f"{slope:,.0f}", f"{sum(curve):,}"])
    out = result(NAME, TITLE, COMMAND)
    out["tables"].append(table(
        f"Characters in the LM request at steps {', '.join(map(str, marks))} of one {steps}-step run",
        ["prompt"] + [f"step {mark}" for mark in marks] + [f"chars added per step ({marks[0]}→{marks[-1]})", "chars over the run"],
        rows,
    ))
    if lang is not None:
        ratio_end = ours.prompt_chars[steps - 1] / (lang.prompt_chars[steps - 1] + lang.extra["tool_schema_chars"])
        out["targets"].append(target("report the curve for both", "curve", f"step {steps}: {ratio_end:.2f}× deepagents (with tool schemas)", None))
    else:
        out["targets"].append(target("report the curve for both", "curve", "deepagents not available in this run", None))
    out["notes"].append(
        "Both histories grow linearly: each step appends its reasoning, code and output. DSPy's RLM restates the "
        "whole REPL history in one user message per call and puts the instructions and tool docs in the system "
        "message; deepagents keeps a message list (one AI message with a tool call and one tool message per step) "
        "and sends its tool schemas beside it."
    )
    out["notes"].append(
        "deepagents 0.7 keeps its tool guidance in the tool schemas (its middleware adds no prose to the system "
        "message) and has no base prompt for a model without a harness profile, such as the fake one: its system "
        "message here is the 30-character prompt the benchmark gives it.",
    )
    out["raw"] = {"steps": steps, "marks": marks, "curves": curves,
                  "deepagents_messages": lang.extra["messages"] if lang else None}
    return out
