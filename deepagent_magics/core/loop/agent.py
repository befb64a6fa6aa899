"""DeepAgent: a deep agent on `dspy.RLM`, usable with or without IPython.

``DeepAgent.run(task, namespace)`` runs the RLM loop with the namespace as its
REPL and returns a `Run`. The agent is a ``dspy.Module`` holding one ``dspy.RLM``
(built once, with the tools and the profile's instructions), so DSPy optimisers
can tune it and ``save``/``load`` store it. RLM is the loop; nothing here
re-implements it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

import dspy

from ..policy import approval
from ..policy.risk import tool_rules
from . import extensions as _extensions
from ..model import streaming
from ..run import conversations as threads
from .ending import Stalled, end_early
from ..model.failures import made_up, reason, steps_ran_out
from ..model.lm import lm_label, resolve_lm
from ..model.price_list import bundled_price_list
from . import doors, inputs_view, instructions as action_instructions
from .rlm_seam import AgentRLM
from .value_kinds import imports_of
from .variables import BUDGET as VARIABLES_CHARS, variables_view
from ..model.usage_sink import HISTORY_SIZE, UsageSink
from ..model.calls import REQUEST
from .pipeline import layers_for, observe_steps, through
from .profiles import instructions_hash, load_profile
from ..model.retries import RetryPolicy, with_retries
from ..run.run import Listener, Run
from ..run.stopping import StopRun
from ..run.session import NamespaceBusy, Session, activate, active as active_session, claim, deactivate, release
from .subagent_types import check_types
from ..policy.spend import CapReached, SpendBudget, check_caps
from ..workspace.workspace import Workspace
from ...settings import AGENT, SETTINGS, agent_settings, at, described, with_settings

DEFAULT_TIMEOUT = SETTINGS["timeout"].default  # seconds one code block may run

INPUT_FIELDS = {
    "task": "What the user (or the parent agent) asked for",
    "context": "Extra material for the task; may be empty",
    "notebook_variables": "The notebook variables in scope by name: name, type, size and a short preview",
}
OUTPUT_FIELD = "result"
ROOT_RESULT = "your answer in Markdown, naming what you made"
SUB_RESULT = "what your parent gets"
JSONValue = str | dict | list | int | float | bool | None  # a sub-agent's result: kept as it was submitted


def build_signature(instructions: str, depth: int = 0) -> type[dspy.Signature]:
    """The agent's signature: the inputs, and the result (text for the user; a sub-agent's, data)."""
    fields: dict[str, Any] = {
        name: (str, dspy.InputField(desc=desc)) for name, desc in INPUT_FIELDS.items()
    }
    fields[OUTPUT_FIELD] = ((JSONValue, dspy.OutputField(desc=SUB_RESULT)) if depth
                            else (str, dspy.OutputField(desc=ROOT_RESULT)))
    return dspy.Signature(fields, instructions)


class DeepAgent(dspy.Module):
    """A deep agent: plans with todos, works in a workspace, runs code in a live namespace.

    Its settings are keywords, the same ones (name, default, meaning) as the magics' and the command
    line's flags (``deepagent_magics/settings.py``, listed below). Besides them:

    Args:
        tools: extra typed, documented callables to offer the agent.
        instructions: instructions to use instead of the profile's.
        max_output_chars: the most characters of a code block's output the model reads.
        depth: how deep in a tree of sub-agents this agent is (0: the root).
        pool: the `KernelPool` sub-agents take their kernels from (default: the process-wide one).
        subagents: `SubAgentType`s it (and its sub-agents) may delegate to by name
            (``delegate(task, agent="NAME")``; `core.loop.subagent_types`).
        extensions: its capabilities (`core.loop.capability.Capability`: tools, their lines in the prompt, layers
            around model calls, run hooks, prompt text): a list adds them to the package's standard set; an
            `Extensions` object is exactly its own (`core.loop.extensions`); default: the standard set.

    Of the settings: ``lm`` is an LM object or a model id (default: ``dspy.settings.lm``, then
    ``DEEPAGENT_LM``); ``mcp_servers``' tools come from ``tools/mcp_servers.py`` (one that cannot start
    raises ``MCPError``); the spend caps ``max_cost``, ``max_tokens``, ``max_time`` hold for the whole tree
    of a run (`core.policy.spend`; a bad value raises ``ValueError``); ``approve`` is ``never``,
    ``risky``, ``always`` or a callable ``(proposal) -> decision`` (``core/policy/approval.py``), and
    ``approve_rules`` None, rule names (``"-network"``, ``"none,subagents"``) or a dict {rule: bool}
    (``core/policy/risk.py``); ``undo_limit`` is in bytes here (``interpreters/provenance.py``).

    Settings:
{settings}
    """

    ask: Any = approval.STDIN  # how approval asks: the kernel's stdin; None: no one to ask (%deepagent_eval)

    record_runs = True  # write each root run to <workspace>/.deepagent/runs/<id>.json (records/)
    task_chars = inputs_view.TASK_CHARS  # the request shows the task whole up to this, cut at line ends
    context_chars = inputs_view.CONTEXT_CHARS  # likewise the context (recent cells, earlier turns, memories)
    variables_chars = VARIABLES_CHARS  # the variables view's budget (core.loop.variables)
    retry_policy: RetryPolicy | None = RetryPolicy()  # provider faults: retries and waits (retries.py; None: DSPy's)

    def __init__(
        self,
        *,
        tools: Iterable[Callable[..., Any]] = (),
        instructions: str | None = None,
        max_output_chars: int = 10_000,
        depth: int = 0,
        pool: Any = None,
        subagents: Iterable[Any] = (),
        extensions: Any = None,
        **settings: Any,
    ):
        super().__init__()
        self.extensions = _extensions.given(extensions)
        for name, value in agent_settings(settings).items():  # every setting of the table: given, else its default
            setattr(self, name, value)
        doors.door(self.door)  # one the prompt has words for, else one line
        self.subagents = check_types(subagents)
        caps = check_caps(max_cost=self.max_cost, max_tokens=self.max_tokens, max_time=self.max_time)
        self.max_cost, self.max_tokens, self.max_time = caps["max_cost"], caps["max_tokens"], caps["max_time"]
        self.workspace = Path(self.workspace)
        self.depth = depth
        self.pool = pool
        self.mcp_servers = list(self.mcp_servers)
        self.approve = approval.check_policy(self.approve)
        self.approve_rules = approval.parse_rules(self.approve_rules)
        self.extra_tools = list(tools)
        self.extra_tools += self.extensions.server_tools(self.mcp_servers, taken={t.__name__ for t in self.builtin_tools()
                                                                            + self.extra_tools})
        if instructions is None:
            instructions = load_profile(self.profile).instructions(depth=depth, max_depth=self.max_depth)
        self.rlm = self.make_rlm(build_signature(instructions, depth), max_iters=self.max_iters,
                                 max_llm_calls=self.max_llm_calls, max_output_chars=max_output_chars)

    def make_rlm(self, signature: type[dspy.Signature], rlm_class: type[AgentRLM] = AgentRLM, **settings: Any) -> Any:
        """The agent's ``dspy.RLM``, whose action prompt is ours (`rlm_seam`): the profile's text, the REPL's
        rules and the offered tools (`instructions`); the task, context and variables (`inputs_view`)."""
        can_delegate, read_only = self.depth < self.max_depth, bool(getattr(self, "read_only", False))
        lines = self.extensions.tool_lines()

        def compose(text: str, tools: list, rules: str, outputs: dict) -> str:
            return action_instructions.compose(text, tools, rules, outputs, lines=lines, can_delegate=can_delegate,
                                               read_only=read_only)

        return rlm_class(signature, compose=compose, render_inputs=self.render_inputs, through=through,
                         tools=self.builtin_tools() + self.extra_tools,
                         interpreter_factory=self.interpreter_factory(), **settings)

    def render_inputs(self, inputs: dict[str, Any]) -> str:
        """What the request shows of a run's inputs (`inputs_view`), then what the run has (`_factory`); a
        sub-agent has no notebook variables."""
        variables = inputs.get("notebook_variables") if self.depth == 0 else None
        session = active_session()
        return inputs_view.render(inputs.get("task"), inputs.get("context"), variables,
                                  task_chars=self.task_chars, context_chars=self.context_chars,
                                  surroundings=session.surroundings if session is not None else "")

    # ------------------------------------------------------------ extension points
    def builtin_tools(self) -> list[Callable[..., Any]]:
        """The tools this agent's extensions give it (the standard set: todos, files, delegation, ...)."""
        return self.extensions.builtin_tools()

    def interpreter_factory(self, session: Session | None = None, namespace: dict | None = None,
                            shell: Any = None) -> Callable[[], Any]:
        """The REPL of this agent's runs: the live namespace for a root agent (a sub-agent overrides it)."""
        return self.extensions.root_interpreter(self, session, namespace, shell)

    # ------------------------------------------------------------ reading
    @property
    def instructions(self) -> str:
        """The profile instructions the LM receives (without RLM's own REPL guidance)."""
        return self.rlm.signature.instructions

    @property
    def prompt_instructions(self) -> str:
        """Everything in the action prompt's instructions, as the LM sees them."""
        return self.rlm.generate_action.signature.instructions

    @property
    def prompt_hash(self) -> str:
        """A short hash of the action prompt's instructions (and its demos, when tuning added some)."""
        text = self.prompt_instructions
        demos = self.rlm.generate_action.demos
        if demos:
            text += json.dumps([dict(demo) for demo in demos], sort_keys=True, default=str)
        return instructions_hash(text)

    def config(self) -> dict[str, Any]:
        """The run settings, for the run record (model names only: never keys)."""
        config = {s.name: getattr(self, s.name, s.to_agent(s.default)) for s in at(AGENT) if s.recorded}
        config.update(
            lm=lm_label(self.lm) if self.lm is not None else None,
            sub_lm=lm_label(self.sub_lm) if self.sub_lm is not None else None,
            workspace=str(self.workspace),
            depth=self.depth,
            approve=approval.policy_label(config["approve"]),
        )
        if getattr(self, "subagents", None):
            config["subagents"] = sorted(self.subagents)
        return config

    # ------------------------------------------------------------ running
    def run(
        self,
        task: str,
        namespace: dict[str, Any] | None = None,
        context: str = "",
        *,
        run: Run | None = None,
        listeners: Iterable[Listener] = (),
        shell: Any = None,
        workspace: str | os.PathLike | None = None,
        thread: Any = None,
        agent_names: Iterable[str] = (),
        cwd: str | os.PathLike | None = None,
    ) -> Run:
        """Run the agent on ``task`` with ``namespace`` as its REPL; return the `Run`.

        A failure of the agent (the LM, the provider) ends the run with status
        ``failed`` and the error on ``run.error``; the namespace, the workspace and the
        trajectory so far are kept. Whatever else is raised, the run ends in a final
        status first: a KeyboardInterrupt ``interrupted``, any other BaseException (or an
        error while setting up) ``failed``; then it is re-raised. A namespace another
        run is using is refused at once with `NamespaceBusy`. ``thread`` continues a
        conversation (a `Thread`, or a thread or run id; `core.run.conversations`): the earlier turns
        head the ``context``. ``agent_names``: names earlier agent runs made in the namespace (the
        variables view lists them last, by name only). ``cwd``: the working directory the root's steps
        run in (an evaluation: the task's workspace); None: this process's, as in a notebook.
        """
        user_namespace = namespace
        namespace = {} if namespace is None else namespace
        run = run or Run(task, profile=self.profile, depth=self.depth)
        try:
            claim(namespace, run)
        except NamespaceBusy as exc:
            run.finish("failed", error=f"NamespaceBusy: {exc}")
            raise
        try:
            with bundled_price_list():  # offline, no price list fetched for the run's first LM call
                return self._run(run, task, user_namespace, namespace, context, listeners, shell, workspace, thread,
                                 agent_names, cwd)
        except KeyboardInterrupt:
            run.finish("interrupted", error="KeyboardInterrupt")
            raise
        except BaseException as exc:
            run.exception = exc
            run.finish("failed", error=reason(exc))
            raise
        finally:
            release(namespace, run)

    def _run(self, run: Run, task: str, user_namespace: dict[str, Any] | None, namespace: dict[str, Any],
             context: str, listeners: Iterable[Listener], shell: Any, workspace: Any, thread: Any = None,
             agent_names: Iterable[str] = (), cwd: Any = None) -> Run:
        lm = resolve_lm(self.lm, namespace=user_namespace)
        sub_lm = resolve_lm(self.sub_lm, namespace=user_namespace) if self.sub_lm is not None else None
        requests = layers_for(REQUEST)  # each request of the run's LM goes through these (retries among them)
        lm = with_retries(lm, run, self.retry_policy, requests)
        sub_lm = with_retries(sub_lm, run, self.retry_policy, requests)
        config = self.config() | {"lm": lm_label(lm)}
        run.config.update(config)
        for listener in listeners:
            run.subscribe(listener)

        root = Path(workspace) if workspace is not None else self.workspace  # evaluation: one per example
        root.mkdir(parents=True, exist_ok=True)
        run.config["workspace"] = str(root)
        session = Session(run, Workspace(root, on_write=run.record_file), agent=self,
                          cwd=None if cwd is None else str(Path(cwd).resolve()))
        context = threads.join(run, thread, namespace, context, root)  # a follow-up: the earlier turns first
        if not self.depth:  # what an export of the run needs to re-run it (records/rerun.py)
            run.config["cwd"] = session.cwd or _here()
            run.config["imports"] = imports_of(namespace)
        self.extensions.start_run(self, run, {"lm": lm, "sub_lm": sub_lm})  # e.g. the run record (records/)
        self.rlm.max_iters = self.max_iters
        self.rlm.max_llm_calls = self.max_llm_calls
        self.rlm.sub_lm = sub_lm
        run.prompt_hash = self.prompt_hash
        run.max_iters = self.max_iters
        context = self.extensions.extra_context(self, task, namespace, root, context)  # memories, earlier turns
        tool_names = {tool.__name__ for tool in self.builtin_tools() + self.extra_tools}
        summary = "" if self.depth else variables_view(namespace, task=task, exclude=tool_names | {"SUBMIT"},
                                                       agent_names=agent_names, budget=self.variables_chars)

        if run.parent is None and getattr(self, "approve", "never") != "never":
            ask = approval.stdin_asker() if self.ask == approval.STDIN else self.ask
            approval.attach(run, approval.Approver(self.approve, self.approve_rules, ask=ask, out=sys.stdout,
                                                   workspace=str(root), tool_rules=tool_rules(
                                                       self.builtin_tools() + self.extra_tools)))
        observe_steps(self.rlm)  # each step opens on the run active in the calling thread
        if run.parent is None:  # the tree's spend caps: one budget on the root run (core.policy.spend)
            run.spend = SpendBudget(getattr(self, "max_cost", None), getattr(self, "max_tokens", None),
                                    getattr(self, "max_time", None), run=run)
        if not self.stream:
            streaming.opt_out(run)  # and its sub-agents
        run.start()
        token = activate(session)
        try:
            # The run's own usage sink replaces any outer run's: a sub-agent's LM calls count once, for it.
            # DSPy keeps at most HISTORY_SIZE entries per LM and module; the sink trims the global history.
            with dspy.context(lm=lm, caller_modules=[UsageSink(run)], disable_history=False,
                              max_history_size=HISTORY_SIZE):
                try:
                    prediction = self.rlm(
                        task=task,
                        context=context or "",
                        notebook_variables=summary,
                        interpreter_factory=self._factory(session, namespace, shell, root),
                    )
                except (CapReached, StopRun, Stalled) as exc:  # a cap; the stop button or `q`; a stall (core.loop.ending)
                    session.cancelled.set()  # first: tools the agent left running in its threads stop early
                    return end_early(self.rlm, session, exc, OUTPUT_FIELD)
        except Exception as exc:  # the agent's failure (the LM, the provider, a bug): the run ends failed, kept
            session.cancelled.set()
            run.exception = exc
            run.finish("failed", error=reason(exc))  # one line naming the cause (failures.py)
            return run
        except BaseException:  # an interrupt: `run` ends it `interrupted` and re-raises
            session.cancelled.set()
            raise
        finally:
            deactivate(token)
        run.prediction = prediction
        if problem := made_up(prediction):  # RLM's extract fallback after nothing but errors
            session.cancelled.set()
            run.exception = RuntimeError(problem)
            run.finish("failed", error=problem)
            return run
        run.finish("finished", result=getattr(prediction, OUTPUT_FIELD, None), extracted=steps_ran_out(prediction))
        return run

    def _factory(self, session: Session, namespace: dict[str, Any], shell: Any, root: Path) -> Callable[[], Any]:
        """This run's interpreter factory. What this run has (where the workspace is, then the capabilities'
        text: the sub-agent types, the skills) goes on the session: each request shows it after the inputs
        (`render_inputs`), so the system message is the same for every run of the agent."""
        factory = self.interpreter_factory(session, namespace, shell)
        parts = [] if self.depth else [action_instructions.workspace_line(root, session.cwd)]
        parts.append(self.extensions.extra_instructions(self, root))
        session.surroundings = "\n\n".join(part for part in parts if part)
        return factory

    def forward(self, task: str, context: str = "") -> dspy.Prediction:
        """For DSPy optimisers and evaluation: run in a fresh namespace, return the result."""
        run = self.run(task, context=context)
        if run.status == "failed":
            raise run.exception  # type: ignore[misc]
        return dspy.Prediction(result=run.result, run=run)


def _here() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # the process's folder was deleted under it
        return None


DeepAgent.__doc__ = DeepAgent.__doc__.replace("{settings}", described(AGENT, indent="        "))
DeepAgent.__init__.__signature__ = with_settings(DeepAgent.__init__, AGENT)  # help() and editors list them
