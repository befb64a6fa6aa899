"""The second real session, replayed: every request the agent sends, with what a capable model answered.

The cells of the recorded session (`/work/shared/real-model-runs/session2`, 26 requests) run again, in order,
in an IPython shell of this process: a logistic regression on ``breast_cancer`` (T1), 120 generated support
tickets classified with ``llm_query`` (T2), a custom ``statistician`` sub-agent type (a real kernel) with a
workspace skill and a ``review`` (T3), a checkpoint, a kernel restart (the shell's namespace, runs and threads
emptied), ``%deepagent_resume`` and a ``--continue`` turn (T4), then ``deepagent run`` twice on ``linnerud``
(T5, through the command line's own ``main``). The model is the recording (``data/real_session.json``,
`make_real_session.py`): each agent gets its own replies in order, told apart by the start of its task, and
each ``llm_query`` its recorded answer.

`requests()` returns what every request said, as the model read it: ``system``, ``user`` (an ``llm_query``'s
prompt is its ``user``, with no system message: the scripted model keeps both kinds, in order).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).parent / "data" / "real_session.json"

SKILL = '''---
name: compare-two-groups
description: Procedure for testing whether a numeric variable differs between two groups (assumption checks, Welch t-test or Mann-Whitney U, effect size, reporting). Use when asked to compare two groups or samples.
---
# Compare two groups

1. Get each group's values as a 1-D numpy array; report n, mean, sd and median per group.
2. Check normality in each group with `scipy.stats.shapiro` and equal variances with `scipy.stats.levene`.
3. If both groups look normal (Shapiro p >= 0.05), use Welch's t-test (`scipy.stats.ttest_ind(a, b, equal_var=False)`);
   otherwise use the Mann-Whitney U test (`scipy.stats.mannwhitneyu(a, b, alternative="two-sided")`).
   Report the other test too, as a robustness check.
4. Effect size: Cohen's d (pooled sd) for the t-test, rank-biserial correlation for Mann-Whitney.
5. Report: test used and why, statistic, p-value (scientific notation when below 0.001), effect size,
   and a one-sentence conclusion at alpha = 0.05.
'''

TICKETS = '''import random
_rng = random.Random(20261127)
_products = ["AeroBlend", "LumaLamp", "PulseWatch", "NovaRouter"]
_templates = {
    "delivery": ["My {p} still hasn't arrived two weeks after the estimated delivery date.",
                 "The courier left my {p} at the wrong address and nobody will help me get it back.",
                 "Tracking for my {p} order has said 'in transit' for ten days now.",
                 "The {p} was shipped to my old address even though I updated it before ordering.",
                 "The parcel with my {p} was marked as received but it never reached my door."],
    "defect": ["The {p} stopped working after three days of normal use.",
               "My {p} makes a loud rattling noise whenever I switch it on.",
               "The power button on my {p} is stuck.",
               "My {p} overheats and shuts itself off within minutes."],
    "billing": ["I was charged twice for my {p} order.",
                "The price I paid for the {p} is higher than the one shown at checkout.",
                "My invoice for the {p} lists the wrong VAT number."],
    "support": ["Support closed my ticket about the {p} without answering my question.",
                "I have been waiting a week for anyone to reply about my {p} setup problem.",
                "The {p} manual doesn't explain how to reset it to factory settings."],
}
_topic_w = {"AeroBlend": [2, 4, 2, 2], "LumaLamp": [2, 3, 3, 2], "PulseWatch": [5, 2, 2, 1], "NovaRouter": [1, 3, 2, 4]}
_refund = [", and I want a refund.", "; I'd like a full refund.", ", so please refund my order.", " - I'm requesting a Refund."]
_rows = []
for _i in range(120):
    _p = _rng.choice(_products)
    _topic = _rng.choices(list(_templates), weights=_topic_w[_p])[0]
    _text = _rng.choice(_templates[_topic]).format(p=_p)
    _wants = _rng.random() < 0.3
    if _wants:
        _text = _text[:-1] + _rng.choice(_refund)
    _rows.append((f"TCK-{1000 + _i * 7 % 997}", _p, _topic, _wants, _text))
tickets = "\\n".join(f"{t} | {p} | {x}" for t, p, _, _, x in _rows)
print(len(tickets), "chars,", len(_rows), "tickets")'''

SETUP = ('%load_ext deepagent_magics\nimport dspy\nimport pandas as pd\nfrom sklearn.datasets import load_breast_cancer\n'
         'bc = load_breast_cancer(as_frame=True).frame\nfrontier = _replay_lm\nprint(bc.shape)')
SESSION_1 = [
    SETUP,
    "%deepagent_config --lm frontier --timeout 300 --max-iters 15 --subagent-timeout 3600",
    "%%deepagent --out t1\nFit a logistic regression that predicts `target` from the other columns with a stratified "
    "75/25 split (random_state=0) and standardised features; keep the fitted pipeline in a variable, report test "
    "accuracy and ROC AUC, and the five features with the largest absolute coefficients.",
    "_r = _deepagent_run\nprint(_r.status, len(_r.steps), _r.usage)",
    "%deepagent_checkpoint t1",
    TICKETS,
    "%%deepagent --out t2\nHow many tickets per product mention a refund, and which product's complaints are most "
    "about delivery? Put the counts in a DataFrame.",
    "print(type(t2).__name__, _deepagent_run.status, len(_deepagent_run.steps))",
    "import os\nfrom sklearn.datasets import load_iris\n_iris_b = load_iris(as_frame=True)\niris = _iris_b.frame.copy()\n"
    "iris[\"species\"] = iris[\"target\"].map(dict(enumerate(_iris_b.target_names)))\n"
    "os.makedirs(\"skills/compare-two-groups\", exist_ok=True)\n"
    "with open(\"skills/compare-two-groups/SKILL.md\", \"w\") as f:\n    f.write(_skill)\n"
    "print(iris.shape, iris[\"species\"].value_counts().to_dict())",
    "%%deepagent_agent statistician --description \"runs statistical tests with scipy/numpy on workspace data and "
    "reports test statistics, p-values and effect sizes\"\nYou are a careful statistician. Load the data from the "
    "workspace files named in your task, check the assumptions of the test you choose, run it with scipy.stats (numpy "
    "for summaries), and SUBMIT a short report: the groups and their sizes, descriptive statistics, the test used and "
    "why, the statistic, the p-value (scientific notation if tiny), an effect size, and a one-sentence conclusion at "
    "alpha = 0.05. If a skill matches the task, follow it.",
    "%%deepagent --out t3\nUsing `iris`, have a statistician sub-agent test whether petal length differs between "
    "versicolor and virginica (write iris.csv to the workspace for it first), and have the result reviewed.",
]
SESSION_2 = [  # after the kernel restart
    SETUP.replace("print(bc.shape)",
                  "%deepagent_config --lm frontier --timeout 300 --max-iters 15 --subagent-timeout 3600"),
    "%deepagent_resume t1",
    "print(type(bc_logreg_pipeline).__name__, X_test.shape, round(bc_test_roc_auc, 4))",
    "%%deepagent --continue\nPlot the ROC curve of that model to roc.png and add the AUC to the title.",
]
COMMAND_LINE = [  # deepagent run, from the shell, in another folder
    "Which exercise (Chins, Situps or Jumps) is most strongly correlated with Waist in linnerud, and what is the "
    "Pearson correlation?",
    "How many rows does linnerud have?",
]


class Replay:
    """The recording as one scripted model: each agent its replies in order, each ``llm_query`` its answer."""

    def __init__(self) -> None:
        from deepagent_magics.testing import ScriptedLM

        recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
        self.agents: dict[str, list[dict[str, Any]]] = {}
        for entry in recorded:
            if entry["agent"] != "llm_query":
                self.agents.setdefault(_squash(entry["task"]), []).append(entry)
        self.answers = {entry["prompt"]: entry["reply"] for entry in recorded if entry["agent"] == "llm_query"}
        self._lock = threading.Lock()
        self.lm = ScriptedLM(self._step, replies=self._answer, model="replay/frontier")

    def _step(self, request: Any) -> dict[str, str]:
        task = _squash(request.task)
        keys = [key for key in self.agents if task.startswith(key)]
        with self._lock:
            queue = self.agents[max(keys, key=len)] if keys else []
            if not queue:
                return {"reasoning": "No recorded reply.", "code": "SUBMIT(result='(no recorded reply)')"}
            reply = queue.pop(0)
        return {"reasoning": reply["reasoning"], "code": reply["code"]}

    def _answer(self, prompt: str) -> str:
        return next((answer for question, answer in self.answers.items() if question[:200] in prompt),
                    "(no recorded answer)")

    def left(self) -> list[str]:
        return [entry["id"] for queue in self.agents.values() for entry in queue]


def requests() -> list[dict[str, str]]:
    """Every request of the replayed session, in the order sent: {"system", "user"}."""
    from IPython.core.interactiveshell import InteractiveShell

    from deepagent_magics.core.run import conversations
    from deepagent_magics.cli import commands, main

    replay = Replay()
    previous = InteractiveShell._instance  # a test's shell: set aside, so the replay reads a shell of its own
    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance()
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()):
        notebook, command_line = Path(folder) / "analysis", Path(folder) / "cli_data"
        notebook.mkdir()
        command_line.mkdir()
        os.chdir(notebook)
        try:
            shell.user_ns.update(_replay_lm=replay.lm, _skill=SKILL)
            for cell in SESSION_1:
                shell.run_cell(cell, store_history=True)
            magics = shell.magics_manager.registry["DeepAgentMagics"]
            magics.runs, magics.__dict__["resumed"] = [], None  # the kernel restarts: its runs, threads, names go
            conversations._threads.clear()
            conversations._thread_of_run.clear()
            shell.reset(new_session=True)
            shell.user_ns["_replay_lm"] = replay.lm
            for cell in SESSION_2:
                shell.run_cell(cell, store_history=True)
            from sklearn.datasets import load_linnerud

            frame = load_linnerud(as_frame=True)
            frame.data.join(frame.target).to_csv(command_line / "linnerud.csv", index=False)
            os.chdir(command_line)
            original = commands.model_maker
            commands.model_maker = lambda spec, *args, **kwargs: (lambda: replay.lm) if spec else None
            try:
                for task in COMMAND_LINE:
                    main(["run", task, "--lm", "replay", "--load", "linnerud=linnerud.csv", "--max-iters", "20",
                          "--quiet"])
            finally:
                commands.model_maker = original
        finally:
            os.chdir(here)
            shell.run_line_magic("unload_ext", "deepagent_magics")
            InteractiveShell.clear_instance()
            for kind in (type(previous)._walk_mro() if previous is not None else ()):
                kind._instance = previous  # as traitlets' own instance() sets it
    assert not replay.left(), f"replies no agent asked for: {replay.left()}"
    return [{"system": request["system"], "user": request["user"]} for request in replay.lm.requests]


def _squash(text: str) -> str:
    return " ".join(str(text).split())
