"""The ``%%deepagent`` and ``%deepagent_config`` magics: a thin layer over `DeepAgent`.

The magic parses the cell, resolves the settings (cell flags, then the
configured defaults), runs the agent in the kernel's own namespace, shows the
run while it works and stores the result. Every mistake, and a failed run, is
one line (`inputs`): checked before anything runs or a setting sticks. The agent, its display and
DSPy are imported by the first cell that runs one, not when the extension loads.
"""

from __future__ import annotations

import os
import re

from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import observe

from ..core.loop.profiles import available_profiles
from ..core.run.run import Run
from ..interpreters.runtime_checks import deferred
from ..settings import agent_keywords, for_kernels
from . import agents, changes, followup, gateway_settings, setting_flags
from .inputs.approval_flags import check_approval, resolve_policy
from .inputs.connections import check_kernel_name, check_mcp_servers
from .inputs.flags import one_line, parse_flags, user_errors
from .inputs.folders import check_workspace, make_workspace
from .inputs.interpolation import expansion_line, interpolate_task
from .inputs.lm_option_flags import lm_option_values
from .inputs.out_name import check_out
from .setting_flags import CELL, CONFIG, SettingTraits, flags

if TYPE_CHECKING:
    from ..core.loop.agent import DeepAgent


_NONE = object()  # no _deepagent_run in the notebook yet


