"""Measure the deep agent on examples from the notebook, beside simple baselines.

An example is a dict or a ``dspy.Example`` with a ``task`` (and optionally a
``context``); its other fields are what the metric compares against. A metric
is ``metric(example, pred)`` (or ``(example, pred, trace)``) returning a number, a
bool, or ``dspy.Prediction(score=..., feedback=...)``; ``pred.result`` is the
system's answer. Each system answers every example, several at a time; every
deep-agent run gets a fresh namespace and its own temporary workspace. A metric
that raises scores that example zero and the error is kept on its row.

    table = evaluate(systems_for(agent, ["cot", "react"]), devset, metric, threads=4)
    table.means()["deep agent"]["score"]
"""

from __future__ import annotations

import contextvars
import inspect
import math
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable

import dspy
from dspy.utils.usage_tracker import track_usage

from .run import Run
from .session import Session, activate, deactivate
from .workspace import Workspace

if TYPE_CHECKING:
    from .agent import DeepAgent

INPUTS = ("task", "context")
BASELINES = ("cot", "react")
DEEP_AGENT = "deep agent"
OPTIMIZED = "deep agent (optimized)"


class ExamplesError(ValueError):
    """Examples of the wrong shape; the message says what to fix."""


# ---------------------------------------------------------------------------- examples
def as_examples(items: Any, name: str = "examples") -> list[dspy.Example]:
    """``items`` as ``dspy.Example``s whose inputs are ``task`` (and ``context`` when present)."""
    if isinstance(items, (str, bytes, dict)) or not isinstance(items, Iterable):
        raise ExamplesError(f"{name} must be a list of examples (dicts or dspy.Example with a 'task'), "
                            f"not {type(items).__name__}")
    examples = []
    for index, item in enumerate(items):
        if isinstance(item, dspy.Example):
            fields = dict(item.items(include_dspy=False))
        elif isinstance(item, dict):
            fields = dict(item)
        else:
            raise ExamplesError(f"{name}[{index}] is a {type(item).__name__}; each example must be a dict "
                                "or dspy.Example with a 'task'")
        if not isinstance(fields.get("task"), str) or not fields["task"].strip():
            raise ExamplesError(f"{name}[{index}] has no 'task' text; each example needs a 'task' "
                                "(what the agent is asked) and the fields your metric expects")
        examples.append(dspy.Example(**fields).with_inputs(*[key for key in INPUTS if key in fields]))
    if not examples:
        raise ExamplesError(f"{name} is empty: give it at least one example")
    return examples


# ---------------------------------------------------------------------------- metric
@dataclass
class Score:
    score: float
    feedback: str | None = None
    error: str | None = None  # the metric raised: the score is zero


class Metric:
    """A user's metric, callable the ways evaluation and each DSPy optimiser call it."""

    def __init__(self, fn: Callable[..., Any], name: str = "metric"):
        if not callable(fn):
            raise TypeError(f"{name} must be a function metric(example, pred) -> score, not {type(fn).__name__}")
        self.fn = fn
        self.name = name
        self.errors: list[str] = []
        self._arity = _positional_arity(fn)

    def score(self, example: dspy.Example, pred: Any, trace: Any = None,
              pred_name: str | None = None, pred_trace: Any = None) -> Score:
        args = (example, pred, trace, pred_name, pred_trace)[: self._arity]
        try:
            value = self.fn(*args)
        except Exception as exc:
            message = f"{self.name} raised {type(exc).__name__}: {exc}"
            self.errors.append(message)
            return Score(0.0, feedback=message, error=message)
        feedback = None
        if isinstance(value, dspy.Prediction) or isinstance(value, dict):
            feedback = value.get("feedback")
            value = value.get("score")
        try:
            number = float(value)
        except (TypeError, ValueError):
            message = f"{self.name} returned {value!r}; return a number, a bool or dspy.Prediction(score=..., feedback=...)"
            self.errors.append(message)
            return Score(0.0, feedback=message, error=message)
        if math.isnan(number):
            number = 0.0
        return Score(number, feedback=feedback)

    def for_bootstrap(self, example: dspy.Example, pred: Any, trace: Any = None) -> float:
        return self.score(example, pred, trace).score

    def for_gepa(self, gold: dspy.Example, pred: Any, trace: Any = None,
                 pred_name: str | None = None, pred_trace: Any = None) -> dspy.Prediction:
        result = self.score(gold, pred, trace, pred_name, pred_trace)
        feedback = result.feedback or f"The answer scored {result.score:g}."
        return dspy.Prediction(score=result.score, feedback=feedback)


