"""The ``%%deepagent`` and ``%deepagent_config`` magics: a thin layer over `DeepAgent`.

The magic parses the cell, resolves the settings (cell flags, then the
configured defaults), runs the agent in the kernel's own namespace, shows the
run while it works and stores the result. Every mistake, and a failed run, is
one line (`arguments`): checked before anything runs or a setting sticks.
"""

from __future__ import annotations

import re

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import Markdown, display
from traitlets import Bool, Enum, Float, Int, List, Unicode

from ..core.loop.agent import DeepAgent
from ..core.model.compaction import DEFAULT_COMPACT_AT
from ..core.model.lm import NoLMError, lm_label, make_lm, resolve_lm
from ..core.loop.profiles import UnknownProfile, available_profiles
from ..core.run.run import Run
from ..core.run.session import NamespaceBusy
from ..display import show_run
from ..tuning import programs
from . import agents, control, followup, gateway_settings, spend_caps
from .arguments import (
    check_out,
    check_mcp_servers,
    check_positive,
    check_seconds,
    check_subagent_settings,
    check_workspace,
    expansion_line,
    interpolate_task,
    make_workspace,
    one_line,
    parse_flags,
)


_NONE = object()  # no _deepagent_run in the notebook yet


@magics_class
class DeepAgentMagics(Magics):
    """Run deep agents in the notebook. Defaults are traitlets: ``%config DeepAgentMagics.max_iters = 30``."""

    lm = Unicode(None, allow_none=True, help="Default LM: a model id (openai/gpt-4o-mini) or a notebook variable holding an LM.").tag(config=True)
    sub_lm = Unicode(None, allow_none=True, help="Default LM behind llm_query (defaults to the main LM).").tag(config=True)
    workspace = Unicode(".", help="Directory the agent's file tools are rooted at.").tag(config=True)
    max_iters = Int(20, help="Most code steps per run.").tag(config=True)
    max_llm_calls = Int(50, help="Most llm_query calls per run.").tag(config=True)
    profile = Unicode("default", help="Prompt profile (a file in deepagent_magics/prompts).").tag(config=True)
    timeout = Float(120.0, help="Seconds one code block may run before it is stopped.").tag(config=True)
    quiet = Bool(False, help="Show only the result, not the live progress.").tag(config=True)
    display_mode = Enum(("auto", "widgets", "text"), "auto", help="Live display: widgets in a notebook, text in a terminal (auto), or forced.").tag(config=True)

    SETTINGS = ("lm", "sub_lm", "workspace", "max_iters", "max_llm_calls", "profile", "timeout", "quiet", "display_mode")

    # Sub-agents (tools/delegation): limits for the whole tree of a run, and the kernel pool.
    max_depth = Int(2, help="How deep sub-agents may nest (0: no delegation).").tag(config=True)
    max_subagents = Int(16, help="Most sub-agents one run (its whole tree) may start.").tag(config=True)
    subagent_max_iters = Int(10, help="Most code steps per sub-agent.").tag(config=True)
    subagent_timeout = Float(600.0, help="Wall-clock seconds a sub-agent may run before its kernel is stopped.").tag(config=True)
    max_parallel = Int(4, help="Most sub-agents one delegate_batched runs at the same time.").tag(config=True)
    pool_size = Int(2, help="Sub-agent kernels kept started ahead of need (0: start each on demand).").tag(config=True)
    kernel_name = Unicode(None, allow_none=True, help="Kernel spec for sub-agents (default: this Python).").tag(config=True)
    SETTINGS += ("max_depth", "max_subagents", "subagent_max_iters", "subagent_timeout", "max_parallel", "pool_size", "kernel_name")
    gateway_url = Unicode(None, allow_none=True, help="Jupyter gateway for sub-agent kernels (default: JUPYTER_GATEWAY_URL, else this machine).").tag(config=True)
    gateway_token = Unicode(None, allow_none=True, help="The gateway's auth token (default: JUPYTER_GATEWAY_AUTH_TOKEN).").tag(config=True)
    SETTINGS += ("gateway_url", "gateway_token")

    # Follow-up cells (followup.py): continue the last conversation by default; the user's cells shown.
    continue_default = Bool(False, help="A plain cell continues the last conversation (--new starts one).").tag(config=True)
    cells = Int(5, help="How many of the user's recent input cells the agent sees (0: none).").tag(config=True)
    compact_at = Float(DEFAULT_COMPACT_AT, help="Compact the REPL history in the prompt past this: tokens, or a fraction (<= 1) of the context window; 0: never.").tag(config=True)
    SETTINGS += ("continue_default", "cells", "compact_at")

    mcp_servers = List(Unicode(), help="MCP servers whose tools agents get: command lines (stdio) or http(s) URLs.").tag(config=True)
    SETTINGS += ("mcp_servers",)
    tools = List(Unicode(), help="Notebook functions offered to every agent as tools (names; agents.py).").tag(config=True)
    skills_dir = Unicode(None, allow_none=True, help="User-wide skills folder (default: DEEPAGENT_SKILLS_DIR, else ~/.deepagent/skills).").tag(config=True)
    SETTINGS += ("tools", "skills_dir")

    # Spend caps (core/policy/spend.py): the whole tree of a run, root and sub-agents together; None: no cap.
    max_cost = Float(None, allow_none=True, help="Most USD one run (its whole tree) may spend on LM calls.").tag(config=True)
    max_tokens = Int(None, allow_none=True, help="Most LM tokens one run (its whole tree) may spend.").tag(config=True)
    max_time = Float(None, allow_none=True, help="Most wall-clock seconds one run may take (waiting for approval not counted).").tag(config=True)
    SETTINGS += spend_caps.CAPS

    # Approval (core/policy/approval.py, control.py): when a code block needs the user's yes first.
    approve = Unicode("never", help="Approval policy: never, risky, always, or a notebook function (proposal) -> decision.").tag(config=True)
    approve_rules = Unicode("", help="Risk rules for --approve risky: '' for all, '-network,-subagents' to switch some off, 'none,subagents' for only those.").tag(config=True)
    undo_limit = Float(10.0, help="Megabytes: the biggest of your objects a run copies before changing it in place, so %deepagent_undo can restore it (0: none).").tag(config=True)
    SETTINGS += ("approve", "approve_rules", "undo_limit")

    stream = Bool(True, help="Show each step's reasoning and code while the model writes them (docs/streaming.md).").tag(config=True)
    SETTINGS += ("stream",)

    def __init__(self, shell=None, **kwargs: Any):
        super().__init__(shell=shell, **kwargs)
        self.runs: list[Run] = []
        self.agent_types: dict[str, Any] = {}  # the user's sub-agent types (agents.py: %%deepagent_agent)

    @property
    def last_run(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    # ------------------------------------------------------------------ %%deepagent
    @magic_arguments()
    @argument("--lm", help="LM for this cell: a model id or a notebook variable holding an LM")
    @argument("--sub-lm", dest="sub_lm", help="LM behind llm_query for this cell")
    @argument("--max-iters", dest="max_iters", type=int, help="most code steps")
    @argument("--max-llm-calls", dest="max_llm_calls", type=int, help="most llm_query calls")
    @argument("--workspace", help="directory for the file tools")
    @argument("--out", help="notebook variable to store the result in")
    @argument("--profile", help="prompt profile: " + ", ".join(available_profiles()))
    @argument("--timeout", type=float, help="seconds one code block may run")
    @argument("--no-interpolate", dest="no_interpolate", action="store_true", help="keep {name} in the task as written")
    @argument("--quiet", action="store_true", help="show only the result")
    @argument("--display", dest="display_mode", choices=["auto", "widgets", "text"], help="live display for this cell")
    @argument("--max-depth", dest="max_depth", type=int, help="how deep sub-agents may nest (0: no delegation)")
    @argument("--max-subagents", dest="max_subagents", type=int, help="most sub-agents this run may start")
    @argument("--subagent-max-iters", dest="subagent_max_iters", type=int, help="most code steps per sub-agent")
    @argument("--subagent-timeout", dest="subagent_timeout", type=float, help="seconds a sub-agent may run")
    @argument("--max-parallel", dest="max_parallel", type=int, help="most sub-agents running at once")
    @argument("-c", "--continue", dest="continue_run", nargs="?", const=followup.LAST, metavar="RUN",
              help="continue the last conversation, or RUN's")
    @argument("--new", action="store_true", help="start a new conversation (when continuing is the default)")
    @argument("--cells", type=int, help="how many of your recent cells the agent sees (0: none)")
    @argument("--compact-at", dest="compact_at", type=followup.compact_at, help="tokens, or a fraction of the context window; off: never")
    @argument("--run-id", dest="run_id", help="id for this run (the run API chooses it before the run starts)")
    @argument("--tools", help="notebook functions to offer as tools: f,g ('off': none)")
    @argument("--max-cost", dest="max_cost", metavar="USD", help="most USD the run's whole tree may spend")
    @argument("--max-tokens", dest="max_tokens", metavar="N", help="most LM tokens the run's whole tree may spend")
    @argument("--max-time", dest="max_time", metavar="SECONDS", help="most seconds the run may take")
    @argument("--approve", help="approval policy: never, risky, always, or a notebook function (proposal) -> decision")
    @argument("--approve-rules", dest="approve_rules", help="risk rules for --approve risky: -name off, none,name only those")
    @argument("--no-stream", dest="stream", action="store_const", const=False, help="do not show steps while they are written")
    @cell_magic
    def deepagent(self, line: str, cell: str) -> None:
        """Hand the cell's text to a deep agent whose REPL is this notebook."""
        args = parse_flags(self.deepagent, line)
        namespace = self.shell.user_ns
        check_out(args.out)
        made = control.agent_names(self.runs, namespace)  # names earlier runs made (not the user's)
        task, expanded, kept = (cell, [], []) if args.no_interpolate else interpolate_task(cell, namespace, made)
        if not task.strip():
            raise UsageError("The cell is empty: write the task for the agent in the cell body")
        if args.run_id is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}", args.run_id):
            raise UsageError(f"--run-id {args.run_id!r}: use letters, digits, '_', '.', '-' (it names the record's file)")
        agent = self.build_agent(args)
        make_workspace(str(agent.workspace))
        if said := expansion_line(namespace, expanded, kept):
            print(said)
        quiet = args.quiet or self.quiet
        thread = followup.choose_thread(self, args, str(agent.workspace))
        cells = followup.recent_cells(self.shell, self.cells if args.cells is None else args.cells, cell)

        run = Run(task, profile=agent.profile, run_id=args.run_id)
        previous = namespace.get("_deepagent_run", _NONE)
        self.runs.append(run)
        namespace["_deepagent_run"] = run
        view = show_run(run, shell=self.shell, quiet=quiet, mode=args.display_mode or self.display_mode)
        try:
            agent.run(task, namespace, cells, run=run, shell=self.shell, thread=thread, agent_names=made)
        except KeyboardInterrupt:
            print(f"deepagent: interrupted after {len(run.steps)} steps; the run is kept in _deepagent_run")
            raise
        except NamespaceBusy as exc:  # another run is using this notebook's namespace: this one never ran
            self.runs.remove(run)
            if namespace.get("_deepagent_run") is run:  # the running one stays the notebook's
                if previous is _NONE:
                    del namespace["_deepagent_run"]
                else:
                    namespace["_deepagent_run"] = previous
            raise UsageError(str(exc)) from None
        finally:
            view.close()
        if run.status == "failed":  # one line, scrubbed: a provider's multi-line "To fix" text stays in run.error
            raise UsageError(f"the agent failed: {one_line(run.error) or 'no reason given'} "
                             f"(run {run.id} kept in _deepagent_run; %deepagent_trace shows it)")
        if run.status in ("stopped", "budget_exhausted") or run.config.get("spend", {}).get("reached"):
            reason = run.error or run.config.get("spend", {}).get("reached") or "stopped"
            print(f"deepagent: {run.status}: {one_line(reason)} (everything so far is kept; run {run.id} "
                  "in _deepagent_run)")
        if args.out:
            namespace[args.out] = run.result
        if run.reverted:
            names = ", ".join(sorted(run.reverted))
            print(f"deepagent: restored your variables {names}; the agent's values are in _deepagent_run.reverted")
        control.summarize(run)
        if run.result is not None and not getattr(view, "shows_result", False) and run.status != "stopped":
            display(Markdown(str(run.result)))

    def build_agent(self, args: Any) -> DeepAgent:
        """A `DeepAgent` from the cell's flags over the configured defaults; a bad value is a UsageError."""
        settings = {name: getattr(args, name, None) for name in self.SETTINGS}
        for name, value in settings.items():
            if value is None:
                settings[name] = getattr(self, name)
        check_positive("--max-iters", settings["max_iters"])
        check_positive("--max-llm-calls", settings["max_llm_calls"])
        check_seconds("--timeout", settings["timeout"])
        if settings["cells"] < 0:
            raise UsageError(f"--cells must be 0 or more, not {settings['cells']}")
        check_subagent_settings(settings)
        settings.update(spend_caps.checked(settings))
        settings["workspace"] = check_workspace(settings["workspace"])
        namespace = self.shell.user_ns
        tools = agents.notebook_tools(settings["tools"], namespace)
        as_type = agents.root_settings(self, settings["profile"], namespace, settings["max_depth"], tools)
        try:
            lm = resolve_lm(settings["lm"], namespace=namespace)
            sub_lm = make_lm(settings["sub_lm"], namespace)
            agent = DeepAgent(
                lm=lm,
                sub_lm=sub_lm,
                workspace=settings["workspace"],
                max_iters=settings["max_iters"],
                max_llm_calls=settings["max_llm_calls"],
                profile=settings["profile"],
                timeout=settings["timeout"],
                max_depth=settings["max_depth"],
                max_subagents=settings["max_subagents"],
                subagent_max_iters=settings["subagent_max_iters"],
                subagent_timeout=settings["subagent_timeout"],
                max_parallel=settings["max_parallel"],
                pool=self._subagent_pool(settings),
                mcp_servers=settings["mcp_servers"],
                tools=as_type.get("tools", tools),
                instructions=as_type.get("instructions"),  # --profile NAME of one of the user's types
                subagents=agents.type_list(self, namespace),
                **{name: settings[name] for name in spend_caps.CAPS},
                approve=control.resolve_policy(settings["approve"], namespace),
                approve_rules=settings["approve_rules"] or None,
                undo_limit=int(settings["undo_limit"] * 1_000_000),
            )
            agent = programs.apply(agent)  # the profile's tuned program, if one is active
            agent.compact_at = settings["compact_at"]
            agent.skills_dir = settings["skills_dir"]
            agent.stream = settings["stream"]
            return agent
        except (NoLMError, UnknownProfile, ValueError, TypeError, OSError) as exc:
            raise UsageError(one_line(exc) or type(exc).__name__) from None

    # ------------------------------------------------------------------ %deepagent_config
    @magic_arguments()
    @argument("--lm", help="default LM (model id or notebook variable)")
    @argument("--sub-lm", dest="sub_lm", help="default LM behind llm_query")
    @argument("--workspace", help="default workspace directory")
    @argument("--max-iters", dest="max_iters", type=int)
    @argument("--max-llm-calls", dest="max_llm_calls", type=int)
    @argument("--profile")
    @argument("--timeout", type=float)
    @argument("--quiet", choices=["on", "off"])
    @argument("--display", dest="display_mode", choices=["auto", "widgets", "text"])
    @argument("--max-depth", dest="max_depth", type=int)
    @argument("--max-subagents", dest="max_subagents", type=int)
    @argument("--subagent-max-iters", dest="subagent_max_iters", type=int)
    @argument("--subagent-timeout", dest="subagent_timeout", type=float)
    @argument("--max-parallel", dest="max_parallel", type=int)
    @argument("--pool-size", dest="pool_size", type=int, help="sub-agent kernels kept ready")
    @argument("--kernel-name", dest="kernel_name", help="kernel spec for sub-agents")
    @argument("--gateway-url", dest="gateway_url", help="Jupyter gateway to start sub-agent kernels on ('off': this machine)")
    @argument("--gateway-token", dest="gateway_token", help="the gateway's auth token")
    @argument("--continue", dest="continue_default", choices=["on", "off"], help="plain cells continue the conversation")
    @argument("--cells", type=int, help="how many recent cells the agent sees")
    @argument("--compact-at", dest="compact_at", type=followup.compact_at, help="tokens or a fraction of the window; off")
    @argument("--mcp", dest="mcp_servers", action="append", help="MCP server (command line or URL); repeat for more; 'off' for none")
    @argument("--tools", help="notebook functions every agent gets as tools: f,g ('off': none)")
    @argument("--skills-dir", dest="skills_dir", help="user-wide skills folder ('off': the default)")
    @argument("--max-cost", dest="max_cost", metavar="USD", help="spend cap in USD for each run's tree ('off': none)")
    @argument("--max-tokens", dest="max_tokens", metavar="N", help="token cap for each run's tree ('off': none)")
    @argument("--max-time", dest="max_time", metavar="SECONDS", help="time cap in seconds for each run ('off': none)")
    @argument("--approve", help="approval policy: never, risky, always, or a notebook function")
    @argument("--approve-rules", dest="approve_rules", help="risk rules for --approve risky ('' for all)")
    @argument("--undo-limit", dest="undo_limit", type=float, help="MB: biggest object copied so undo can restore it")
    @argument("--stream", choices=["on", "off"], help="show steps while the model writes them")
    @argument("--reset", action="store_true", help="restore every default")
    @line_magic
    def deepagent_config(self, line: str) -> None:
        """Show the deep agent defaults, or set them."""
        args = parse_flags(self.deepagent_config, line)
        updates = {name: getattr(args, name) for name in self.SETTINGS if getattr(args, name, None) is not None}
        for name in ("quiet", "continue_default", "stream"):
            if name in updates:
                updates[name] = updates[name] == "on"
        if updates.get("cells", 0) < 0:
            raise UsageError(f"--cells must be 0 or more, not {updates['cells']}")
        for name in ("max_iters", "max_llm_calls"):
            check_positive(f"--{name.replace('_', '-')}", updates.get(name))
        check_seconds("--timeout", updates.get("timeout"))
        check_subagent_settings(updates)
        updates.update(spend_caps.checked(updates, unset_with_off=True))
        gateway_settings.check_gateway(updates, self.gateway_url, self.gateway_token)
        if "workspace" in updates:
            updates["workspace"] = check_workspace(updates["workspace"])
        if "profile" in updates and updates["profile"] not in available_profiles() + list(self.agent_types):
            raise UsageError(f"unknown profile {updates['profile']!r}; choose one of: {', '.join(available_profiles())}")
        for name in ("lm", "sub_lm"):
            if name in updates:
                try:
                    make_lm(updates[name], self.shell.user_ns)
                except (ValueError, TypeError) as exc:
                    raise UsageError(one_line(exc)) from None
        if "mcp_servers" in updates:
            updates["mcp_servers"] = check_mcp_servers(updates["mcp_servers"])
        if "skills_dir" in updates:
            updates["skills_dir"] = None if updates["skills_dir"] == "off" else check_workspace(updates["skills_dir"], "--skills-dir")
        if "tools" in updates:
            updates["tools"] = list(agents.tool_names(updates["tools"]))
            agents.notebook_tools(updates["tools"], self.shell.user_ns)  # each one checked now
        control.check_approval(updates, self.shell.user_ns)
        if args.reset:  # only once every new value is known to be good: a mistake changes nothing
            for name in self.SETTINGS:
                setattr(self, name, self.traits()[name].default())
        for name, value in updates.items():
            setattr(self, name, value)
        print(self.describe_config())

    def _subagent_pool(self, settings: dict[str, Any]) -> Any:
        """The process-wide kernel pool at the configured size, warming in the background."""
        from ..interpreters.pool import default_pool

        gateway = gateway_settings.make_gateway(gateway_settings.gateway_url(settings["gateway_url"]),
                                                settings["gateway_token"])
        pool = default_pool(settings["pool_size"], settings["kernel_name"] or None, gateway=gateway)
        if settings["max_depth"] > 0:
            pool.warm()
        return pool

    def describe_config(self) -> str:
        rows = []
        for name in self.SETTINGS:
            value = getattr(self, name)
            if name == "lm" and value is None:
                value = self._lm_source()
            rows.append(f"  {name:<14} {gateway_settings.shown(name, value)}")
        return "deepagent settings (%config DeepAgentMagics.<name> = ...):\n" + "\n".join(rows)

    def _lm_source(self) -> str:
        try:
            return f"{lm_label(resolve_lm(None, namespace=self.shell.user_ns))} (from dspy.configure or DEEPAGENT_LM)"
        except NoLMError:
            return "(none: set one with --lm)"
