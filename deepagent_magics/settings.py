"""Every setting of a run, declared once: its name, type, default, bounds, help, and the front doors it applies at.

Each front door builds its own form from `SETTINGS`: the traitlets, the ``%%deepagent`` flags and the
``%deepagent_config`` flags of the magics (``magics/setting_flags.py``), the ``deepagent run`` flags
(``cli/parser.py``), the run API's request fields (``server/launch.py``), and `DeepAgent`'s keywords
and run record (``core/loop/agent.py``). A new setting is one entry here; the code that uses its
value reads it by name (``agent.max_subagents``). What a door checks beyond type and bounds (a
workspace that can be a folder, a model id, a kernel spec that exists) stays at that door.

Plain data and plain checks: this module imports nothing of the package and no front door (no
IPython, traitlets or argparse), so every room may import it. A bad value is an `InvalidValue`
(``errors.py``), which each door shows as its one-line mistake.
"""

from __future__ import annotations

import inspect
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from .errors import InvalidValue

# The front doors, and where a setting applies.
CELL = "cell"  # a %%deepagent flag, for one cell
CONFIG = "config"  # a %deepagent_config flag and a DeepAgentMagics traitlet: the notebook's default
CLI = "cli"  # a `deepagent run` flag
SERVER = "server"  # a field of a run API request (POST /deepagent/api/runs), passed on as the cell's flag
ACP = "acp"  # a `deepagent acp` flag, passed on as the flag of each prompt's cell (through the run API in a notebook)
AGENT = "agent"  # a keyword of DeepAgent, and an attribute of the agent the code that uses it reads
DOORS = (CELL, CONFIG, CLI, SERVER, ACP, AGENT)
EVERYWHERE = frozenset(DOORS)
MAGICS = frozenset({CELL, CONFIG})

# How a sub-agent takes a setting from its parent (`Setting.subagent`; `inherited` reads it for delegation).
SAME = "same"  # its parent's value
FROM = "from "  # FROM + another setting's name: its parent's value of that one (max_iters from subagent_max_iters)
TREE = "tree"  # held once for the whole tree (the root run's caps and approver, the tree's kernel pool, the tools and
#                capabilities the door made): no agent's to copy
ROOT = "root"  # the root agent's or the door's alone (undo, the display, the notebook's cells): a sub-agent has none
OWN = "own"  # set for each sub-agent where it starts (its profile by delegate(agent=...), its workspace the run's)

# The capabilities that own settings (their `Capability.name`); the rest are the core's.
DELEGATION, SKILLS, MCP, TRACING = "delegation", "skills", "mcp", "tracing"

MAX_SECONDS = 7 * 24 * 3600.0  # a week: a longer time limit is a mistake, and timers overflow far beyond it
MAX_POOL = 64  # ready sub-agent kernels: each is a started process (~100 MB); more kept idle is a typo
MAX_UNDO_MB = 100_000.0
MAX_MIB = 1 << 24  # 16 TiB: a larger memory or disk limit is a typo
MAX_PROCESSES = 1 << 22  # the kernel's own ceiling on process ids
MAX_OPEN_FILES = 1 << 20  # Linux's default ceiling on a process's open files
LOCAL_KERNELS = frozenset({CELL, CONFIG, CLI, SERVER, ACP})  # a pool setting: where the sandbox's are


def compact_at(text: Any) -> float:
    """``--compact-at``: ``off`` (0), a fraction of the context window (0 < x <= 1), or tokens (> 1)."""
    value = str(text).strip().lower()
    if value in ("off", "none", "0"):
        return 0.0
    try:
        number = float(value.replace("_", "").replace(",", ""))
    except ValueError:
        raise InvalidValue(f"{text!r} is not tokens, a fraction of the context window, or off") from None
    if not number > 0 or number != number or number == float("inf"):
        raise InvalidValue(f"{text!r} must be more than 0 (or off)")
    return number


