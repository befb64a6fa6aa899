"""What the model reads: the size of the prompt per role, and how much of all input is fixed text.

Three systems read the same notebook (two DataFrames shaped like scikit-learn's ``diabetes`` and ``wine``,
the user's cell that made them) and play the same 5 steps: the replies a capable model wrote for this task
(`RECORDED`, from the project's recorded real runs; on that day 64% of its input was fixed prompt):

- ``deepagent``: `DeepAgent` with its default tools, as ``%%deepagent`` runs it;
- ``dspy.RLM``: bare ``dspy.RLM`` over the same signature, profile text and tools (RLM's own action template,
  its second tool list, the inputs previewed in 1,000 characters each): what the agent read before it owned
  its prompt;
- ``deepagents``: LangChain's deepagents with one ``run_python`` tool (its system prompt and tool schemas).

Measured: the characters (and tokens, when tiktoken has an encoding at hand) of the first request; the fixed
share of all input over the 5 steps (text that is the same whatever the task, data or history: the system
message, tool schemas, and in the user message the field markers, the section heads, each step's restated
labels and the closing line: `FIXED`); and, for deepagent, the first request of a sub-agent and of the
reviewer (real kernels). The model is scripted: nothing here is a model's time.

Then the long real session (`real_session`): the 26 requests of a capable model's second session replayed
through the magics (several tasks, an ``llm_query``, a custom sub-agent type in a real kernel, a reviewer, a
checkpoint and a ``--continue`` turn after a restart, the command line), each agent answered with what the
model wrote. Its fixed share is the goal (<= 35%); the recorded requests of that day measured 43.8%.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from deepagent_magics.tools.delegation.tools import PACKAGED_DESCRIPTIONS

from .common import result, table, target

NAME = "model_reads"
TITLE = "What the model reads"
COMMAND = "python -m bench.run --only model_reads"
ROOT_GOAL, SHARE_GOAL = 6000, 0.35
RECORDED_SESSION_SHARE = 0.438  # the 26 requests of /work/shared/real-model-runs/session2 as sent that day, by `fixed`

TASK = ("Which three features of `diabetes` are most associated with disease progression (`target`)? Keep the "
        "per-feature correlations in a variable, write report.md with a table and one sentence per feature, "
        "and summarise.")
CELLS = ("The user's recent notebook cells (oldest first; how their variables were made):\n[In 1]\n"
         "%load_ext deepagent_magics\nimport dspy\nimport pandas as pd\n"
         "from sklearn.datasets import load_wine, load_diabetes\nwine = load_wine(as_frame=True).frame\n"
         "diabetes = load_diabetes(as_frame=True).frame\nprint(wine.shape, diabetes.shape)")
DIABETES = ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6", "target"]
WINE = ["alcohol", "malic_acid", "ash", "alcalinity_of_ash", "magnesium", "total_phenols", "flavanoids",
        "nonflavanoid_phenols", "proanthocyanins", "color_intensity", "hue", "od280/od315_of_diluted_wines",
        "proline"]
RECORDED = Path(__file__).parent / "data" / "real_diabetes_run.json"  # a capable model's 5 replies to TASK
SCRIPT = [(step["reasoning"], step["code"]) for step in json.loads(RECORDED.read_text())["steps"]]
CHILD_TASK = "Find which features most distinguish wine cultivar 1 from the other two. Data: wine.csv in the workspace."
ROLES_SCRIPT = [
    ("Save the data for a sub-agent, then delegate.",
     f"print(write_file('wine.csv', wine.to_csv(index=False)))\nfound = delegate({CHILD_TASK!r})\nprint(found)"),
    ("Have the draft reviewed.", "verdict = review('Summarise wine', 'Cultivar 1 has the lowest alcohol.', "
                                 "['The numbers match wine.csv'])\nprint(verdict)"),
    ("Done.", "SUBMIT(result=str(found))"),
]
# Fixed text in a user message: the same whatever the task, data or history. Both DSPy's step labels (before)
# and ours (core.model.compaction.Steps) are listed, so a request of either day is measured alike.
FIXED = [re.compile(pattern, re.M) for pattern in (
    r"\[\[ ## \w+ ## \]\]",
    r"^(?:Task \(`task`\):|Context \(`context`\):|(?:Notebook v|V)ariables \(already defined: use them by name\):"
    r"|Variables in scope:)$",
    r"^You have not interacted with the REPL environment yet\.$", r"^No steps yet\.$",
    r"^(?:Answer|Respond) with .*\Z",
    r"^=== Steps? [\d-]+(?: \(compacted[^)]*\))? ===$", r"^Reasoning: ", r"^Code:$", r"^Output(?: \([\d,]+ chars\))?:$",
    r"^Step \d+\.", r"^Steps 1-\d+, compacted[^:\n]*:$", r"^```(?:python)?$",
    r"^Workspace(?: \(working directory\))?: ", r"; your working directory: ", r"^Sub-agent types for `agent=`:$",
    r"^## Skills \(before work a skill covers: `print\(read_skill\(\"NAME\"\)\)`\)$",
)]
# The packaged sub-agent types' lines: the same in every run, but said with what the run has (its workspace, the
# types the user added, its skills), which the rule above counts as the run's data, as it counts the variables.
# A second figure counts them as fixed too.
PACKAGED_TYPES = [re.compile(f"^- {re.escape(name)}: {re.escape(text)}$", re.M)
                  for name, text in PACKAGED_DESCRIPTIONS.items()]


def frames() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(7)
    diabetes = pd.DataFrame(rng.normal(0, 0.05, size=(442, 11)), columns=DIABETES)
    diabetes["target"] = rng.integers(25, 347, 442).astype(float)
    wine = pd.DataFrame(rng.normal(3, 1, size=(178, 13)), columns=WINE).assign(target=rng.integers(0, 3, 178))
    return {"diabetes": diabetes, "wine": wine, "pd": pd}


def run(config: Any) -> dict[str, Any]:
    counter = tokenizer()
    systems = {"deepagent": _deepagent(), "dspy.RLM": _bare_rlm()}
    deepagents = _deepagents()
    if deepagents is not None:
        systems["deepagents"] = deepagents
    roles = _roles()
    session = [_measure(r["system"], r["user"]) for r in _session()]
    rows = []
    for label, requests in systems.items():
        first = requests[0]
        share = sum(r["fixed"] for r in requests) / sum(r["chars"] for r in requests)
        rows.append([label, f"{first['chars']:,}", _tokens(counter, first["text"]), f"{share:.1%}",
                     f"{sum(r['chars'] for r in requests):,}",
                     f"{roles['sub-agent']:,}" if label == "deepagent" else "—",
                     f"{roles['reviewer']:,}" if label == "deepagent" else "—"])
    ours = systems["deepagent"]
    first, share = ours[0]["chars"], sum(r["fixed"] for r in ours) / sum(r["chars"] for r in ours)
    out = result(NAME, TITLE, COMMAND)
    out["tables"].append(table(
        "What the model reads: the first request, and all input over a scripted 5-step analysis of two DataFrames",
        ["system", "first request (chars)", "first request (tokens)", "fixed share of all input",
         "all input, 5 steps (chars)", "a sub-agent's first request", "the reviewer's first request"], rows))
    out["targets"].append(target("root's first request (default tools, two DataFrames)", f"≤ {ROOT_GOAL:,} chars",
                                 f"{first:,} chars", first <= ROOT_GOAL, first / ROOT_GOAL))
    out["targets"].append(target("fixed share of all input, 5 steps", f"≤ {SHARE_GOAL:.0%}", f"{share:.1%}",
                                 share <= SHARE_GOAL, share / SHARE_GOAL))
    session_share = sum(r["fixed"] for r in session) / sum(r["chars"] for r in session)
    system_share = sum(r["system"] for r in session) / sum(r["chars"] for r in session)
    with_types = sum(r["fixed_with_types"] for r in session) / sum(r["chars"] for r in session)
    session_first = session[0]["chars"]
    out["tables"].append(table(
        "The long real session replayed: every request of 5 tasks (an llm_query, a custom sub-agent type, a "
        "reviewer, a --continue turn after a restart, the command line)",
        ["requests", "all input (chars)", "first request (chars)", "first request (tokens)",
         "the system messages' share", "fixed share of all input", "the same, counting the packaged sub-agent types",
         "fixed share, the same requests as recorded"],
        [[str(len(session)), f"{sum(r['chars'] for r in session):,}", f"{session_first:,}",
          _tokens(counter, session[0]["text"]), f"{system_share:.1%}", f"{session_share:.1%}", f"{with_types:.1%}",
          f"{RECORDED_SESSION_SHARE:.1%}"]]))
    out["targets"].append(target("fixed share of all input, the real session replayed", f"≤ {SHARE_GOAL:.0%}",
                                 f"{session_share:.1%}", session_share <= SHARE_GOAL, session_share / SHARE_GOAL))
    out["targets"].append(target("the real session's first request", f"≤ {ROOT_GOAL:,} chars", f"{session_first:,} chars",
                                 session_first <= ROOT_GOAL, session_first / ROOT_GOAL))
    out["notes"].append(
        "Fixed text is what any task would send too: the system message, the tool schemas (deepagents), and in the "
        "request the field markers, section heads, each step's labels and a closing line. The task, the context, "
        "the variables view, what the run has (its workspace, sub-agent types, skills), each step's reasoning, code "
        "and output, and the tool calls and results are the rest. Tokens: " + ("tiktoken's o200k_base." if counter else
                                                "tiktoken has no encoding at hand here (it downloads them); not counted."))
    if deepagents is None:
        out["notes"].append("deepagents is not installed (the bench extra installs it): its row is left out.")
    out["raw"] = {label: requests for label, requests in systems.items()} | {"roles": roles, "session": session}
    return out


# ------------------------------------------------------------------ the systems
def _deepagent() -> list[dict[str, Any]]:
    from deepagent_magics import DeepAgent
    from deepagent_magics.interpreters.pool import KernelPool
    from deepagent_magics.testing import ScriptedLM

    lm = ScriptedLM(SCRIPT)
    pool = KernelPool(size=0)  # the root's default tools include delegation; this script does not delegate
    with tempfile.TemporaryDirectory() as workspace:
        run = DeepAgent(lm=lm, workspace=workspace, pool=pool).run(TASK, frames(), context=CELLS)
    pool.stop()
    assert run.status == "finished" and len(lm.requests) == len(SCRIPT), run.error
    return [_measure(r["system"], r["user"]) for r in lm.requests]


def _bare_rlm() -> list[dict[str, Any]]:
    import dspy

    from deepagent_magics import DeepAgent
    from deepagent_magics.core.loop.agent import build_signature
    from deepagent_magics.core.loop.profiles import load_profile
    from deepagent_magics.core.loop.variables import variables_view
    from deepagent_magics.core.run.run import Run
    from deepagent_magics.core.run.session import Session, activate, deactivate
    from deepagent_magics.core.workspace.workspace import Workspace
    from deepagent_magics.interpreters.shell import ShellInterpreterFactory
    from deepagent_magics.testing import ScriptedLM

    lm = ScriptedLM(SCRIPT)
    namespace = frames()
    with tempfile.TemporaryDirectory() as workspace:
        session = Session(Run(TASK), Workspace(workspace))
        rlm = dspy.RLM(build_signature(load_profile().instructions()), max_iters=len(SCRIPT) + 2,
                       tools=DeepAgent().builtin_tools(), interpreter_factory=ShellInterpreterFactory(namespace, session))
        token = activate(session)
        try:
            with dspy.context(lm=lm):
                rlm(task=TASK, context=CELLS, notebook_variables=variables_view(namespace))
        finally:
            deactivate(token)
    return [_measure(r["system"], r["user"]) for r in lm.requests]


def _deepagents() -> list[dict[str, Any]] | None:
    from . import langchain_peer

    if langchain_peer.available() is not None:
        return None
    import contextlib
    import io

    from deepagents import create_deep_agent
    from langchain_core.messages import AIMessage, SystemMessage

    namespace = frames()
    namespace["write_file"] = lambda path, content: f"wrote {path}"
    for name in ("write_todos", "read_file", "ls"):
        namespace[name] = lambda *a, **k: "ok"
    namespace["SUBMIT"] = lambda **kwargs: kwargs

    def run_python(code: str) -> str:
        """Run Python code in the notebook's namespace and return what it printed."""
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            try:
                exec(code, namespace)
            except Exception as exc:  # noqa: BLE001 - reported to the model, as a REPL would
                print(f"{type(exc).__name__}: {exc}")
        return buffer.getvalue()

    messages = [AIMessage(content=reasoning, tool_calls=[{"name": "run_python", "args": {"code": code}, "id": f"c{n}"}])
                for n, (reasoning, code) in enumerate(SCRIPT[:-1])] + [AIMessage(content=SCRIPT[-1][0])]
    requests: list[dict[str, Any]] = []
    base = langchain_peer._fake_model_class()

    class Recording(base):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            system = sum(len(m.content) for m in messages if isinstance(m, SystemMessage))
            other = sum(len(m.content if isinstance(m.content, str) else json.dumps(m.content))
                        + sum(len(c["name"]) + len(json.dumps(c["args"])) for c in getattr(m, "tool_calls", None) or [])
                        for m in messages if not isinstance(m, SystemMessage))
            text = "\n".join(str(m.content) for m in messages)
            calls = [json.dumps(c["args"]) for m in messages for c in getattr(m, "tool_calls", None) or []]
            requests.append({"chars": system + self.tool_schema_chars + other, "fixed": system + self.tool_schema_chars,
                             "text": "\n".join([text, *calls, self.tool_schema_text])})
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    model = Recording(messages=iter(messages), calls=[])
    agent = create_deep_agent(model=model, tools=[run_python], system_prompt="You are a data analysis agent.")
    agent.invoke({"messages": [{"role": "user", "content": TASK}]}, config={"recursion_limit": 100})
    return requests


