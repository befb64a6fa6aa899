"""The systems an evaluation compares: the deep agent (each example in a fresh namespace and its own
temporary workspace), the optimised one, and DSPy baselines on the same LM.

An example may carry ``prepare``, a function ``prepare(workspace: Path) -> dict`` that puts the
task's files in the fresh workspace and returns the variables its namespace starts with (the
quality benchmark's suites use it: `tuning.suites`); the deep agent gets both, ReAct the files.
It may also carry ``inline``: text only the tool-less ``cot`` baseline gets in its prompt (a
long context the others read from a variable or a file).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

import dspy
from dspy.utils.usage_tracker import track_usage

from ..core.loop.ending import ended_by
from ..core.model.failures import EXTRACTED
from ..core.model.lm import resolve_lm
from ..core.model.stop_sequences import stop_for
from ..core.model.usage_sink import UsageSink
from ..core.run.run import Run
from ..core.run.secrets import scrub
from ..core.run.session import Session, activate, deactivate
from ..core.workspace.workspace import Workspace
from .choices import BASELINES

if TYPE_CHECKING:
    from ..core.loop.agent import DeepAgent

DEEP_AGENT = "deep agent"
OPTIMIZED = "deep agent (optimized)"


@dataclass
class Outcome:
    pred: dspy.Prediction | None
    steps: int
    tokens: int
    error: str | None = None
    cost: float | None = 0.0  # dollars, as the provider (LiteLLM) priced the calls; None when no call had a price
    prompt_tokens: int = 0  # of ``tokens``, those the model read
    completion_tokens: int = 0  # and those it wrote
    ending: str | None = None  # how the answer came: ``core.loop.ending.ENDINGS`` (None: one call, no loop)


def _task_text(example: dspy.Example) -> str:
    context = example.get("context")
    return f"{example.task}\n\nContext:\n{context}" if context else example.task


def set_up_example(example: Any, workspace: str) -> dict[str, Any]:
    """The example's files written into ``workspace`` and its starting variables (none without ``prepare``)."""
    prepare = example.get("prepare") if example is not None else None
    return dict(prepare(Path(workspace)) or {}) if callable(prepare) else {}


def files_in(workspace: str) -> dict[str, tuple[int, int]]:
    """Each file under ``workspace`` (its path there) with its size and modification time."""
    found = {}
    for path in Path(workspace).rglob("*"):
        try:
            if path.is_file() and not path.is_symlink():
                stat = path.stat()
                found[str(path.relative_to(workspace))] = (stat.st_size, stat.st_mtime_ns)
        except OSError:  # gone since the walk saw it (a thread the run left writing), or not ours to read
            continue
    return found


def left_in(workspace: str, before: dict[str, tuple[int, int]]) -> list[str]:
    """The files a system made or changed in ``workspace`` since ``before`` (`files_in`), however it wrote
    them: a tool, or its code (``df.to_csv``), which a question that asks for a file counts (`sklearn_data`)."""
    return sorted(name for name, seen in files_in(workspace).items() if before.get(name) != seen)


def priced(usage: Any) -> float | None:
    """The cost the provider reported, or None when it priced none of the calls (a local model): unknown, not $0."""
    return None if usage.lm_calls and usage.unpriced_calls >= usage.lm_calls else usage.cost


STEP_TEXT = 4_000  # characters kept of each step's code and output in a bench's steps file


