"""The ``deepagent`` command line's arguments: ``run``, ``runs``, ``trace``, ``export`` and ``bench``.

Flags that ``%%deepagent`` also has keep its names (``--lm``, ``--sub-lm``, ``--workspace``,
``--profile``, ``--max-iters``, ``--max-llm-calls``, ``--timeout``, ``--quiet``, the sub-agent
limits); a mistake is one line on stderr (`UsageProblem`), never argparse's usage block.
"""

from __future__ import annotations

import argparse
import math

APPROVAL_POLICIES = ("never",)  # no approval prompts exist yet: every tool call runs without asking


class UsageProblem(Exception):
    """Bad input on the command line: shown as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse prints a usage block and exits; we want one line
        raise UsageProblem(f"{message} (see {self.prog} --help)")


def positive(kind: type) -> callable:
    def convert(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {'number' if kind is float else 'whole number'}") from None
        if not math.isfinite(value):  # nan compares false to everything: it would turn a limit off
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    return convert


def non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def pool_size(text: str) -> int:
    from ..interpreters.pool.pool import check_size

    value = non_negative(text)
    try:
        check_size(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def build_parser() -> Parser:
    parser = Parser(prog="deepagent", description="Run a deep agent from the shell, and read its run records.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands.required = True

    run = commands.add_parser("run", help="run an agent on a task; the result goes to stdout",
                              description="Run a root agent in a fresh namespace. Progress goes to stderr, the "
                                          "result to stdout; the exit status is 0 only when the run finished.")
    run.add_argument("task", help="what to do ('-' reads the task from stdin)")
    run.add_argument("--workspace", default=".", help="directory for the file tools and the run records (default: .)")
    run.add_argument("--lm", help="model id (openai/gpt-4o-mini) or scripted:FILE.json (default: DEEPAGENT_LM)")
    run.add_argument("--sub-lm", dest="sub_lm", help="model behind llm_query (default: the --lm model)")
    run.add_argument("--profile", default="default", help="prompt profile")
    run.add_argument("--max-iters", dest="max_iters", type=positive(int), default=20, help="most code steps")
    run.add_argument("--max-llm-calls", dest="max_llm_calls", type=positive(int), default=50,
                     help="most llm_query calls")
    run.add_argument("--timeout", type=positive(float), default=120.0, help="seconds one code block may run")
    run.add_argument("--approve", choices=APPROVAL_POLICIES, default="never",
                     help="when to ask before a tool call (only 'never' exists yet)")
    run.add_argument("--load", action="append", default=[], metavar="NAME=FILE",
                     help="make FILE the variable NAME (CSV/Parquet: DataFrame with pandas, JSON, text); repeatable")
    run.add_argument("--json", action="store_true", help="print the run record (JSON) instead of the result")
    run.add_argument("--quiet", action="store_true", help="no progress on stderr")
    run.add_argument("--max-depth", dest="max_depth", type=non_negative, default=2,
                     help="how deep sub-agents may nest (0: no delegation)")
    run.add_argument("--max-subagents", dest="max_subagents", type=positive(int), default=16,
                     help="most sub-agents this run may start")
    run.add_argument("--subagent-max-iters", dest="subagent_max_iters", type=positive(int), default=10,
                     help="most code steps per sub-agent")
    run.add_argument("--subagent-timeout", dest="subagent_timeout", type=positive(float), default=600.0,
                     help="seconds a sub-agent may run")
    run.add_argument("--max-parallel", dest="max_parallel", type=positive(int), default=4,
                     help="most sub-agents running at once")
    run.add_argument("--pool-size", dest="pool_size", type=pool_size, default=0,
                     help="sub-agent kernels started ahead of need (default 0: on demand)")
    run.add_argument("--kernel-name", dest="kernel_name", help="kernel spec for sub-agents (default: this Python)")
    run.add_argument("--subagent-network", dest="subagent_network", action="store_true",
                     help="sub-agent kernels reach the network (default: their sandbox has none)")
    run.add_argument("--require-sandbox", dest="require_sandbox", action="store_true",
                     help="refuse sub-agents when their kernels cannot be sandboxed (bubblewrap) here")
    run.add_argument("--gateway-url", dest="gateway_url",
                     help="Jupyter gateway to start sub-agent kernels on (default: JUPYTER_GATEWAY_URL, else here)")
    run.add_argument("--gateway-token", dest="gateway_token",
                     help="the gateway's auth token (default: JUPYTER_GATEWAY_AUTH_TOKEN)")

    runs = commands.add_parser("runs", help="list recent runs (newest first)")
    runs.add_argument("--workspace", default=".", help="read the records of this workspace (default: .)")
    runs.add_argument("--limit", type=positive(int), default=20, help="how many runs to list")

    trace = commands.add_parser("trace", help="show a past run again, or one of its steps")
    trace.add_argument("run", nargs="?", help="run id (or a unique start or end of one); default: the newest")
    trace.add_argument("--step", type=int, help="print this step only")
    trace.add_argument("--workspace", default=".", help="read the records of this workspace (default: .)")

    export = commands.add_parser("export", help="write a run as a re-runnable notebook")
    export.add_argument("run", help="run id (or a unique start or end of one)")
    export.add_argument("out", metavar="OUT.ipynb", help="the notebook to write")
    export.add_argument("--workspace", default=".", help="read the records of this workspace (default: .)")

    add_bench_parser(commands)
    return parser


def add_bench_parser(commands: argparse._SubParsersAction) -> None:
    """``deepagent bench SUITE``: the quality benchmark (cli/bench.py, docs/quality.md)."""
    bench = commands.add_parser("bench", help="measure the agent on a public benchmark (docs/quality.md)",
                                description="Run the deep agent (and baselines) on a public benchmark suite, "
                                            "scored by the suite's own rule; the table goes to stdout.")
    bench.add_argument("suite", help="the suite: dabstep, dabench or oolong")
    bench.add_argument("--lm", help="model id (openai/gpt-4o-mini) or scripted:FILE.json (default: DEEPAGENT_LM)")
    bench.add_argument("--limit", type=positive(int), help="run only the first N tasks")
    bench.add_argument("--baselines", default="", help="comma-separated, beside the deep agent: cot,react,deepagents")
    bench.add_argument("--threads", type=positive(int), default=4, help="tasks run at once (default 4)")
    bench.add_argument("--out", default="bench-results", help="directory for the Markdown, JSON and answers")
    bench.add_argument("--cache-dir", dest="cache_dir",
                       help="where suites are kept (default: DEEPAGENT_BENCH_CACHE or ~/.cache/deepagent-magics/bench)")
    bench.add_argument("--split", help="the suite's split (dabstep: dev or default; oolong: validation or test)")
    bench.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                       help="only tasks whose KEY is VALUE (level=hard, dataset=trec_coarse); repeatable")
    bench.add_argument("--max-iters", dest="max_iters", type=positive(int), default=20, help="most code steps per task")
    bench.add_argument("--quiet", action="store_true", help="no progress on stderr")