@magics_class
class DeepAgentMagics(SettingTraits):
    """Run deep agents in the notebook. Defaults are traitlets (one per setting of ``settings.py``):
    ``%config DeepAgentMagics.max_iters = 30``."""

    SETTINGS = setting_flags.NAMES

    @observe("gateway_token")
    def _token_typed(self, change: Any) -> None:  # however it was set (a flag, %config): a secret, out of In
        gateway_settings.forget(self.shell, change["new"])

    def __init__(self, shell=None, **kwargs: Any):
        super().__init__(shell=shell, **kwargs)
        self.runs: list[Run] = []
        self.agent_types: dict[str, Any] = {}  # the user's sub-agent types (agents.py: %%deepagent_agent)

    @property
    def last_run(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    # ------------------------------------------------------------------ %%deepagent
    @magic_arguments()
    @flags(CELL)
    @argument("--out", help="notebook variable to store the result in")
    @argument("--no-interpolate", dest="no_interpolate", action="store_true", help="keep {name} in the task as written")
    @argument("-c", "--continue", dest="continue_run", nargs="?", const=followup.LAST, metavar="RUN",
              help="continue the last conversation, or RUN's")
    @argument("--new", action="store_true", help="start a new conversation (when continuing is the default)")
    @argument("--run-id", dest="run_id", help="id for this run (the run API chooses it before the run starts)")
    @argument("--door", choices=("notebook", "api", "acp"), default="notebook",
              help="where the cell came from: a notebook, the run API, or deepagent acp's own kernel (what the agent "
                   "is told of its kernel)")
    @cell_magic
    def deepagent(self, line: str, cell: str) -> None:
        """Hand the cell's text to a deep agent whose REPL is this notebook."""
        from ..core.run.session import NamespaceBusy
        from ..display import show_result, show_run

        args = parse_flags(self.deepagent, line)
        namespace = self.shell.user_ns
        check_out(args.out)
        watcher = self.shell.magics_manager.registry.get("ChangesMagics")
        made = changes.agent_names(self.runs, namespace, getattr(watcher, "user_cells", None))  # not the user's
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
        cells = followup.recent_cells(self.shell, self.cells if args.cells is None else args.cells, cell,
                                      in_a_notebook=args.door == "notebook")

        run = Run(task, profile=agent.profile, run_id=args.run_id)
        if args.out:
            run.config["out"] = args.out  # a checkpoint saves it with the names the run made
        resumed = getattr(self, "resumed", None) or {}
        if resumed.get("checkpoint"):  # what this kernel resumed: an export of the run resumes it too
            run.config.update(resumed=resumed["checkpoint"], resumed_from=resumed.get("from"),
                              resumed_at=resumed.get("at"), resumed_names=list(resumed.get("restored") or []))
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
        if run.config.get("moved_cwd"):
            print(f"deepagent: the agent changed the working directory (to {run.config['moved_cwd']}); "
                  f"it is back at {os.getcwd()}")
        if run.reverted:
            names = ", ".join(sorted(run.reverted))
            print(f"deepagent: restored your variables {names}; the agent's values are in _deepagent_run.reverted")
        if run.config.get("deferred"):
            print(deferred.summary(run.config["deferred"]))
        changes.summarize(run)
        if run.result is not None and not getattr(view, "shows_result", False) and run.status != "stopped":
            show_result(run.result, run.extracted)

    def build_agent(self, args: Any) -> DeepAgent:
        """A `DeepAgent` from the cell's flags over the configured defaults; a bad value is a UsageError."""
        from ..core.loop.agent import DeepAgent
        from ..core.model.lm import make_lm, resolve_lm
        from ..tuning import programs

        settings = {name: getattr(args, name, None) for name in self.SETTINGS}
        for name, value in settings.items():
            if value is None:
                settings[name] = getattr(self, name)
        setting_flags.check(settings)  # set through %config too: checked here
        check_kernel_name(settings["kernel_name"])
        settings.update(setting_flags.checked_caps(settings))
        settings["workspace"] = check_workspace(settings["workspace"])
        namespace = self.shell.user_ns
        tools = agents.notebook_tools(settings["tools"], namespace)
        as_type = agents.root_settings(self, settings["profile"], namespace, settings["max_depth"], tools)
        with user_errors():
            lm = resolve_lm(settings["lm"], namespace=namespace, options=settings["lm_options"])
            agent = DeepAgent(**{
                **agent_keywords(settings),  # every setting DeepAgent takes, as the table says
                "lm": lm,
                "sub_lm": make_lm(settings["sub_lm"], namespace, settings["lm_options"]),
                "pool": self._subagent_pool(settings),
                "tools": as_type.get("tools", tools),
                "instructions": as_type.get("instructions"),  # --profile NAME of one of the user's types
                "subagents": agents.type_list(self, namespace),
                "extensions": agents.notebook_capabilities(settings["extensions"], namespace) or None,
                "approve": resolve_policy(settings["approve"], namespace),
                "door": getattr(args, "door", None) or "notebook",
            })
            return programs.apply(agent)  # the profile's tuned program, if one is active

    # ------------------------------------------------------------------ %deepagent_config
    @magic_arguments()
    @flags(CONFIG)
    @argument("--reset", action="store_true", help="restore every default")
    @line_magic
    def deepagent_config(self, line: str) -> None:
        """Show the deep agent defaults, or set them."""
        from ..core.model.lm import make_lm

        gateway_settings.forget_typed_flags(self.shell, line)  # first: a mistake below must not leave a token in In
        args = parse_flags(self.deepagent_config, line)
        updates = {name: getattr(args, name) for name in self.SETTINGS if getattr(args, name, None) is not None}
        updates = setting_flags.switches(updates)
        setting_flags.check(updates)
        check_kernel_name(updates.get("kernel_name"))
        updates.update(setting_flags.checked_caps(updates, unset_with_off=True))
        if "gateway_token_env" in updates:  # one source of the token at a time
            updates["gateway_token_env"] = gateway_settings.token_from_environment(updates["gateway_token_env"])
            updates.setdefault("gateway_token", None)
        elif "gateway_token" in updates:
            updates["gateway_token_env"] = None
        gateway_settings.check_gateway(updates, self.gateway_url, gateway_settings.token_in_effect(
            updates.get("gateway_token", self.gateway_token), updates.get("gateway_token_env", self.gateway_token_env)))
        if "workspace" in updates:
            updates["workspace"] = check_workspace(updates["workspace"])
        if "profile" in updates and updates["profile"] not in available_profiles() + list(self.agent_types):
            raise UsageError(f"unknown profile {updates['profile']!r}; choose one of: {', '.join(available_profiles())}")
        if "lm_options" in updates:
            updates["lm_options"] = lm_option_values(updates["lm_options"], {} if args.reset else self.lm_options)
        with user_errors():
            for name in ("lm", "sub_lm"):
                if name in updates:
                    make_lm(updates[name], self.shell.user_ns, updates.get("lm_options", self.lm_options))
        if "mcp_servers" in updates:
            updates["mcp_servers"] = check_mcp_servers(updates["mcp_servers"])
        if "skills_dir" in updates:
            updates["skills_dir"] = None if updates["skills_dir"] == "off" else check_workspace(updates["skills_dir"], "--skills-dir")
        if "tools" in updates:
            updates["tools"] = list(agents.tool_names(updates["tools"]))
            agents.notebook_tools(updates["tools"], self.shell.user_ns)  # each one checked now
        if "extensions" in updates:
            updates["extensions"] = list(agents.tool_names(updates["extensions"]))
            agents.notebook_capabilities(updates["extensions"], self.shell.user_ns)  # each one checked now
        check_approval(updates, self.shell.user_ns)
        if args.reset:  # only once every new value is known to be good: a mistake changes nothing
            for name in self.SETTINGS:
                setattr(self, name, self.traits()[name].default())
        for name, value in updates.items():
            setattr(self, name, value)
        print(self.describe_config())

    def _subagent_pool(self, settings: dict[str, Any]) -> Any:
        """The process-wide kernel pool at the configured size, warming in the background."""
        from ..interpreters.pool import default_pool
        from ..interpreters.pool.limits import ResourceLimits
        from ..interpreters.pool.sandbox import SandboxPolicy, refusal

        gateway = gateway_settings.make_gateway(gateway_settings.gateway_url(settings["gateway_url"]),
                                                self.gateway_token_in_effect())
        kernels = for_kernels(settings, on_gateway=gateway is not None)  # as the sub-agents' kernels take them
        sandbox = SandboxPolicy(network=kernels["subagent_network"], required=kernels["require_sandbox"],
                                limits=ResourceLimits.from_settings(kernels))
        reason = sandbox.status() if sandbox.required and settings["max_depth"] > 0 else None
        if reason is not None:
            raise UsageError(refusal(reason))
        pool = default_pool(kernels["pool_size"], kernels["kernel_name"] or None, gateway=gateway, sandbox=sandbox)
        if settings["max_depth"] > 0:
            pool.warm(str(settings["workspace"]))  # a sandboxed kernel can write only the workspace it starts for
        return pool

    def gateway_token_in_effect(self) -> str | None:
        return gateway_settings.token_in_effect(self.gateway_token, self.gateway_token_env)

    def describe_config(self) -> str:
        rows = []
        for name in self.SETTINGS:
            value = getattr(self, name)
            if name == "lm" and value is None:
                value = self._lm_source()
            rows.append(f"  {name:<14} {gateway_settings.shown(name, value)}")
        return "deepagent settings (%config DeepAgentMagics.<name> = ...):\n" + "\n".join(rows)

    def _lm_source(self) -> str:
        from ..core.model.lm import NoLMError, lm_label, resolve_lm

        try:
            return f"{lm_label(resolve_lm(None, namespace=self.shell.user_ns))} (from dspy.configure or DEEPAGENT_LM)"
        except NoLMError:
            return "(none: set one with --lm)"