def _positional_arity(fn: Callable[..., Any]) -> int:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return 5
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return max(2, min(5, len(positional)))


# ---------------------------------------------------------------------------- systems
@dataclass
class Outcome:
    pred: dspy.Prediction | None
    steps: int
    tokens: int
    error: str | None = None


def _task_text(example: dspy.Example) -> str:
    context = example.get("context")
    return f"{example.task}\n\nContext:\n{context}" if context else example.task


def _tokens(pred: Any) -> int:
    usage = pred.get_lm_usage() if isinstance(pred, dspy.Prediction) else None
    return sum(int(entry.get("total_tokens") or 0) for entry in (usage or {}).values())


class IsolatedAgent(dspy.Module):
    """The deep agent as evaluation and optimisers call it: each call in a fresh namespace and its own
    temporary workspace, so examples running at once cannot see each other's variables or files."""

    def __init__(self, agent: "DeepAgent"):
        super().__init__()
        self.agent = agent

    def run(self, task: str, context: str = "") -> Run:
        with tempfile.TemporaryDirectory(prefix="deepagent-eval-") as workspace:
            return self.agent.run(task, namespace={}, context=context or "", workspace=workspace)

    def forward(self, task: str, context: str = "") -> dspy.Prediction:
        run = self.run(task, context)
        if run.status == "failed":
            raise run.exception  # type: ignore[misc]
        return dspy.Prediction(result=run.result, run=run)


class DeepAgentSystem:
    def __init__(self, agent: "DeepAgent"):
        self.program = IsolatedAgent(agent)

    def __call__(self, example: dspy.Example) -> Outcome:
        # Tokens from DSPy's usage tracker, which is per thread: runs going on at once share the LM.
        with track_usage() as usage:
            run = self.program.run(example.task, example.get("context") or "")
        tokens = sum(int(entry.get("total_tokens") or 0) for entry in usage.get_total_tokens().values())
        pred = dspy.Prediction(result=run.result, run=run)
        return Outcome(pred, len(run.steps), tokens or run.usage.tokens, run.error if run.status == "failed" else None)


class CoTSystem:
    """``dspy.ChainOfThought("task -> result")`` on the agent's LM: one call, no tools."""

    def __init__(self, lm: Any):
        self.lm = lm
        self.module = dspy.ChainOfThought("task -> result")

    def __call__(self, example: dspy.Example) -> Outcome:
        with dspy.context(lm=self.lm, track_usage=True):
            pred = self.module(task=_task_text(example))
        return Outcome(pred, 1, _tokens(pred))


class ReActSystem:
    """``dspy.ReAct`` with the agent's tools; each call gets a run and a temporary workspace for them."""

    def __init__(self, agent: "DeepAgent", lm: Any):
        self.lm = lm
        self.agent = agent
        self.module = dspy.ReAct("task -> result", tools=agent.builtin_tools() + agent.extra_tools,
                                 max_iters=agent.max_iters)

    def __call__(self, example: dspy.Example) -> Outcome:
        run = Run(example.task, profile="react")
        with tempfile.TemporaryDirectory(prefix="deepagent-react-") as workspace:
            token = activate(Session(run, Workspace(workspace), agent=self.agent))
            try:
                with dspy.context(lm=self.lm, track_usage=True):
                    pred = self.module(task=_task_text(example))
            finally:
                deactivate(token)
        steps = sum(key.startswith("tool_name_") for key in (pred.get("trajectory") or {}))
        return Outcome(pred, steps, _tokens(pred))


