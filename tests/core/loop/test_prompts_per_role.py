"""The prompt of every role, held word for word: a change that moves code must not change what the model reads.

Each role's prompt (the root's first request, system and user text; a sub-agent's, the deepest sub-agent's, the
reviewer's and a custom type's action instructions with what a run adds to them) is rendered by the real agent
and compared with the text kept in ``tests/data/prompts/<role>.txt``. A commit that changes the prompt on
purpose writes them again (``DEEPAGENT_WRITE_PROMPTS=1 pytest tests/unit/core/loop/test_prompts_per_role.py``)
and the diff shows the reviewer exactly what the model will read differently; a refactor leaves them alone.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deepagent_magics import DeepAgent, SubAgentType
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tools.delegation.subagent import SubAgent

KEPT = Path(__file__).resolve().parents[2] / "data" / "prompts"
WRITE = os.environ.get("DEEPAGENT_WRITE_PROMPTS") == "1"
TASK = "Which three features of `diabetes` are most associated with `target`?"


def fit_model(formula: str) -> str:
    """Fit an OLS model for `formula` and return its summary."""
    return formula


ANALYST = SubAgentType("analyst", "fits models and reports their errors", "ANALYST-ONLY: fit the model the task "
                       "names, then report.", tools=[fit_model])


def frames() -> dict:
    rng = np.random.default_rng(0)
    return {"diabetes": pd.DataFrame(rng.normal(size=(442, 3)), columns=["age", "bmi", "target"]),
            "wine": pd.DataFrame(rng.normal(size=(178, 2)), columns=["alcohol", "hue"])}


def root_request(tmp_path: Path, **settings) -> str:
    lm = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
    workspace = tmp_path / "workspace"
    run = DeepAgent(lm=lm, workspace=workspace, skills_dir=str(tmp_path / "no-skills"), door="notebook",
                    **settings).run(TASK, frames())  # the notebook's words (each door's: tests/end_to_end/test_doors.py)
    assert run.status == "finished", run.error
    request = lm.requests[0]
    return f"=== system\n{request['system']}\n=== user\n{request['user']}\n"


def child_prompt(tmp_path: Path, agent: SubAgent) -> str:
    """What a sub-agent reads before its inputs: its action instructions and what each of its runs adds."""
    agent.skills_dir = str(tmp_path / "no-skills")
    extra = agent.extensions.extra_instructions(agent, tmp_path / "workspace")
    return f"=== system\n{agent.prompt_instructions}\n=== run\n{extra}\n"


ROLES = {
    "root": lambda tmp: root_request(tmp, subagents=[ANALYST]),
    "root-without-delegation": lambda tmp: root_request(tmp, max_depth=0),
    "root-coder": lambda tmp: root_request(tmp, profile="coder"),
    "sub-agent": lambda tmp: child_prompt(tmp, SubAgent(profile="default", depth=1, max_depth=2)),
    "deepest-sub-agent": lambda tmp: child_prompt(tmp, SubAgent(profile="default", depth=2, max_depth=2)),
    "reviewer": lambda tmp: child_prompt(tmp, SubAgent(profile="reviewer", depth=1, max_depth=2)),
    "custom-type": lambda tmp: child_prompt(tmp, SubAgent(profile="analyst", depth=1, max_depth=2,
                                                          instructions=ANALYST.instructions_at(1, 2),
                                                          tools=ANALYST.tools)),
}


def rendered(role: str, tmp_path: Path) -> str:
    text = ROLES[role](tmp_path)
    for path, name in ((tmp_path / "workspace", "<workspace>"), (Path.cwd(), "<cwd>")):
        text = text.replace(str(path.resolve()), name)
    return text


@pytest.mark.parametrize("role", sorted(ROLES))
def test_each_role_reads_the_prompt_kept_for_it(role, tmp_path):
    text = rendered(role, tmp_path)
    kept = KEPT / f"{role}.txt"
    if WRITE:
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(text)
    assert kept.exists(), f"no kept prompt for {role}: write it with DEEPAGENT_WRITE_PROMPTS=1"
    assert text == kept.read_text(), f"the {role} prompt changed: see the diff, then write it again on purpose"


def test_the_kept_prompts_are_real_prompts():
    """The kept texts are the prompts (each role's own words are in its file), not empty or stale files."""
    texts = {path.stem: path.read_text() for path in KEPT.glob("*.txt")}
    assert set(texts) == set(ROLES)
    assert "## Tools" in texts["root"] and "- analyst: fits models" in texts["root"] and "=== user" in texts["root"]
    assert "delegate" not in texts["root-without-delegation"]
    assert "SUBMIT(status=..., issues=..., suggestions=...)" in texts["reviewer"]
    assert texts["custom-type"].startswith("=== system\nANALYST-ONLY") and "fit_model(formula)" in texts["custom-type"]
