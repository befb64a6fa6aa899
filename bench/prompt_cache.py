"""Row 10: how much of each LM request a provider's prompt cache can reuse.

One DeepAgent run on the scripted trajectory (the same one as rows 4 and 5); for each
request, the share of its characters (system message, then the user message) that the
next request starts with: what a prefix cache (OpenAI's automatic one, Anthropic's marked
system block) can serve from cache on the following step. The instructions and tool docs
head every request unchanged; the REPL history only grows, so only the iteration counter
and the newest step differ (`deepagent_magics.core.model.caching`).
"""

from __future__ import annotations

import tempfile
from itertools import pairwise
from typing import Any

from .common import Config, median, result, table, target
from .trajectory import actions, dspy_steps

NAME = "prompt_cache"
TITLE = "10. Stable prompt prefix (prompt caching)"
COMMAND = "python -m bench.run --only prompt_cache"
GOAL = 0.95  # the share each request keeps for the next (about 0.98 when first measured)


def requests(steps: int) -> list[str]:
    """The text of every LM request of one ``steps``-step DeepAgent run."""
    from deepagent_magics import DeepAgent
    from deepagent_magics.testing import ScriptedLM

    lm = ScriptedLM(dspy_steps(actions(steps)))
    agent = DeepAgent(lm=lm, workspace=tempfile.mkdtemp(prefix="bench-cache-"), max_iters=steps + 5, max_depth=0)
    agent.record_runs = False
    run = agent.run("Compute the partial sums and report.", {})
    if run.status != "finished":
        raise RuntimeError(f"the run ended {run.status}: {run.error}")
    return [request["system"] + "\n" + request["user"] for request in lm.requests]


def run(config: Config) -> dict[str, Any]:
    from deepagent_magics.core.model.caching import stable_prefix_share

    steps = 10 if config.smoke else 50
    texts = requests(steps)
    shares = [stable_prefix_share(text, following) for text, following in pairwise(texts)]
    reused = sum(share * len(text) for share, text in zip(shares, texts))
    total = sum(len(text) for text in texts[:-1])
    marks = sorted({1, min(5, len(shares)), len(shares) // 2, len(shares)})
    out = result(NAME, TITLE, COMMAND)
    out["tables"].append(table(
        f"Share of each request that the next one starts with, over one {steps}-step DeepAgent run",
        [f"request {mark}" for mark in marks] + ["median", "lowest", "chars reusable / chars sent"],
        [[f"{shares[mark - 1]:.3f}" for mark in marks]
         + [f"{median(shares):.3f}", f"{min(shares):.3f}", f"{reused / total:.3f}"]],
    ))
    lowest = min(shares)
    out["targets"].append(target("stable prefix of each request (lowest)", f"≥ {GOAL:.2f}", f"{lowest:.3f}",
                                 lowest >= GOAL, GOAL / lowest if lowest else None, lower_bound=True))
    out["notes"].append(
        "The system message (instructions, tool docs, field descriptions) and the inputs (task, context, the "
        "notebook summary, made once per run) are byte-identical from step to step; the REPL history grows at "
        "its end, so the next request differs only from the newest step and the iteration counter on. For an "
        "Anthropic model the system block is marked with cache_control; OpenAI caches such prefixes by itself."
    )
    out["raw"] = {"steps": steps, "shares": shares, "chars": [len(text) for text in texts]}
    return out