def steps_of(pred: Any) -> list[dict[str, str]]:
    """What a system did, step by step, to read why a task failed: the deep agent's and bare RLM's code and
    output, ReAct's tool calls and observations (secrets scrubbed, each text cut at `STEP_TEXT`)."""
    if pred is None:
        return []
    run = pred.get("run") if hasattr(pred, "get") else None
    trajectory = pred.get("trajectory") if hasattr(pred, "get") else None
    if run is not None:
        steps = [{"reasoning": step.reasoning, "code": step.code, "output": step.output or ""} for step in run.steps]
    elif isinstance(trajectory, list):  # dspy.RLM: [{"reasoning", "code", "output"}, ...]
        steps = [{key: str(each.get(key) or "") for key in ("reasoning", "code", "output")}
                 for each in trajectory if isinstance(each, dict)]
    elif isinstance(trajectory, dict):  # dspy.ReAct: thought_0, tool_name_0, tool_args_0, observation_0, ...
        steps = [{"reasoning": str(trajectory.get(f"thought_{n}", "")),
                  "code": f"{trajectory.get(f'tool_name_{n}')}({json.dumps(trajectory.get(f'tool_args_{n}'), default=str)})",
                  "output": str(trajectory.get(f"observation_{n}", ""))}
                 for n in range(sum(key.startswith("tool_name_") for key in trajectory))]
    else:
        return []
    return [{key: _cut(scrub(text)) for key, text in step.items()} for step in steps]


def _cut(text: str) -> str:
    return text if len(text) <= STEP_TEXT else text[:STEP_TEXT] + f"\n[... {len(text) - STEP_TEXT:,} more characters]"


def tokens_read_and_written(tracked: dict[str, Any] | None, usage: Any) -> tuple[int, int]:
    """Prompt and completion tokens from DSPy's usage tracker (per LM), else from the run's own `Usage`."""
    entries = [entry for entry in (tracked or {}).values() if isinstance(entry, dict)]
    read = sum(int(entry.get("prompt_tokens") or 0) for entry in entries)
    written = sum(int(entry.get("completion_tokens") or 0) for entry in entries)
    return (read, written) if read or written else (usage.input_tokens, usage.output_tokens)


def outcome(pred: Any, steps: int, tracked: dict[str, Any] | None, usage: Any, error: str | None = None,
            ending: str | None = None) -> Outcome:
    read, written = tokens_read_and_written(tracked, usage)
    return Outcome(pred, steps, read + written, error, priced(usage), read, written, ending)


def _tracked(pred: Any) -> dict[str, Any] | None:
    return pred.get_lm_usage() if isinstance(pred, dspy.Prediction) else None


def rlm_ending(pred: Any) -> str:
    """Bare RLM's answer: its ``SUBMIT``, or its extract step once the steps ran out."""
    return "extraction" if getattr(pred, "final_reasoning", None) == EXTRACTED else "SUBMIT"


def react_ending(pred: Any) -> str:
    """ReAct's answer: after its ``finish`` tool (its ``SUBMIT``), or extracted once its steps ran out."""
    trajectory = pred.get("trajectory") or {}
    calls = [trajectory[key] for key in trajectory if key.startswith("tool_name_")]
    return "SUBMIT" if calls and calls[-1] == "finish" else "extraction"


class IsolatedAgent(dspy.Module):
    """The deep agent as evaluation and optimisers call it: each call in a fresh namespace and its own
    temporary workspace, which is also its steps' working directory (as a notebook's folder is in a
    notebook), so examples running at once cannot see each other's variables or files."""

    def __init__(self, agent: "DeepAgent"):
        super().__init__()
        self.agent = agent
        agent.ask = None  # no one answers approval questions in an evaluation: such a block is refused

    def run(self, task: str, context: str = "", example: Any = None) -> Run:
        return self.run_leaving(task, context, example)[0]

    def run_leaving(self, task: str, context: str = "", example: Any = None) -> tuple[Run, list[str]]:
        """The run, and the files it made or changed in its workspace (`left_in`)."""
        with tempfile.TemporaryDirectory(prefix="deepagent-eval-") as workspace:
            namespace = set_up_example(example, workspace)
            before = files_in(workspace)
            run = self.agent.run(task, namespace=namespace, context=context or "", workspace=workspace, cwd=workspace)
            return run, left_in(workspace, before)

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
            run, left = self.program.run_leaving(example.task, example.get("context") or "", example)
        pred = dspy.Prediction(result=run.result, run=run, files_left=left)
        return outcome(pred, len(run.steps), usage.get_total_tokens(), run.tree_usage(),
                       run.error if run.status == "failed" else None, ended_by(run))


