"""The quality page's tables, made from a benchmark's result file, never typed by hand.

    python -m deepagent_magics.tuning.quality_tables bench-results/sklearn-all.json
    python -m deepagent_magics.tuning.quality_tables bench-results/sklearn-all.done.jsonl   # a run stopped early
    python -m deepagent_magics.tuning.quality_tables dev/sklearn-all.json held-out/sklearn-all.json  # runs side by side

prints, as Markdown: per system, accuracy over all tasks and over each half (a suite whose tasks
carry a ``half``: the sklearn suite's development and held-out halves), steps, prompt and
completion tokens per task and per solved task, time and failures; accuracy per kind of task;
how each answer ended (its ``SUBMIT``, a stall, an extraction once the steps ran out, a failure);
the issue's goal for the deep agent, checked; and the machine the run shared (wall and CPU time,
load average). docs/quality.md's measured tables are its output, pasted with the command that made the
result file.

Several result files (the halves run at once, one process each) make one set of tables. Systems are
compared on the same questions: a question not every system answered (a run stopped part way through
it) is left out of every table, and the tables say how many rows that left out.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..core.loop.ending import ENDINGS
from .bench_report import BenchReport
from .systems import DEEP_AGENT

TOKENS_GOAL = 0.8  # the deep agent's tokens per solved task, at most this share of the best baseline's


def quality_markdown(report: BenchReport) -> str:
    report, left_out = comparable(report)
    halves = _values(report, "half")
    parts = [_left_out(left_out), _main_table(report, halves), _kind_table(report), _endings_table(report),
             _goal(report, halves), _machine(report)]
    return "\n".join(part for part in parts if part)


def comparable(report: BenchReport) -> tuple[BenchReport, int]:
    """``report`` with only the questions every system answered, and how many rows that left out."""
    answered: dict[str, set[str]] = {}
    for row in report.rows:
        answered.setdefault(row["task_id"], set()).add(row["system"])
    rows = [row for row in report.rows if answered[row["task_id"]] >= set(report.systems)]
    if len(rows) == len(report.rows):
        return report, 0
    kept = BenchReport(report.suite, report.title, report.split, report.lm, report.metric, report.systems, rows,
                       started=report.started, machine=report.machine)
    return kept, len(report.rows) - len(rows)


def merged(reports: list[BenchReport]) -> BenchReport:
    """One report of runs made side by side (each its own questions): their rows, their systems in order; the
    machine figures stay each run's own (`_machine` of each)."""
    first = reports[0]
    systems = list(dict.fromkeys(system for each in reports for system in each.systems))
    return BenchReport(first.suite, first.title, first.split, first.lm, first.metric, systems,
                       [row for each in reports for row in each.rows], started=first.started)


def _left_out(count: int) -> str:
    rows = "1 row of a question" if count == 1 else f"{count} rows of questions"
    return f"({rows} not every system answered left out: the systems are compared on the same questions.)\n" if count else ""


def _values(report: BenchReport, key: str) -> list[str]:
    return list(dict.fromkeys(str(row[key]) for row in report.rows if row.get(key) is not None))


def _main_table(report: BenchReport, halves: list[str]) -> str:
    tasks = len({row["task_id"] for row in report.rows})
    head = ["system", f"accuracy ({tasks})"] + [f"{half} ({_count(report, 'half', half)})" for half in halves]
    head += ["steps / task", "prompt tok / task", "completion tok / task", "prompt tok / solved",
             "completion tok / solved", "s / task", "failures"]
    lines = _header(head)
    overall = report.summary()
    by_half = {half: report.summary({"half": half}) for half in halves}
    for system, each in overall.items():
        cells = [system, _percent(each["accuracy"])] + [_percent(by_half[half][system]["accuracy"]) for half in halves]
        cells += [f"{each['steps_per_task']:.1f}", _number(each["prompt_tokens_per_task"]),
                  _number(each["completion_tokens_per_task"]), _number(each["prompt_tokens_per_solved"]),
                  _number(each["completion_tokens_per_solved"]), f"{each['seconds_per_task']:.0f}",
                  f"{each['failures']}/{each['tasks']}"]
        lines.append(_row(cells))
    return "\n".join(lines) + "\n"


def _kind_table(report: BenchReport) -> str:
    kinds = _values(report, "kind")
    if not kinds:
        return ""
    lines = _header(["kind", "tasks", *report.systems])
    for kind in kinds:
        each = report.summary({"kind": kind})
        lines.append(_row([kind, str(_count(report, "kind", kind))] +
                          [_right(each[system]) for system in report.systems]))
    return "Right answers per kind of task:\n\n" + "\n".join(lines) + "\n"


