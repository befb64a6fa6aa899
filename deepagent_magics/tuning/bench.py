"""The quality benchmark: the deep agent beside DSPy baselines on a public suite, with its own scoring.

    report = run_suite("dabench", lm="openai/gpt-4o-mini", limit=20, baselines=["cot", "react"], out="bench-results")
    report.summary()["deep agent"]["accuracy"]

Each task runs in a fresh namespace and a temporary workspace holding the task's files; the
deep agent also starts with the variables a user would have made from them (`suites`). The
systems are the evaluation's own (`systems`), run by `evaluate`; the table is a `BenchReport`.

Its front doors are cli/bench.py (`deepagent bench`) and magics/bench.py (`%deepagent_bench`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import dspy

from ..core.model.lm import lm_label, resolve_lm
from ..errors import DeepAgentSignal
from .bench_arguments import BenchError, check_arguments, parse_where
from .bench_report import BenchReport
from .bench_resume import earlier_answers, start_again
from .evaluate import evaluate
from .examples import Metric
from .choices import BENCH_BASELINES, DEEPAGENTS
from .machine_load import MachineLoad
from .langchain_baseline import BaselineUnavailable, DeepAgentsSystem, chat_model_for
from .suites import SuiteUnavailable, Task, UnknownSuite
from .systems import DEEP_AGENT, systems_for

if TYPE_CHECKING:
    from ..core.loop.agent import DeepAgent


def examples_for(tasks: list[Task]) -> list[dspy.Example]:
    return [dspy.Example(task=task.prompt, prepare=task.prepare, inline=task.inline, bench_task=task).with_inputs("task")
            for task in tasks]


class BenchStopped(DeepAgentSignal, KeyboardInterrupt):
    """The benchmark was interrupted (^C, a kernel interrupt): ``report`` holds the answers done so far, written
    to ``out`` as a whole run's are, with the machine figures up to the stop."""

    def __init__(self, report: BenchReport):
        super().__init__(f"the benchmark was stopped {report.stopped}")
        self.report = report