def systems_for(agent: "DeepAgent", baselines: Iterable[str] = (), optimized: "DeepAgent | None" = None,
                lm: Any = None) -> dict[str, Callable[[dspy.Example], Outcome]]:
    """The deep agent, the optimised one when given, and the named baselines, all on the same LM."""
    from .lm import resolve_lm

    lm = lm or resolve_lm(agent.lm)
    systems: dict[str, Callable[[dspy.Example], Outcome]] = {}
    for name in baselines:
        if name not in BASELINES:
            raise ValueError(f"unknown baseline {name!r}; choose from: {', '.join(BASELINES)}")
        systems[name] = CoTSystem(lm) if name == "cot" else ReActSystem(agent, lm)
    systems[DEEP_AGENT] = DeepAgentSystem(agent)
    if optimized is not None:
        systems[OPTIMIZED] = DeepAgentSystem(optimized)
    return systems


# ---------------------------------------------------------------------------- running
def evaluate(systems: dict[str, Callable[[dspy.Example], Outcome]], examples: list[dspy.Example],
             metric: Metric | Callable[..., Any], threads: int = 4, progress: Any = None) -> "Evaluation":
    """Every system on every example, ``threads`` at a time; a table of scores, steps and tokens."""
    metric = metric if isinstance(metric, Metric) else Metric(metric)
    progress = progress or TextProgress()
    jobs = [(name, index) for name in systems for index in range(len(examples))]
    progress.start(len(jobs))
    rows: dict[tuple[str, int], dict[str, Any]] = {}

    def one(name: str, index: int) -> dict[str, Any]:
        example = examples[index]
        try:
            outcome = systems[name](example)
        except Exception as exc:  # the system failed on this example: score zero, keep going
            outcome = Outcome(None, 0, 0, f"{type(exc).__name__}: {exc}")
        scored = metric.score(example, outcome.pred) if outcome.pred is not None else Score(0.0)
        error = outcome.error or scored.error
        return {
            "system": name, "example": index, "task": example.task, "score": scored.score,
            "steps": outcome.steps, "tokens": outcome.tokens, "error": error,
            "result": getattr(outcome.pred, "result", None) if outcome.pred is not None else None,
        }

    pool = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="deepagent-eval")
    try:
        futures = {pool.submit(contextvars.copy_context().run, one, name, index): (name, index)
                   for name, index in jobs}
        for future in as_completed(futures):
            rows[futures[future]] = future.result()
            progress.advance(futures[future][0])
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        progress.close()
    pool.shutdown(wait=True)
    return Evaluation([rows[job] for job in jobs], list(systems), metric.name)


