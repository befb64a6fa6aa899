"""Prompts in place: read, hand-tune, evaluate and optimise the agent from the notebook.

    %deepagent_prompt                      # the instructions and tools as the LM sees them
    %%deepagent_prompt                     # the cell body becomes the profile's instructions
    %deepagent_prompt --diff | --reset | --save tuned.json | --load tuned.json
    %deepagent_eval --devset dev --metric exact --baselines cot,react
    %deepagent_optimize --trainset train --valset dev --metric exact --optimizer gepa

The agents are built by ``%%deepagent``'s own `build_agent` (same settings, same
tools); `programs` holds what hand-tuning and optimisation changed.
"""

from __future__ import annotations

import difflib
import logging
from argparse import Namespace
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import dspy
from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from . import programs
from .agent import DeepAgent
from .evaluate import (BASELINES, DEEP_AGENT, OPTIMIZED, Evaluation, ExamplesError, Metric, as_examples,
                       evaluate, progress_for, systems_for)
from .lm import NoLMError, make_lm, resolve_lm
from .optimize import AUTO, OPTIMIZERS, Optimization, OptimizerUnavailable, compile_agent
from .profiles import UnknownProfile, available_profiles, load_profile, packaged_text

RLM_TEMPLATE_START = "You are tasked with producing the following outputs"
RLM_TOOLS = ("llm_query", "llm_query_batched", "SUBMIT")


class _PreviewLM(dspy.BaseLM):
    """Stands in for the LM when the prompt is only shown: the prompt does not depend on the model."""

    def __init__(self):
        super().__init__(model="(no LM: prompt preview)")

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NoLMError("the prompt preview has no LM")