def run_suite(suite: str, lm: Any = None, *, limit: int | None = None, baselines: Iterable[str] = (),
              threads: int = 4, out: str | Path | None = None, cache_dir: str | Path | None = None,
              split: str | None = None, agent: "DeepAgent | None" = None, progress: Any = None,
              langchain_model: Any = None, where: dict[str, str] | None = None, resume: bool = False) -> BenchReport:
    """Run ``suite`` (dabstep, dabench, oolong, sklearn) with the deep agent and ``baselines``; the table, written to ``out``.

    ``langchain_model``: the chat model of the ``deepagents`` baseline (default: ``lm``'s id through LangChain).
    ``where``: only the tasks whose details match, e.g. ``{"level": "hard"}`` or ``{"dataset": "trec_coarse"}``.
    ``resume``: take the answers an earlier run kept in ``out`` and run only the questions it had not finished
    (`bench_resume`). Interrupted, it raises `BenchStopped` (a ``KeyboardInterrupt``) carrying the report of what
    was done.
    """
    found, names = check_arguments(suite, limit, baselines, threads)
    if resume and out is None:
        raise BenchError("--resume takes the answers kept in --out: name the folder")
    tasks = found.load(cache_dir, split, limit, where)
    if agent is None:
        from ..core.loop.agent import DeepAgent

        agent = DeepAgent(lm=lm, max_depth=0)  # no sub-agent kernels unless the caller's agent has them
    model = resolve_lm(lm if lm is not None else agent.lm)
    if agent.lm is None:
        agent.lm = model
    metric = Metric(lambda example, pred: found.score_prediction(example.bench_task, pred), found.name)
    systems = systems_for(agent, [name for name in names if name != DEEPAGENTS], lm=model)
    if DEEPAGENTS in names:
        try:
            systems[DEEPAGENTS] = DeepAgentsSystem(langchain_model or chat_model_for(lm if lm is not None else model))
        except BaselineUnavailable as exc:
            raise BenchError(str(exc)) from None
        systems = {name: systems[name] for name in [*names, DEEP_AGENT]}  # baselines as named, then the agent
    report = BenchReport(found.name, found.title, split or found.default_split, lm_label(model), found.metric,
                         list(systems), [])
    done = report.done_file(out) if out is not None else None
    earlier = earlier_answers(done, [task.id for task in tasks], systems, report.lm) if resume else []
    if resume:
        taken = {row["task_id"] for row in earlier}
        report.resumed = f"{len(taken)} of {len(tasks)} tasks from the earlier run in {out}"
        tasks = [task for task in tasks if task.id not in taken]

    finished: list[dict[str, Any]] = []

    def keep(row: dict[str, Any]) -> None:  # each row as it is done: a long run that stops keeps what it has
        finished.append(row)
        if done is not None:
            with open(done, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({**bench_row(row, tasks), "lm": report.lm,
                                         "steps_taken": row.get("trajectory") or []}, default=str) + "\n")

    if done is not None:  # a new run starts it empty; a resumed one with the answers it took
        done.parent.mkdir(parents=True, exist_ok=True)
        if resume:
            start_again(done, earlier)
        else:
            done.write_text("", encoding="utf-8")
    try:
        with MachineLoad() as load:
            table = evaluate(systems, examples_for(tasks), metric, threads, progress, on_row=keep)
    except KeyboardInterrupt:
        order = {name: place for place, name in enumerate(systems)}  # the table's order: system, then task
        rows = sorted(finished, key=lambda row: (order[row["system"]], row["example"]))
        answers = len(earlier) + len(systems) * len(tasks)
        report.stopped = f"after {len(earlier) + len(rows)} of {answers} answers"
        _fill(report, earlier, rows, tasks, load.summary(), out)
        raise BenchStopped(report) from None
    _fill(report, earlier, table.rows, tasks, load.summary(), out)
    return report


def _fill(report: BenchReport, earlier: list[dict[str, Any]], rows: list[dict[str, Any]], tasks: list[Task],
          machine: dict[str, Any], out: str | Path | None) -> None:
    """``report`` given the answers taken from an earlier run, the evaluation's ``rows`` (with their steps) and
    the machine figures, written to ``out``."""
    taken = [{key: value for key, value in row.items() if key not in ("steps_taken", "lm")} for row in earlier]
    order = {name: place for place, name in enumerate(report.systems)}
    report.rows = sorted(taken, key=lambda row: order[row["system"]]) + [bench_row(row, tasks) for row in rows]
    report.steps = {(row["system"], row["task_id"]): row.get("steps_taken") or [] for row in earlier}
    report.steps.update({(row["system"], tasks[row["example"]].id): row.get("trajectory") or [] for row in rows})
    report.machine = machine
    if out is not None:
        report.write(out)


def bench_row(row: dict[str, Any], tasks: list[Task]) -> dict[str, Any]:
    """An evaluation's row as the report keeps it: the task's id and details instead of its index."""
    task = tasks[row["example"]]
    return {"system": row["system"], "task_id": task.id, "score": row["score"], "scored": task.gold is not None,
            "answer": row["result"], "tokens": row["tokens"], "prompt_tokens": row.get("prompt_tokens", 0),
            "completion_tokens": row.get("completion_tokens", 0), "ending": row.get("ending"),
            "cost": row.get("cost"), "seconds": row.get("seconds", 0.0), "steps": row["steps"], "error": row["error"],
            **{key: value for key, value in task.meta.items() if key not in ("concepts", "writes")}}


__all__ = ["BENCH_BASELINES", "DEEP_AGENT", "BenchError", "BenchReport", "BenchStopped", "SuiteUnavailable",
           "UnknownSuite", "check_arguments", "parse_where", "run_suite"]