class CoTSystem:
    """``dspy.ChainOfThought("task -> result")`` on the agent's LM: one call, no tools."""

    def __init__(self, lm: Any):
        self.lm = lm
        self.module = dspy.ChainOfThought("task -> result")

    def __call__(self, example: dspy.Example) -> Outcome:
        meter = Run(example.task, profile="cot")  # only its usage: tokens and cost of this call
        inline = example.get("inline")
        task = f"{_task_text(example)}\n\nContext:\n{inline}" if inline else _task_text(example)
        with dspy.context(lm=self.lm, track_usage=True, caller_modules=[UsageSink(meter)]):
            pred = self.module(task=task)
        return outcome(pred, 1, _tracked(pred), meter.usage)


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
            set_up_example(example, workspace)  # the files; ReAct has no namespace for the variables
            before = files_in(workspace)
            token = activate(Session(run, Workspace(workspace), agent=self.agent))
            try:
                with dspy.context(lm=self.lm, track_usage=True, caller_modules=[UsageSink(run)]):
                    pred = self.module(task=_task_text(example))
            finally:
                deactivate(token)
            pred["files_left"] = left_in(workspace, before)
        steps = sum(key.startswith("tool_name_") for key in (pred.get("trajectory") or {}))
        return outcome(pred, steps, _tracked(pred), run.usage, ending=react_ending(pred))


class RLMSystem:
    """Bare ``dspy.RLM("task -> result")``: DSPy's own prompt, no tools of ours (only ``llm_query`` and
    ``SUBMIT``), the same Python REPL as the deep agent's over the task's variables (DSPy's default
    sandbox needs Deno), so what differs from the deep agent is the harness, not the interpreter."""

    def __init__(self, agent: "DeepAgent", lm: Any):
        self.lm = lm
        self.agent = agent

    def __call__(self, example: dspy.Example) -> Outcome:
        run = Run(example.task, profile="rlm")
        with tempfile.TemporaryDirectory(prefix="deepagent-rlm-") as workspace:
            namespace = set_up_example(example, workspace)
            before = files_in(workspace)
            session = Session(run, Workspace(workspace), agent=self.agent, cwd=workspace)  # its steps run there
            module = dspy.RLM("task -> result", max_iters=self.agent.max_iters, max_llm_calls=self.agent.max_llm_calls,
                              interpreter_factory=self.agent.interpreter_factory(session, namespace))
            token = activate(session)
            try:
                with dspy.context(lm=self.lm, track_usage=True, caller_modules=[UsageSink(run)]):
                    pred = module(task=_task_text(example))
            finally:
                deactivate(token)
            pred["files_left"] = left_in(workspace, before)
        return outcome(pred, len(pred.get("trajectory") or []), _tracked(pred), run.usage, ending=rlm_ending(pred))


def baseline_lm(lm: Any) -> Any:
    """``lm`` with the stop sequence a deep-agent step would carry, or ``lm`` itself when it takes none."""
    stop = stop_for(lm)
    return lm.copy(stop=stop) if stop else lm


def systems_for(agent: "DeepAgent", baselines: Iterable[str] = (), optimized: "DeepAgent | None" = None,
                lm: Any = None) -> dict[str, Callable[[dspy.Example], Outcome]]:
    """The deep agent, the optimised one when given, and the named baselines, all on the same LM.

    The baselines' requests end at the adapter's end marker as the agent's steps do (`stop_for`: where
    the provider takes a stop sequence), so a comparison measures the harnesses, not a request flag."""
    lm = baseline_lm(lm or resolve_lm(agent.lm))
    systems: dict[str, Callable[[dspy.Example], Outcome]] = {}
    for name in baselines:
        if name not in BASELINES:
            raise ValueError(f"unknown baseline {name!r}; choose from: {', '.join(BASELINES)}")
        systems[name] = {"cot": CoTSystem, "react": ReActSystem, "rlm": RLMSystem}[name](
            *((lm,) if name == "cot" else (agent, lm)))
    systems[DEEP_AGENT] = DeepAgentSystem(agent)
    if optimized is not None:
        systems[OPTIMIZED] = DeepAgentSystem(optimized)
    return systems