@dataclass(frozen=True)
class Setting:
    """One setting. ``at`` holds what one door says differently (``{CLI: {"default": 0}}``)."""

    name: str  # the Python name: DeepAgent's keyword and attribute, the traitlet, the request field
    kind: type  # int, float, str, bool, list (of str) or dict; a default of None means None is a value too
    default: Any
    help: str  # what it means, in one line: every door shows it
    doors: frozenset[str]
    flag: str = ""  # default: --name-with-dashes
    minimum: float | None = None
    maximum: float | None = None
    above: bool = False  # the value must be more than `minimum`, not equal to it
    unit: str = ""  # how a bounded number reads in a message: "seconds", "megabytes"
    choices: tuple[str, ...] = ()
    read: Callable[[str], Any] | None = None  # a flag's text -> the value (default: `kind`); InvalidValue if bad
    repeat: bool = False  # a list given by repeating the flag (--mcp A --mcp B), not as one "a,b" text
    metavar: str | None = None
    off: str = ""  # what %deepagent_config --flag off means, where only that door takes 'off'
    recorded: bool = False  # in the run record's config (`DeepAgent.config()`)
    owner: str = ""  # the capability that reads it (its name: core/loop/capability.py); "": the core
    subagent: str = ""  # how a sub-agent takes it from its parent: SAME, FROM + name, TREE, ROOT or OWN (above)
    on_gateway: bool | None = None  # a sub-agent kernel's setting: whether kernels on a gateway take it too (False:
    #                                 this machine's sandbox only; a gateway's kernels run in its containers)
    env: str = ""  # the environment variable that gives it when no door does (JUPYTER_GATEWAY_URL)
    agent_scale: int = 1  # DeepAgent takes value * agent_scale (undo_limit: megabytes at the doors, bytes inside)
    at: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.flag:
            object.__setattr__(self, "flag", "--" + self.name.replace("_", "-"))

    def where(self, door: str, key: str) -> Any:
        """This setting's ``key`` (default, help, choices) as ``door`` has it."""
        return self.at.get(door, {}).get(key, getattr(self, key))

    @property
    def bounded(self) -> bool:
        return self.minimum is not None or self.maximum is not None

    def bound(self) -> str:
        """What a value must be, as a message says it: "positive", "0 or more", "a number of seconds ..."."""
        low, high = self.minimum, self.maximum
        if high is None:
            if low == 0:
                return "positive" if self.above else "0 or more"
            return f"{'above' if self.above else 'at least'} {low:g}"
        what = f"a number of {self.unit}" if self.unit else ("a whole number" if self.kind is int else "a number")
        return f"{what} above {low:g} and at most {high:g}" if self.above else f"{what} from {low:g} to {high:g}"

    def check(self, value: Any, label: str | None = None) -> Any:
        """``value`` if it is within the bounds (None passes: not set); else an `InvalidValue` naming ``label``
        (default: the flag; "": nothing)."""
        if value is None or not self.bounded:
            return value
        number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        ok = number is not None and (self.kind is int or math.isfinite(number))
        ok = ok and (self.minimum is None or (number > self.minimum if self.above else number >= self.minimum))
        ok = ok and (self.maximum is None or number <= self.maximum)
        if not ok:
            label = self.flag if label is None else label
            raise InvalidValue(f"{label + ' ' if label else ''}must be {self.bound()}, got {value}")
        return value

    def parse(self, text: str) -> Any:
        """A flag's text as this setting's value (bounds not checked: `check` does that)."""
        if self.read is not None:
            return self.read(text)
        if self.kind in (int, float):
            try:
                return self.kind(text)
            except ValueError:
                raise InvalidValue(f"{text!r} is not a {'whole number' if self.kind is int else 'number'}") from None
        return text

    def or_env(self, value: Any) -> Any:
        """``value``, else what `env` holds (None when neither gives one)."""
        return value if value else (os.environ.get(self.env) or None if self.env else value)

    def to_agent(self, value: Any) -> Any:
        """The value as `DeepAgent` takes it."""
        return value if value is None or self.agent_scale == 1 else int(value * self.agent_scale)