def _roles() -> dict[str, int]:
    """The first request of a sub-agent and of the reviewer, in real kernels."""
    from deepagent_magics import DeepAgent
    from deepagent_magics.interpreters.pool import KernelPool
    from deepagent_magics.testing import ScriptedLM

    lm = ScriptedLM(scripts={"": ROLES_SCRIPT, "cultivar 1": [("Done.", "SUBMIT(result={'lowest': 'alcohol'})")],
                             "Review a draft": [("Done.", "SUBMIT(status='pass', issues=[], suggestions=[])")]})
    pool = KernelPool(size=1)
    try:
        with tempfile.TemporaryDirectory() as workspace:
            run = DeepAgent(lm=lm, workspace=workspace, pool=pool).run("Summarise wine with a sub-agent", frames())
    finally:
        pool.stop()
    assert run.status == "finished", run.error

    def first(fragment: str) -> int:
        request = next(r for r in lm.requests if fragment in r["user"].split("[[ ## repl_history")[0])
        return len(request["system"]) + len(request["user"])

    return {"sub-agent": first("cultivar 1 from the other two"), "reviewer": first("Review a draft")}


def _session() -> list[dict[str, str]]:
    from .real_session import requests

    return requests()


# ------------------------------------------------------------------ measuring
def _measure(system: str, user: str) -> dict[str, Any]:
    """A request's size and its fixed text (`fixed_chars`)."""
    return {"chars": len(system) + len(user), "fixed": fixed_chars(system, user), "system": len(system),
            "fixed_with_types": fixed_chars(system, user, packaged_types=True), "text": system + user}


def fixed_chars(system: str, user: str, *, packaged_types: bool = False) -> int:
    """The system message, and what `FIXED` finds in the user message (and `PACKAGED_TYPES`, if asked); an
    ``llm_query`` (no system message) is the agent's own text: none of it is fixed."""
    if not system:
        return 0
    patterns = FIXED + (PACKAGED_TYPES if packaged_types else [])
    return len(system) + sum(len(match.group(0)) for pattern in patterns for match in pattern.finditer(user))


def tokenizer() -> Any:
    """tiktoken's o200k_base (GPT-4o's), else None. LiteLLM, which DSPy brings, ships tiktoken's files and
    points tiktoken at them when this module of its is imported: no download."""
    try:
        import deepagent_magics  # noqa: F401 - first: LiteLLM then reads its bundled price list, no fetch
        import litellm.litellm_core_utils.default_encoding  # noqa: F401 - sets TIKTOKEN_CACHE_DIR
        import tiktoken

        return tiktoken.get_encoding("o200k_base")
    except Exception:  # noqa: BLE001 - not installed, or no network for its files: tokens are not counted
        return None


def _tokens(counter: Any, text: str) -> str:
    return f"{len(counter.encode(text)):,}" if counter is not None else "n/a"