@magics_class
class PromptMagics(Magics):
    """``%deepagent_prompt``, ``%deepagent_eval`` and ``%deepagent_optimize``."""

    # ------------------------------------------------------------------ helpers
    def _core(self) -> Any:
        core = self.shell.magics_manager.registry.get("DeepAgentMagics")
        if core is None:
            raise UsageError("the deepagent magics are not loaded: run %load_ext deepagent_magics")
        return core

    def _profile(self, name: str | None) -> str:
        profile = name or self._core().profile
        if profile not in available_profiles():
            raise UsageError(f"unknown profile {profile!r}; choose one of: {', '.join(available_profiles())}")
        return profile

    def _agent(self, profile: str, lm: str | None = None, *, need_lm: bool = True) -> DeepAgent:
        """The agent ``%%deepagent --profile profile`` would run (a UsageError when no LM is set and one is needed)."""
        core = self._core()
        args = Namespace(profile=profile, lm=lm)
        if not need_lm:
            try:
                resolve_lm(lm, core.lm, namespace=self.shell.user_ns)
            except (NoLMError, ValueError, TypeError):
                args.lm = _PreviewLM()
        return core.build_agent(args)

    def _variable(self, name: str, flag: str) -> Any:
        if name not in self.shell.user_ns:
            raise UsageError(f"{flag} {name}: there is no notebook variable {name!r}; define it first")
        return self.shell.user_ns[name]

    def _examples(self, name: str, flag: str) -> list[dspy.Example]:
        try:
            return as_examples(self._variable(name, flag), name)
        except ExamplesError as exc:
            raise UsageError(f"{flag} {name}: {exc}") from None

    def _metric(self, name: str) -> Metric:
        function = self._variable(name, "--metric")
        if not callable(function):
            raise UsageError(f"--metric {name}: {name!r} is a {type(function).__name__}, not a function "
                             "metric(example, pred) -> score")
        return Metric(function, name)

    # ------------------------------------------------------------------ %deepagent_prompt
    @magic_arguments()
    @argument("--profile", help="the profile to show or tune (default: the configured one)")
    @argument("--reset", action="store_true", help="restore the packaged instructions (undoes edits and optimisation)")
    @argument("--diff", action="store_true", help="show the change against the packaged instructions")
    @argument("--save", metavar="PATH", help="store the active program (instructions and demos) as DSPy JSON")
    @argument("--load", metavar="PATH", help="make a program saved with --save the active one")
    @argument("--edit", action="store_true", help="put the profile's text in a new %%%%deepagent_prompt cell")
    @line_cell_magic
    def deepagent_prompt(self, line: str, cell: str | None = None) -> None:
        """Show the agent's prompt; as a cell magic, replace its instructions with the cell body."""
        args = parse_argstring(self.deepagent_prompt, line)
        profile = self._profile(args.profile)
        if cell is not None:
            if not cell.strip():
                raise UsageError("the cell is empty: write the new instructions in the cell body (or use --reset)")
            programs.set_instructions(profile, cell.strip() + "\n")
            agent = self._agent(profile, need_lm=False)
            print(f"deepagent_prompt: profile {profile!r} now uses this cell's instructions "
                  f"(prompt hash {agent.prompt_hash}); --diff shows the change, --reset undoes it.")
            return
        if args.reset:
            programs.reset(profile)
            print(f"deepagent_prompt: profile {profile!r} is back to prompts/{profile}.md")
        elif args.diff:
            print(self.diff(profile))
        elif args.save:
            self.save(profile, args.save)
        elif args.load:
            self.load(profile, args.load)
        elif args.edit:
            self.shell.set_next_input(f"%%deepagent_prompt --profile {profile}\n{load_profile(profile).text}",
                                      replace=False)
        else:
            print(self.describe(profile))

    def describe(self, profile: str) -> str:
        agent = self._agent(profile, need_lm=False)
        full = agent.prompt_instructions
        own = agent.instructions
        if full.startswith(own):
            parts = [("Instructions (the profile's text; edit with %%deepagent_prompt)", own),
                     ("Added by dspy.RLM: its REPL template and the tool docs", full[len(own):].strip())]
        elif RLM_TEMPLATE_START in full:
            at = full.index(RLM_TEMPLATE_START)
            parts = [("Instructions (tuned)", full[:at].strip()),
                     ("dspy.RLM's REPL template and the tool docs (as tuned)", full[at:].strip())]
        else:
            parts = [("Instructions (tuned; the whole action prompt)", full)]
        tools = [tool.__name__ for tool in agent.builtin_tools() + agent.extra_tools] + list(RLM_TOOLS)
        lines = [f"Profile {profile!r}: {programs.describe(profile)}; prompt hash {agent.prompt_hash}",
                 "Tools: " + ", ".join(tools)]
        for title, text in parts:
            lines += ["", f"=== {title} ===", text]
        demos = agent.rlm.generate_action.demos
        if demos:
            lines += ["", f"=== Demos: {len(demos)} example steps shown before each request ==="]
            for demo in demos:
                lines.append(f"- {' '.join(str(demo.get('reasoning', '')).split())[:100]}  |  "
                             f"{' '.join(str(demo.get('code', '')).split())[:100]}")
        return "\n".join(lines)

    def diff(self, profile: str) -> str:
        """Unified diffs: the profile's text against its file, and a tuned action prompt against the text's."""
        out = []
        current = load_profile(profile).text
        if current != packaged_text(profile):
            out += difflib.unified_diff(packaged_text(profile).splitlines(), current.splitlines(),
                                        f"prompts/{profile}.md (packaged)", f"{profile} (edited in this kernel)",
                                        lineterm="")
        program = programs.tuned(profile)
        if program is not None:
            agent = self._agent(profile, need_lm=False)
            with programs.untuned():
                base = self._agent(profile, need_lm=False)
            if agent.prompt_instructions != base.prompt_instructions:
                out += difflib.unified_diff(base.prompt_instructions.splitlines(),
                                            agent.prompt_instructions.splitlines(),
                                            f"{profile} action prompt (from the profile text)",
                                            f"{profile} action prompt ({program.source})", lineterm="")
            demos = len(agent.rlm.generate_action.demos)
            if demos:
                out.append(f"+ {demos} demos ({program.source})")
        return "\n".join(out) if out else f"(no changes: profile {profile!r} is prompts/{profile}.md)"

    def save(self, profile: str, path: str) -> None:
        if not path.endswith(".json"):
            raise UsageError(f"--save {path}: give a .json path (the program is saved as DSPy's JSON)")
        agent = self._agent(profile, need_lm=False)
        try:
            agent.save(path)
        except OSError as exc:
            raise UsageError(f"--save {path}: {exc.strerror or exc}") from None
        print(f"deepagent_prompt: saved profile {profile!r} ({programs.describe(profile)}) to {path}")

    def load(self, profile: str, path: str) -> None:
        if not Path(path).is_file():
            raise UsageError(f"--load {path}: no such file")
        with programs.untuned():
            agent = self._agent(profile, need_lm=False)
        try:
            agent.load(path)
        except Exception as exc:
            reason = " ".join(str(exc).split())[:200]
            raise UsageError(f"--load {path}: not a saved deep agent program ({type(exc).__name__}: {reason})") from None
        programs.install(profile, agent, f"loaded from {path}")
        print(f"deepagent_prompt: profile {profile!r} now runs the program in {path} (prompt hash {agent.prompt_hash})")

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
        args = parse_argstring(self.deepagent_eval, line)
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
        args = parse_argstring(self.deepagent_optimize, line)
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