def _settings(*entries: Setting) -> dict[str, Setting]:
    return {entry.name: entry for entry in entries}


def setting(name: str, kind: type, default: Any, doors: Iterable[str], help: str, **more: Any) -> Setting:
    return Setting(name, kind, default, help, frozenset(doors), **more)


SECONDS = dict(minimum=0, maximum=MAX_SECONDS, above=True, unit="seconds")
POSITIVE = dict(minimum=0, above=True)

# In the order %deepagent_config lists them.
SETTINGS = _settings(
    setting("lm", str, None, EVERYWHERE, subagent=SAME, env="DEEPAGENT_LM", recorded=True,
            help="the LM: a model id (openai/gpt-4o-mini), local (the bundled model; local:PATH.gguf for another), "
                 "or a notebook variable holding an LM",
            at={CLI: {"help": "model id (openai/gpt-4o-mini), local (the bundled model; local:PATH.gguf for another), "
                              "or scripted:FILE.json (default: DEEPAGENT_LM)"},
                ACP: {"help": "model id, local, or scripted:FILE.json (default: DEEPAGENT_LM; in a notebook's kernel, "
                              "the notebook's own)"}}),
    setting("sub_lm", str, None, EVERYWHERE, subagent=SAME, recorded=True,
            help="the LM behind llm_query (default: the main LM)"),
    setting("lm_options", dict, {}, {CONFIG, CLI}, subagent=TREE, flag="--lm-option", repeat=True,
            metavar="KEY=VALUE", off="none",
            help="an option of a model-id LM, repeatable: timeout=600, max_tokens=4000, api_base=URL"),
    setting("workspace", str, ".", {CELL, CONFIG, CLI, ACP, AGENT}, subagent=OWN, recorded=True,
            help="directory the file tools are rooted at and the run records kept in",
            at={ACP: {"default": None, "help": "directory the file tools are rooted at and the run records kept in "
                                               "(default: each session's cwd)"}}),
    setting("max_iters", int, 20, EVERYWHERE, subagent=FROM + "subagent_max_iters", recorded=True, **POSITIVE,
            help="most code steps per run"),
    setting("max_llm_calls", int, 50, EVERYWHERE, subagent=SAME, recorded=True, **POSITIVE,
            help="most llm_query calls per run"),
    setting("profile", str, "default", EVERYWHERE, subagent=OWN, recorded=True,
            help="prompt profile: a file in core/loop/prompts (in a notebook, also a %%deepagent_agent type)"),
    setting("timeout", float, 120.0, EVERYWHERE, subagent=SAME, on_gateway=True, recorded=True, **SECONDS,
            help="seconds one code block may run before it is stopped"),
    setting("quiet", bool, False, {CELL, CONFIG, CLI}, subagent=ROOT,
            help="show only the result, not the live progress", at={CLI: {"help": "no progress on stderr"}}),
    setting("display_mode", str, "auto", MAGICS, subagent=ROOT, flag="--display", choices=("auto", "widgets", "text"),
            help="live display: widgets in a notebook, text in a terminal (auto), or forced"),
    # Sub-agents (tools/delegation): limits for the whole tree of a run, and where their kernels come from.
    setting("max_depth", int, 2, EVERYWHERE, subagent=SAME, owner=DELEGATION, recorded=True, minimum=0,
            help="how deep sub-agents may nest (0: no delegation)"),
    setting("max_subagents", int, 16, EVERYWHERE, subagent=SAME, owner=DELEGATION, recorded=True, **POSITIVE,
            help="most sub-agents one run (its whole tree) may start"),
    setting("subagent_max_iters", int, 10, EVERYWHERE, subagent=SAME, owner=DELEGATION, recorded=True, **POSITIVE,
            help="most code steps per sub-agent"),
    setting("subagent_timeout", float, 600.0, EVERYWHERE, subagent=SAME, on_gateway=True, owner=DELEGATION,
            recorded=True, **SECONDS,
            help="seconds a sub-agent may run before its kernel is stopped"),
    setting("max_parallel", int, 4, EVERYWHERE, subagent=SAME, owner=DELEGATION, recorded=True, **POSITIVE,
            help="most sub-agents one delegate_batched runs at the same time"),
    setting("pool_size", int, 2, {CONFIG, CLI}, subagent=TREE, on_gateway=True, owner=DELEGATION, minimum=0,
            maximum=MAX_POOL, at={CLI: {"default": 0}},
            help="sub-agent kernels kept started ahead of need (0: start each on demand)"),
    setting("kernel_name", str, None, {CONFIG, CLI}, subagent=TREE, on_gateway=True, owner=DELEGATION,
            help="kernel spec for sub-agents (default: this Python)"),
    # The sandbox of local sub-agent kernels (interpreters/pool/sandbox.py; docs/safety.md).
    setting("subagent_network", bool, False, {CELL, CONFIG, CLI, SERVER, ACP}, subagent=TREE, on_gateway=False,
            owner=DELEGATION,
            help="sub-agent kernels reach the network (default: their sandbox has none; their tools and LM calls "
                 "run on the host)"),
    setting("require_sandbox", bool, False, {CELL, CONFIG, CLI, SERVER, ACP}, subagent=TREE, on_gateway=False,
            owner=DELEGATION,
            help="refuse sub-agents when bubblewrap cannot sandbox their kernels here, instead of running them "
                 "marked not sandboxed"),
    # What one sub-agent's kernel may consume (interpreters/pool/limits.py; docs/safety.md#limits): each held by a
    # cgroup where this machine gives one, else by an rlimit; 0: no limit. The tree's kernel pool is made for them;
    # a gateway's kernels take those a process sets on itself.
    setting("subagent_processes", int, 256, LOCAL_KERNELS, subagent=TREE, on_gateway=False, owner=DELEGATION,
            minimum=0, maximum=MAX_PROCESSES,
            help="most processes and threads a sub-agent's kernel may run at once (0: no limit)"),
    setting("subagent_memory", int, 2048, LOCAL_KERNELS, subagent=TREE, on_gateway=True, owner=DELEGATION,
            minimum=0, maximum=MAX_MIB, unit="MiB",
            help="MiB of memory a sub-agent's kernel and its processes may use (0: no limit)"),
    setting("subagent_cpu_time", int, 1800, LOCAL_KERNELS, subagent=TREE, on_gateway=True, owner=DELEGATION,
            minimum=0, maximum=int(MAX_SECONDS), unit="seconds",
            help="CPU seconds each process of a sub-agent may use (0: no limit)"),
    setting("subagent_file_size", int, 1024, LOCAL_KERNELS, subagent=TREE, on_gateway=True, owner=DELEGATION,
            minimum=0, maximum=MAX_MIB, unit="MiB",
            help="MiB: the largest file a sub-agent may write (0: no limit)"),
    setting("subagent_disk", int, 2048, LOCAL_KERNELS, subagent=TREE, on_gateway=False, owner=DELEGATION,
            minimum=0, maximum=MAX_MIB, unit="MiB",
            help="MiB a sub-agent may add to the workspace while it runs, and to each of its private folders in "
                 "memory (/tmp) (0: no limit)"),
    setting("subagent_open_files", int, 1024, LOCAL_KERNELS, subagent=TREE, on_gateway=True, owner=DELEGATION,
            minimum=0, maximum=MAX_OPEN_FILES,
            help="most files a sub-agent's process may have open at once (0: no limit)"),
    setting("gateway_url", str, None, {CONFIG, CLI}, subagent=TREE, env="JUPYTER_GATEWAY_URL", owner=DELEGATION,
            off="this machine",
            help="Jupyter gateway to start sub-agent kernels on (default: JUPYTER_GATEWAY_URL, else this machine)"),
    setting("gateway_token", str, None, {CONFIG, CLI}, subagent=TREE, env="JUPYTER_GATEWAY_AUTH_TOKEN",
            owner=DELEGATION,
            help="the gateway's auth token (default: JUPYTER_GATEWAY_AUTH_TOKEN)",
            at={CONFIG: {"help": "the gateway's auth token (default: JUPYTER_GATEWAY_AUTH_TOKEN); prefer "
                                 "--gateway-token-env"}}),
    setting("gateway_token_env", str, None, {CONFIG}, subagent=TREE, owner=DELEGATION, metavar="VAR", off="none",
            help="the environment variable holding the gateway's auth token"),
    # Follow-up cells (magics/followup.py) and long runs (core/model/compaction.py).
    setting("continue_default", bool, False, {CONFIG}, subagent=ROOT, flag="--continue",
            help="a plain cell continues the last conversation (--new starts one)"),
    setting("cells", int, 5, MAGICS, subagent=ROOT, minimum=0,
            help="how many of your recent input cells the agent sees (0: none)"),
    setting("compact_at", float, 0.5, {CELL, CONFIG, AGENT}, subagent=SAME, read=compact_at,
            help="compact the REPL history in the prompt past this: tokens, or a fraction (<= 1) of the context "
                 "window; off: never"),
    # What agents get besides the built-in tools.
    setting("mcp_servers", list, [], {CONFIG, AGENT}, subagent=TREE, owner=MCP, flag="--mcp", repeat=True,
            help="MCP server whose tools agents get: a command line (stdio) or an http(s) URL; repeat for more; "
                 "'off': none"),
    setting("tools", list, [], MAGICS, subagent=TREE, read=str,
            help="notebook functions offered to every agent as tools: f,g ('off': none)"),
    setting("extensions", list, [], MAGICS, subagent=TREE, read=str,
            help="notebook variables holding Capability objects every agent gets besides the standard ones: a,b "
                 "('off': none)"),
    setting("skills_dir", str, None, {CONFIG, AGENT}, subagent=SAME, env="DEEPAGENT_SKILLS_DIR", owner=SKILLS,
            help="user-wide skills folder (default: DEEPAGENT_SKILLS_DIR, else ~/.deepagent/skills; 'off': the "
                 "default)"),
    setting("subagent_skills", bool, False, {CONFIG, AGENT}, subagent=SAME, owner=SKILLS,
            help="sub-agents may write skills (<workspace>/skills/); by default only you and root runs do"),
    # Spend caps (core/policy/spend.py, which reads their text): the whole tree of a run; None: no cap.
    setting("max_cost", float, None, {CELL, CONFIG, AGENT}, subagent=TREE, read=str, metavar="USD", recorded=True,
            off="no cap",
            help="most USD one run (its whole tree) may spend on LM calls"),
    setting("max_tokens", int, None, {CELL, CONFIG, AGENT}, subagent=TREE, read=str, metavar="N", recorded=True,
            off="no cap",
            help="most LM tokens one run (its whole tree) may spend"),
    setting("max_time", float, None, {CELL, CONFIG, AGENT}, subagent=TREE, read=str, metavar="SECONDS", recorded=True,
            off="no cap", help="most seconds one run may take, waiting for approval not counted"),
    # The user in control (core/policy/approval.py, magics/inputs/approval_flags.py).
    setting("approve", str, "never", {CELL, CONFIG, CLI, SERVER, ACP, AGENT}, subagent=TREE, recorded=True,
            help="approval policy: never, risky, always, or a notebook function (proposal) -> decision",
            at={CLI: {"choices": ("never",), "help": "when to ask before a tool call (only 'never' exists yet)"},
                SERVER: {"choices": ("never", "risky", "always")},
                ACP: {"choices": ("never", "risky", "always"),
                      "help": "when to ask the client (session/request_permission) before a block runs: never, risky "
                              "or always"}}),
    setting("approve_rules", str, "", {CELL, CONFIG, SERVER, ACP, AGENT}, subagent=TREE,
            help="risk rules for --approve risky: '' for all, -name off, none,name only those"),
    setting("undo_limit", float, 10.0, {CONFIG, AGENT}, subagent=ROOT, minimum=0, maximum=MAX_UNDO_MB, unit="megabytes",
            agent_scale=1_000_000,
            help="megabytes: the biggest of your objects a run copies before changing it in place, so "
                 "%deepagent_undo can restore it (0: none)",
            at={AGENT: {"help": "bytes: the biggest of the user's objects a run copies before changing it in "
                                "place (0: none)"}}),
    setting("stream", bool, True, {CELL, CONFIG, AGENT}, subagent=TREE,
            help="show each step's reasoning and code while the model writes them"),
    # OpenTelemetry (tracing/; docs/tracing.md): spans only when the user configured a tracer provider.
    setting("trace_content", bool, False, {CONFIG, CLI, AGENT}, subagent=TREE, owner=TRACING,
            env="OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
            help="traces carry prompts, replies, tool arguments and results, scrubbed of secrets (default: "
                 "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)"),
    # Where the run came in (core/loop/doors.py): what the prompt says about where code runs and what persists.
    setting("door", str, "python", {AGENT}, subagent=ROOT, recorded=True,  # a sub-agent's REPL is its own kernel
            help="the front door that started the run: notebook, api, cli, mcp, acp or python (DeepAgent.run)"),
)