class Evaluation:
    """The table: one row per (system, example) and the means per system; shown as HTML or text."""

    def __init__(self, rows: list[dict[str, Any]], systems: list[str], metric: str = "metric"):
        self.rows = rows
        self.systems = systems
        self.metric = metric

    def means(self) -> dict[str, dict[str, float]]:
        out = {}
        for system in self.systems:
            rows = [row for row in self.rows if row["system"] == system]
            n = max(1, len(rows))
            out[system] = {
                "score": sum(row["score"] for row in rows) / n,
                "steps": sum(row["steps"] for row in rows) / n,
                "tokens": sum(row["tokens"] for row in rows) / n,
                "errors": sum(row["error"] is not None for row in rows),
            }
        return out

    def score(self, system: str = DEEP_AGENT) -> float:
        return self.means()[system]["score"]

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [row for row in self.rows if row["error"]]

    def to_pandas(self):
        """The rows as a pandas DataFrame (pandas is not a dependency: install it to use this)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("to_pandas() needs pandas; the rows are in .rows as a list of dicts") from None
        return pd.DataFrame(self.rows)

    # ------------------------------------------------------------------ rendering
    def _grid(self) -> tuple[list[str], list[list[str]]]:
        header = ["#", "task"] + [f"{system}: {col}" for system in self.systems for col in ("score", "steps", "tokens")]
        by_key = {(row["system"], row["example"]): row for row in self.rows}
        count = max((row["example"] for row in self.rows), default=-1) + 1
        body = []
        for index in range(count):
            task = next(row["task"] for row in self.rows if row["example"] == index)
            cells = [str(index), _clip(task, 40)]
            for system in self.systems:
                row = by_key.get((system, index))
                flag = " !" if row and row["error"] else ""
                cells += [f"{row['score']:.2f}{flag}", str(row["steps"]), f"{row['tokens']:,}"] if row else ["", "", ""]
            body.append(cells)
        means = self.means()
        cells = ["", "mean"]
        for system in self.systems:
            mean = means[system]
            cells += [f"{mean['score']:.2f}", f"{mean['steps']:.1f}", f"{mean['tokens']:,.0f}"]
        body.append(cells)
        return header, body

    def notes(self) -> list[str]:
        return [f"! #{row['example']} {row['system']}: {row['error']}" for row in self.errors]

    def __repr__(self) -> str:
        header, body = self._grid()
        widths = [max(len(line[i]) for line in [header] + body) for i in range(len(header))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in [header] + body]
        lines.insert(1, "  ".join("-" * width for width in widths))
        lines.insert(len(lines) - 1, "  ".join("-" * width for width in widths))
        return "\n".join(lines + self.notes())

    def _repr_html_(self) -> str:
        from html import escape

        header, body = self._grid()
        head = "".join(f"<th>{escape(cell)}</th>" for cell in header)
        rows = "".join(
            "<tr>" + "".join(f"<td>{'<b>' + escape(c) + '</b>' if i == len(body) - 1 else escape(c)}</td>" for c in line) + "</tr>"
            for i, line in enumerate(body)
        )
        notes = "".join(f"<div>{escape(note)}</div>" for note in self.notes())
        return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{notes}"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------- progress
class TextProgress:
    """A one-line text progress bar on the real stdout (what agents print in worker threads is captured)."""

    def __init__(self, label: str = "evaluating", stream: Any = None):
        self.label = label
        self.stream = stream
        self.total = 0
        self.done = 0

    def _out(self):
        stream = self.stream or sys.stdout
        return getattr(stream, "_stream", stream) if type(stream).__name__ == "_Router" else stream

    def start(self, total: int) -> None:
        self.total, self.done = total, 0
        self._draw("")

    def advance(self, system: str) -> None:
        self.done += 1
        self._draw(system)

    def _draw(self, system: str) -> None:
        width = 20
        filled = width * self.done // max(1, self.total)
        bar = "#" * filled + "." * (width - filled)
        tail = f" ({system})" if system else ""
        print(f"\r{self.label}: [{bar}] {self.done}/{self.total}{tail}".ljust(70), end="", file=self._out(), flush=True)

    def close(self) -> None:
        print(file=self._out(), flush=True)


class WidgetProgress:
    """An ipywidgets progress bar, updated from the main thread (it waits on the workers)."""

    def __init__(self, label: str = "evaluating"):
        import ipywidgets as widgets
        from IPython.display import display

        self.bar = widgets.IntProgress(min=0, max=1, description=label)
        self.text = widgets.Label("")
        self.box = widgets.HBox([self.bar, self.text])
        display(self.box)

    def start(self, total: int) -> None:
        self.bar.max = max(1, total)
        self.bar.value = 0
        self.text.value = f"0/{total}"

    def advance(self, system: str) -> None:
        self.bar.value += 1
        self.text.value = f"{self.bar.value}/{self.bar.max} ({system})"

    def close(self) -> None:
        self.bar.bar_style = "success"


def progress_for(shell: Any, label: str = "evaluating") -> Any:
    """Widgets in a Jupyter kernel, text elsewhere (a terminal, a headless notebook run)."""
    if shell is not None and type(shell).__name__ == "ZMQInteractiveShell":
        try:
            return WidgetProgress(label)
        except ImportError:
            pass
    return TextProgress(label)
