"""Measure and improve the agent on examples from the notebook.

    %deepagent_eval --devset dev --metric exact --baselines cot,react
    %deepagent_optimize --trainset train --valset dev --metric exact --optimizer gepa

The tuning room (DSPy's optimisers among it) is imported when one of them is first used.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..tuning.choices import AUTO, BASELINES, OPTIMIZERS
from .inputs.flags import parse_flags
from .inputs.out_name import check_out
from .configured import AgentMagicsBase

if TYPE_CHECKING:
    import dspy

    from ..tuning.evaluate import Evaluation
    from ..tuning.examples import Metric
    from ..tuning.optimize import Optimization


@magics_class
class TuningMagics(AgentMagicsBase):
    """``%deepagent_eval`` and ``%deepagent_optimize``."""

    def _examples(self, name: str, flag: str) -> list[dspy.Example]:
        from ..tuning.examples import ExamplesError, as_examples

        try:
            return as_examples(self._variable(name, flag), name)
        except ExamplesError as exc:
            raise UsageError(f"{flag} {name}: {exc}") from None

    def _metric(self, name: str) -> Metric:
        from ..tuning.examples import Metric

        function = self._variable(name, "--metric")
        if not callable(function):
            raise UsageError(f"--metric {name}: {name!r} is a {type(function).__name__}, not a function "
                             "metric(example, pred) -> score")
        return Metric(function, name)

    # ------------------------------------------------------------------ %deepagent_eval
    @magic_arguments()
    @argument("--devset", required=True, help="notebook variable: a list of examples (dicts or dspy.Example with a 'task')")
    @argument("--metric", required=True, help="notebook variable: metric(example, pred) -> score")
    @argument("--baselines", default="", help="comma-separated: " + ",".join(BASELINES))
    @argument("--threads", type=int, default=4, help="examples run at once")
    @argument("--profile", help="the profile to evaluate")
    @argument("--lm", help="LM for this evaluation: a model id or a notebook variable holding an LM")
    @argument("--out", help="notebook variable to store the table in (also returned)")
    @line_magic
    def deepagent_eval(self, line: str) -> Evaluation:
        """Score the deep agent (and baselines) on examples from the notebook; show and return the table."""
        from ..tuning import programs
        from ..tuning.evaluate import evaluate
        from ..tuning.progress import progress_for
        from ..tuning.systems import systems_for

        args = parse_flags(self.deepagent_eval, line)
        check_out(args.out)
        examples = self._examples(args.devset, "--devset")
        metric = self._metric(args.metric)
        _check_threads(args.threads)
        baselines = [name.strip() for name in args.baselines.split(",") if name.strip()]
        unknown = [name for name in baselines if name not in BASELINES]
        if unknown:
            raise UsageError(f"--baselines: unknown {', '.join(unknown)}; choose from {', '.join(BASELINES)}")
        profile = self._profile(args.profile)
        optimized = self._agent(profile, args.lm) if programs.tuned(profile) else None
        with programs.untuned():
            agent = self._agent(profile, args.lm)
        systems = systems_for(agent, baselines, optimized=optimized)
        table = evaluate(systems, examples, metric, args.threads, progress_for(self.shell, "deepagent_eval"))
        self.shell.user_ns["_deepagent_eval"] = table
        if args.out:
            self.shell.user_ns[args.out] = table
        _check_metric(table, metric)
        return table

    # ------------------------------------------------------------------ %deepagent_optimize
    @magic_arguments()
    @argument("--trainset", required=True, help="notebook variable: examples to optimise on")
    @argument("--metric", required=True, help="notebook variable: metric(example, pred) -> score or "
                                              "dspy.Prediction(score=..., feedback=...)")
    @argument("--valset", help="notebook variable: examples to score before and after (default: the train set)")
    @argument("--optimizer", default="gepa", choices=OPTIMIZERS)
    @argument("--auto", default="light", choices=AUTO, help="budget preset for gepa and mipro")
    @argument("--max-metric-calls", dest="max_metric_calls", type=int, help="gepa: an exact budget instead of --auto")
    @argument("--reflection-lm", dest="reflection_lm", help="gepa/mipro: the LM that proposes instructions "
                                                            "(model id or notebook variable; default: the agent's)")
    @argument("--threads", type=int, default=4)
    @argument("--profile", help="the profile to optimise")
    @argument("--lm", help="LM for the agent: a model id or a notebook variable holding an LM")
    @argument("--verbose", action="store_true", help="show the optimiser's own log")
    @argument("--out", help="notebook variable to store the outcome in (also returned)")
    @line_magic
    def deepagent_optimize(self, line: str) -> Optimization:
        """Optimise the agent with a DSPy optimiser; show the validation score before and after; install it."""
        from ..core.model.lm import make_lm
        from ..tuning import programs
        from ..tuning.evaluate import evaluate
        from ..tuning.optimize import Optimization, OptimizerUnavailable, compile_agent
        from ..tuning.progress import progress_for
        from ..tuning.systems import DEEP_AGENT, OPTIMIZED, systems_for

        args = parse_flags(self.deepagent_optimize, line)
        check_out(args.out)
        trainset = self._examples(args.trainset, "--trainset")
        valset = self._examples(args.valset, "--valset") if args.valset else trainset
        metric = self._metric(args.metric)
        _check_threads(args.threads)
        if args.max_metric_calls is not None and args.max_metric_calls <= 0:
            raise UsageError(f"--max-metric-calls must be positive, got {args.max_metric_calls}")
        try:
            reflection_lm = make_lm(args.reflection_lm, self.shell.user_ns)
        except (ValueError, TypeError) as exc:
            raise UsageError(f"--reflection-lm: {exc}") from None
        profile = self._profile(args.profile)
        agent = self._agent(profile, args.lm)

        before = evaluate({DEEP_AGENT: systems_for(agent)[DEEP_AGENT]}, valset, metric, args.threads,
                          progress_for(self.shell, "score before"))
        _check_metric(before, metric)
        try:
            with _quiet_dspy(not args.verbose):
                tuned = compile_agent(agent, trainset, metric, valset=valset, optimizer=args.optimizer,
                                      auto=args.auto, reflection_lm=reflection_lm,
                                      max_metric_calls=args.max_metric_calls, threads=args.threads)
        except OptimizerUnavailable as exc:
            raise UsageError(str(exc)) from None
        after = evaluate({OPTIMIZED: systems_for(tuned)[DEEP_AGENT]}, valset, metric, args.threads,
                         progress_for(self.shell, "score after"))
        outcome = Optimization(args.optimizer, before, after, tuned)
        programs.install(profile, tuned, f"optimized with {args.optimizer}")
        print(f"deepagent_optimize: {outcome.summary()}")
        print(f"deepagent_optimize: profile {profile!r} now runs the optimised program "
              f"(prompt hash {tuned.prompt_hash}); %deepagent_prompt --reset undoes it.")
        self.shell.user_ns["_deepagent_optimize"] = outcome
        if args.out:
            self.shell.user_ns[args.out] = outcome
        return outcome


def _check_threads(threads: int) -> None:
    if threads <= 0:
        raise UsageError(f"--threads must be positive, got {threads}")


def _check_metric(table: Evaluation, metric: Metric) -> None:
    """Say which examples the metric failed on; a metric that fails on every example is a UsageError."""
    failed = [row for row in table.rows if row["error"] and row["error"] in metric.errors]
    if failed and len(failed) == len(table.rows):
        raise UsageError(f"the metric failed on every example, e.g. {failed[0]['error']}; fix --metric {metric.name}")
    if failed:
        print(f"deepagent: {metric.name} raised on {len(failed)} of {len(table.rows)} runs; those score 0 "
              "(marked ! in the table)")


@contextmanager
def _quiet_dspy(quiet: bool) -> Iterator[None]:
    """Optimisers log every step at INFO; keep the cell readable unless --verbose."""
    logger = logging.getLogger("dspy")
    level = logger.level
    if quiet:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