def at(door: str) -> list[Setting]:
    """The settings that apply at ``door``, in table order."""
    return [setting for setting in SETTINGS.values() if door in setting.doors]


def agent_keywords(values: Mapping[str, Any]) -> dict[str, Any]:
    """The `DeepAgent` keywords among ``values`` (a door's settings by name), as the agent takes them."""
    return {s.name: s.to_agent(values[s.name]) for s in at(AGENT) if s.name in values}


def agent_settings(given: Mapping[str, Any], owner: str = "DeepAgent") -> dict[str, Any]:
    """Every agent setting: the value given, else the default (a `TypeError` for a name that is none)."""
    unknown = sorted(set(given) - {s.name for s in at(AGENT)})
    if unknown:
        raise TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
    return {s.name: given[s.name] if s.name in given else _copy(s.to_agent(s.default)) for s in at(AGENT)}


def inherited(parent: Any) -> dict[str, Any]:
    """What a sub-agent of ``parent`` (a `DeepAgent`) takes from it, by setting name: each agent setting whose
    `Setting.subagent` is SAME (the parent's value) or FROM another (the parent's value of that one)."""
    out = {}
    for s in at(AGENT):
        if s.subagent == SAME:
            out[s.name] = getattr(parent, s.name)
        elif s.subagent.startswith(FROM):
            out[s.name] = getattr(parent, s.subagent[len(FROM):])
    return out