def _endings_table(report: BenchReport) -> str:
    summary = report.summary()
    endings = [name for name in ENDINGS if any(name in each["endings"] for each in summary.values())]
    if not endings:
        return ""
    lines = _header(["system", *endings, "right answers by SUBMIT"])
    for system, each in summary.items():
        if not each["endings"]:
            continue
        right = each["right_endings"]
        lines.append(_row([system] + [str(each["endings"].get(name, 0)) for name in endings] +
                          [f"{right.get('SUBMIT', 0)} of {sum(right.values())}"]))
    return ("How each answer ended (ReAct's `finish` counts as its `SUBMIT`; CoT answers in one call):\n\n"
            + "\n".join(lines) + "\n")


def _goal(report: BenchReport, halves: list[str]) -> str:
    if DEEP_AGENT not in report.systems or len(report.systems) < 2:
        return ""
    lines = ["The goal (the deep agent's accuracy at least the best baseline's, at no more than "
             f"{TOKENS_GOAL}× its tokens per solved task, most of its right answers by `SUBMIT`):", ""]
    for label, where in [("all", None)] + [(half, {"half": half}) for half in halves]:
        lines.append(f"- {label}: " + "; ".join(_goal_parts(report.summary(where))))
    return "\n".join(lines) + "\n"


def _goal_parts(summary: dict[str, dict[str, Any]]) -> list[str]:
    agent = summary[DEEP_AGENT]
    baselines = {name: each for name, each in summary.items() if name != DEEP_AGENT and each["accuracy"] is not None}
    if not baselines or agent["accuracy"] is None:
        return ["n/a (no scored task here)"]
    best = max(baselines, key=lambda name: (baselines[name]["accuracy"], -(baselines[name]["tokens_per_solved"] or 1e18)))
    theirs, ours = baselines[best], agent
    parts = [f"accuracy {_percent(ours['accuracy'])} against {best}'s {_percent(theirs['accuracy'])} "
             f"({_met((ours['accuracy'] or 0) >= (theirs['accuracy'] or 0))})"]
    if ours["tokens_per_solved"] is None or theirs["tokens_per_solved"] is None:
        parts.append("tokens per solved task: n/a (nothing solved)")
    else:
        share = ours["tokens_per_solved"] / theirs["tokens_per_solved"]
        parts.append(f"tokens per solved task {share:.2f}× {best}'s ({_met(share <= TOKENS_GOAL)})")
    right = ours["right_endings"]
    parts.append(f"{right.get('SUBMIT', 0)} of {sum(right.values())} right answers by `SUBMIT` "
                 f"({_met(right.get('SUBMIT', 0) * 2 > sum(right.values()))})")
    return parts


def _machine(report: BenchReport) -> str:
    machine = report.machine
    if not machine:
        return ""
    load = ("" if machine.get("load_mean") is None else
            f"; load average {machine['load_mean']:.1f} on {machine.get('cpus')} cores "
            f"({machine['load_min']:.1f}–{machine['load_max']:.1f})")
    return (f"The run: {report.started}, {report.lm}, {machine['wall_seconds'] / 60:.0f} minutes, "
            f"{machine['cpu_seconds'] / 60:.0f} CPU minutes in its process{load}.\n")


def _count(report: BenchReport, key: str, value: str) -> int:
    return len({row["task_id"] for row in report.rows if str(row.get(key)) == value})


def _right(each: dict[str, Any]) -> str:
    return f"{each['solved']:g}/{each['scored']}"


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _met(ok: bool) -> str:
    return "met" if ok else "not met"


def _header(cells: list[str]) -> list[str]:
    return [_row(cells), "|" + "|".join(["---"] + ["---:"] * (len(cells) - 1)) + "|"]


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or not all(Path(each).is_file() for each in args):
        print("usage: python -m deepagent_magics.tuning.quality_tables RESULTS.json (or a stopped run's "
              "RESULTS.done.jsonl; several: runs made side by side)", file=sys.stderr)
        return 2
    reports = [(BenchReport.read_done if each.endswith(".done.jsonl") else BenchReport.read)(each) for each in args]
    if len({each.suite for each in reports}) > 1:
        print(f"quality_tables: the files are of different suites: {', '.join(each.suite for each in reports)}",
              file=sys.stderr)
        return 2
    if len(reports) == 1:
        print(quality_markdown(reports[0]), end="")
        return 0
    print(quality_markdown(merged(reports)), end="")
    for each in reports:
        print(_machine(each), end="")
    return 0


if __name__ == "__main__":  # pragma: no cover - the module's command line
    sys.exit(main())
