"""Improve the deep agent with a DSPy optimiser on examples from the notebook.

The deep agent is a ``dspy.Module`` (one ``dspy.RLM``), so DSPy's optimisers
compile it as they would any program: GEPA rewrites the action prompt's
instructions from the metric's feedback, MIPROv2 searches instructions and
demos, BootstrapFewShot adds demos (steps of runs that scored well). The score
on the validation set is measured before and after, on the same examples.

    outcome = optimize(agent, trainset, metric, valset, optimizer="gepa", reflection_lm=lm)
    outcome.before.score(), outcome.after.score(), outcome.agent   # the tuned DeepAgent

The scripted demo of it is demos/optimize.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dspy

from ..errors import UserError
from ..core.model.lm import resolve_lm
from ..core.model.price_list import bundled_price_list
from .choices import AUTO, OPTIMIZERS
from .evaluate import Evaluation, evaluate
from .examples import Metric
from .systems import DEEP_AGENT, OPTIMIZED, DeepAgentSystem, IsolatedAgent

if TYPE_CHECKING:
    from ..core.loop.agent import DeepAgent


class OptimizerUnavailable(UserError, RuntimeError):
    """The optimiser needs a package that is not installed; the message says which."""


@dataclass
class Optimization:
    optimizer: str
    before: Evaluation  # the agent on the validation set, before
    after: Evaluation  # the optimised agent on the same examples
    agent: "DeepAgent"  # the optimised agent (its state is the tuned program)

    def summary(self) -> str:
        before, after = self.before.score(DEEP_AGENT), self.after.score(OPTIMIZED)
        demos = sum(len(p.demos) for _, p in self.agent.named_predictors())
        return (f"{self.optimizer}: validation score {before:.2f} -> {after:.2f} "
                f"({after - before:+.2f}; {len(self.after.rows)} examples; {demos} demos)")

    def __repr__(self) -> str:
        return self.summary()


def compile_agent(agent: "DeepAgent", trainset: list[dspy.Example], metric: Metric, *, valset=None,
                  optimizer: str = "gepa", auto: str | None = "light", reflection_lm: Any = None,
                  max_metric_calls: int | None = None, threads: int = 4, seed: int = 0) -> "DeepAgent":
    """The optimised copy of ``agent`` (``agent`` itself is left as it was)."""
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}; choose one of: {', '.join(OPTIMIZERS)}")
    if auto is not None and auto not in AUTO:
        raise ValueError(f"--auto must be one of {', '.join(AUTO)}, not {auto!r}")
    lm = resolve_lm(agent.lm)
    student = IsolatedAgent(agent)
    with dspy.context(lm=lm), bundled_price_list():  # an optimiser asks dspy.settings.lm: the agent's LM
        if optimizer == "bootstrap":
            # Labeled demos would be whole examples, which the agent's step predictor cannot read:
            # only bootstrapped steps (runs that scored well) become demos.
            teleprompter = dspy.BootstrapFewShot(metric=metric.for_bootstrap, max_bootstrapped_demos=4,
                                                 max_labeled_demos=0, max_rounds=1)
            compiled = teleprompter.compile(student, trainset=trainset)
        elif optimizer == "gepa":
            budget = {"max_metric_calls": max_metric_calls} if max_metric_calls else {"auto": auto or "light"}
            teleprompter = dspy.GEPA(
                metric=metric.for_gepa, reflection_lm=reflection_lm or lm, num_threads=threads,
                component_selector="all",  # the step predictor; `extract` only runs when a run hits max_iters
                reflection_minibatch_size=min(3, len(trainset)), seed=seed, **budget,
            )
            compiled = teleprompter.compile(student, trainset=trainset, valset=valset)
        else:
            try:
                import optuna  # noqa: F401  (MIPROv2's search)
            except ImportError:
                raise OptimizerUnavailable(
                    "MIPROv2 needs optuna: pip install optuna (or deepagent-magics[optimize])") from None
            teleprompter = dspy.MIPROv2(metric=metric.for_bootstrap, prompt_model=reflection_lm or lm, task_model=lm,
                                        auto=auto or "light", num_threads=threads, max_labeled_demos=0, seed=seed,
                                        track_stats=False)
            compiled = teleprompter.compile(student, trainset=trainset, valset=valset)
    return compiled.agent


def optimize(agent: "DeepAgent", trainset: list[dspy.Example], metric: Metric, *, valset=None,
             optimizer: str = "gepa", threads: int = 4, progress_factory: Any = None, **options: Any) -> Optimization:
    """Score ``agent`` on the validation set (the train set when none), optimise it, score it again."""
    valset = valset or trainset
    progress = progress_factory or (lambda label: None)
    before = evaluate({DEEP_AGENT: DeepAgentSystem(agent)}, valset, metric, threads, progress("before"))
    tuned = compile_agent(agent, trainset, metric, valset=valset, optimizer=optimizer, threads=threads, **options)
    after = evaluate({OPTIMIZED: DeepAgentSystem(tuned)}, valset, metric, threads, progress("after"))
    return Optimization(optimizer, before, after, tuned)