def for_kernels(values: Mapping[str, Any], on_gateway: bool) -> dict[str, Any]:
    """The sub-agent kernels' settings among a door's ``values``, as kernels there take them: on a gateway, only
    those its kernels take (`Setting.on_gateway`); the others keep their defaults."""
    return {s.name: values[s.name] if s.on_gateway or not on_gateway else s.default
            for s in SETTINGS.values() if s.on_gateway is not None and s.name in values}


def _copy(value: Any) -> Any:
    return type(value)(value) if isinstance(value, (list, dict)) else value


def described(door: str, indent: str = "    ") -> str:
    """One line per setting at ``door``: ``name: help (default)``, for a docstring."""
    lines = []
    for s in at(door):
        default = s.to_agent(s.default) if door == AGENT else s.where(door, "default")
        lines.append(f"{indent}{s.name}: {s.where(door, 'help')} (default: {default!r})")
    return "\n".join(lines)


def with_settings(function: Callable[..., Any], door: str) -> inspect.Signature:
    """``function``'s signature with its ``**settings`` spelled out: one keyword per setting at ``door``."""
    signature = inspect.signature(function)
    params = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    params += [inspect.Parameter(s.name, inspect.Parameter.KEYWORD_ONLY, default=s.to_agent(s.default) if door == AGENT
                                 else s.where(door, "default")) for s in at(door)]
    return signature.replace(parameters=params)
