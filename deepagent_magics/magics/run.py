"""The ``%%deepagent`` and ``%deepagent_config`` magics: a thin layer over `DeepAgent`.

The magic parses the cell, resolves the settings (cell flags, then the
configured defaults), runs the agent in the kernel's own namespace, shows the
run while it works and stores the result.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import Markdown, display
from traitlets import Bool, Enum, Float, Int, Unicode

from ..core.agent import DeepAgent
from ..core.lm import NoLMError, lm_label, make_lm, resolve_lm
from ..core.profiles import UnknownProfile, available_profiles
from ..core.run import Run
from ..core.session import NamespaceBusy
from ..display import show_run
from ..tuning import programs
from .arguments import AgentFailed, check_positive, check_subagent_settings, interpolate


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

    def __init__(self, shell=None, **kwargs: Any):
        super().__init__(shell=shell, **kwargs)
        self.runs: list[Run] = []

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
    @cell_magic
    def deepagent(self, line: str, cell: str) -> None:
        """Hand the cell's text to a deep agent whose REPL is this notebook."""
        args = parse_argstring(self.deepagent, line)
        namespace = self.shell.user_ns
        task = cell if args.no_interpolate else interpolate(cell, namespace)
        if not task.strip():
            raise UsageError("The cell is empty: write the task for the agent in the cell body")
        if args.out is not None and not args.out.isidentifier():
            raise UsageError(f"--out {args.out!r} is not a valid variable name")
        agent = self.build_agent(args)
        quiet = args.quiet or self.quiet

        run = Run(task, profile=agent.profile)
        self.runs.append(run)
        namespace["_deepagent_run"] = run
        view = show_run(run, shell=self.shell, quiet=quiet, mode=args.display_mode or self.display_mode)
        try:
            agent.run(task, namespace, run=run, shell=self.shell)
        except KeyboardInterrupt:
            print(f"deepagent: interrupted after {len(run.steps)} steps; the run is kept in _deepagent_run")
            raise
        except NamespaceBusy as exc:  # another run is using this notebook's namespace
            raise UsageError(str(exc)) from None
        finally:
            view.close()
        if run.status == "failed":
            raise AgentFailed(f"the agent failed: {run.error} (run {run.id} kept in _deepagent_run)")
        if args.out:
            namespace[args.out] = run.result
        if run.reverted:
            names = ", ".join(sorted(run.reverted))
            print(f"deepagent: restored your variables {names}; the agent's values are in _deepagent_run.reverted")
        if not getattr(view, "shows_result", False):  # the dashboard shows it in its Result panel
            display(Markdown(str(run.result)))

    def build_agent(self, args: Any) -> DeepAgent:
        """A `DeepAgent` from the cell's flags over the configured defaults; a bad value is a UsageError."""
        settings = {name: getattr(args, name, None) for name in self.SETTINGS}
        for name, value in settings.items():
            if value is None:
                settings[name] = getattr(self, name)
        check_positive("--max-iters", settings["max_iters"])
        check_positive("--max-llm-calls", settings["max_llm_calls"])
        check_positive("--timeout", settings["timeout"])
        check_subagent_settings(settings)
        namespace = self.shell.user_ns
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
            )
            return programs.apply(agent)  # the profile's tuned program, if one is active
        except (NoLMError, UnknownProfile, ValueError, TypeError) as exc:
            raise UsageError(str(exc).strip().splitlines()[0]) from None

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
    @argument("--reset", action="store_true", help="restore every default")
    @line_magic
    def deepagent_config(self, line: str) -> None:
        """Show the deep agent defaults, or set them."""
        args = parse_argstring(self.deepagent_config, line)
        if args.reset:
            for name in self.SETTINGS:
                setattr(self, name, self.traits()[name].default())
        updates = {name: getattr(args, name) for name in self.SETTINGS if getattr(args, name, None) is not None}
        if "quiet" in updates:
            updates["quiet"] = updates["quiet"] == "on"
        for name in ("max_iters", "max_llm_calls", "timeout"):
            check_positive(f"--{name.replace('_', '-')}", updates.get(name))
        check_subagent_settings(updates)
        if "profile" in updates and updates["profile"] not in available_profiles():
            raise UsageError(f"unknown profile {updates['profile']!r}; choose one of: {', '.join(available_profiles())}")
        for name in ("lm", "sub_lm"):
            if name in updates:
                try:
                    make_lm(updates[name], self.shell.user_ns)
                except (ValueError, TypeError) as exc:
                    raise UsageError(str(exc)) from None
        for name, value in updates.items():
            setattr(self, name, value)
        print(self.describe_config())

    def _subagent_pool(self, settings: dict[str, Any]) -> Any:
        """The process-wide kernel pool at the configured size, warming in the background."""
        from ..interpreters.pool import default_pool

        pool = default_pool(settings["pool_size"], settings["kernel_name"] or None)
        if settings["max_depth"] > 0:
            pool.warm()
        return pool

    def describe_config(self) -> str:
        rows = []
        for name in self.SETTINGS:
            value = getattr(self, name)
            if name == "lm" and value is None:
                value = self._lm_source()
            rows.append(f"  {name:<14} {value}")
        return "deepagent settings (%config DeepAgentMagics.<name> = ...):\n" + "\n".join(rows)

    def _lm_source(self) -> str:
        try:
            return f"{lm_label(resolve_lm(None, namespace=self.shell.user_ns))} (from dspy.configure or DEEPAGENT_LM)"
        except NoLMError:
            return "(none: set one with --lm)"
