"""Row 8: compaction: characters per LM request over a 50-step run, with compaction on and off.

The same scripted trajectory as row 5 (`trajectory.actions`), played by `DeepAgent.run`
with compaction off, and on (``compact_at`` = `COMPACT_AT` tokens of REPL history; the
sub-LM's summary is a scripted ~200-word text, as a real summariser would write), beside
LangChain deepagents with its default middleware (its summarisation included) on the same
trajectory. The characters of each agent step's request are read at steps 5, 25 and 50;
the run's total input counts every request, the summariser's calls included.

Targets: with compaction, the request at step 50 ≤ 2× the request at step 5, and the run's
total input below deepagents'.
"""

from __future__ import annotations

import tempfile
from typing import Any

from . import langchain_peer, peers
from .common import Config, result, table, target
from .trajectory import actions, dspy_steps

NAME = "compaction"
TITLE = "8. Compaction over a long run"
COMMAND = "python -m bench.run --only compaction"
COMPACT_AT = 1000  # tokens of REPL history in the prompt (about 4,000 characters)
SUMMARY = ("The agent computed partial sums v1..vN with sum(range(i * 100)) and printed each; "
           "the values grow quadratically. Every tenth step it saved a progress note to notes/stepN.txt. "
           "Nothing failed. What remains: continue the sums to step 50, then report the last value. ") * 3


def _play(script: list, compact_at: Any) -> dict[str, Any]:
    from deepagent_magics import DeepAgent, ScriptedLM

    lm = ScriptedLM(dspy_steps(script), replies=SUMMARY)
    agent = DeepAgent(lm=lm, workspace=tempfile.mkdtemp(prefix="bench-ws-"), max_iters=len(script) + 5, max_depth=0)
    agent.compact_at = compact_at
    run = agent.run(peers.TASK, namespace={})
    requests = lm.requests
    steps = [len(r["system"]) + len(r["user"]) for r in requests if "[[ ## repl_history ## ]]" in r["user"]]
    return {"steps": steps, "total": sum(len(r["system"]) + len(r["user"]) for r in requests),
            "compactions": len(run.config.get("compactions") or []), "status": run.status}


def run(config: Config) -> dict[str, Any]:
    steps = 10 if config.smoke else 50
    marks = sorted({min(5, steps), steps // 2, steps}) if config.smoke else [5, 25, 50]
    script = actions(steps)
    at = 300 if config.smoke else COMPACT_AT  # the smoke run's 10 steps pass it once
    plays = {"DeepAgent.run, compaction off": _play(script, 0),
             f"DeepAgent.run, compaction at {at:,} tokens of history": _play(script, at)}
    lang = None
    if langchain_peer.available() is None and not config.smoke:
        lang = peers.deepagents(script)
        schemas = lang.extra["tool_schema_chars"]
        curve = [chars + schemas for chars in lang.prompt_chars]
        plays["deepagents (summarisation middleware), messages + tool schemas"] = {
            "steps": curve, "total": sum(curve), "compactions": None, "status": "finished"}

    rows = []
    for label, play in plays.items():
        curve = play["steps"]
        values = [curve[min(mark, len(curve)) - 1] for mark in marks]
        rows.append([label] + [f"{value:,}" for value in values]
                    + [f"{play['total']:,}", "-" if play["compactions"] is None else str(play["compactions"])])
    out = result(NAME, TITLE, COMMAND)
    out["tables"].append(table(
        f"Characters in the LM request at steps {', '.join(map(str, marks))} of one {steps}-step run",
        ["prompt"] + [f"step {mark}" for mark in marks] + ["input chars over the run", "compactions"], rows))
    on = list(plays.values())[1]
    growth = on["steps"][marks[-1] - 1] / on["steps"][marks[0] - 1]
    out["targets"].append(target(f"compaction on: request at step {marks[-1]} ÷ step {marks[0]}", "≤ 2×",
                                 f"{growth:.2f}×", growth <= 2, over=growth / 2))
    if lang is not None:
        theirs = sum(c + lang.extra["tool_schema_chars"] for c in lang.prompt_chars)
        share = on["total"] / theirs
        out["targets"].append(target("compaction on: the run's input below deepagents'", "< 1×",
                                     f"{share:.2f}× deepagents", share < 1, over=share))
    else:
        out["targets"].append(target("the run's input below deepagents'", "< 1×", "deepagents not available", None))
    out["notes"].append(
        "Input is counted in characters (about 4 per token). With compaction the REPL history in the prompt is "
        "a summary of the older steps and the last 3 steps verbatim; every step stays on the run, in its record and "
        "in the agent's history() tool. deepagents' summarisation triggers on a share of the model's context window, "
        "which this short trajectory does not reach: its history grows a message pair per step."
    )
    out["raw"] = {"steps": steps, "marks": marks, "curves": {label: play["steps"] for label, play in plays.items()}}
    return out
