"""The ``deepagent`` command line's arguments: ``run``, ``runs``, ``trace``, ``export`` and ``bench``.

``run``'s settings are the table's (``settings.py``, the `CLI` door): the same names, defaults,
help and bounds as ``%%deepagent``'s flags. A mistake is one line on stderr (`UsageProblem`, or
any other `UserError`), never argparse's usage block.
"""

from __future__ import annotations

import argparse
import math

from ..errors import InvalidValue, UserError
from ..settings import ACP, CLI, SETTINGS, Setting, at


class UsageProblem(UserError):
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


def setting_type(setting: Setting) -> callable:
    """A flag's text as the setting's value, within its bounds (else argparse's one-line error)."""

    def convert(text: str) -> object:
        try:
            return setting.check(setting.parse(text), label="")
        except InvalidValue as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = setting.name
    return convert


def add_setting(parser: argparse.ArgumentParser, setting: Setting, door: str = CLI, **own: str | int) -> None:
    """One setting of the table as a flag of ``parser``, as ``door`` has it (``own``: what this command says
    differently, e.g. bench's ``default=0`` for ``--max-depth``)."""
    default, help = own.get("default", setting.where(door, "default")), own.get("help", setting.where(door, "help"))
    if default not in (None, False, [], {}) and "default:" not in help and "default " not in help:
        help += f" (default: {default})"
    options = {"dest": setting.name, "default": default, "help": help.replace("%", "%%")}
    if setting.kind is bool:
        options["action"] = "store_true"
    elif setting.repeat:  # given once per value (KEY=VALUE texts, read by the code that uses them)
        options.update(action="append", default=[], metavar=setting.metavar)
    elif setting.where(door, "choices"):
        options["choices"] = setting.where(door, "choices")
    elif setting.kind in (int, float) or setting.read is not None:
        options["type"] = setting_type(setting)
    parser.add_argument(setting.flag, **options)


def build_parser() -> Parser:
    parser = Parser(prog="deepagent", description="Run a deep agent from the shell, and read its run records.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands.required = True

    run = commands.add_parser("run", help="run an agent on a task; the result goes to stdout",
                              description="Run a root agent in a fresh namespace. Progress goes to stderr, the "
                                          "result to stdout; the exit status is 0 only when the run finished.")
    run.add_argument("task", help="what to do ('-' reads the task from stdin)")
    for setting in at(CLI):
        add_setting(run, setting)
    run.add_argument("--load", action="append", default=[], metavar="NAME=FILE",
                     help="make FILE the variable NAME (CSV/Parquet: DataFrame with pandas, JSON, text); repeatable")
    run.add_argument("--json", action="store_true", help="print the run record (JSON) instead of the result")

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
    acp = commands.add_parser("acp", help="serve the agent over the Agent Client Protocol on stdio (docs/clients.md)",
                              description="Speak ACP on stdin/stdout, for jupyter-ai's chat, editors and other ACP "
                                          "clients; each session's prompts run in a notebook's kernel or a kernel of "
                                          "its own. Logs go to stderr.")
    for setting in at(ACP):
        add_setting(acp, setting, ACP)
    return parser


def add_bench_parser(commands: argparse._SubParsersAction) -> None:
    """``deepagent bench SUITE``: the quality benchmark (cli/bench.py, docs/quality.md)."""
    bench = commands.add_parser("bench", help="measure the agent on a public benchmark (docs/quality.md)",
                                description="Run the deep agent (and baselines) on a public benchmark suite, "
                                            "scored by the suite's own rule; the table goes to stdout.")
    bench.add_argument("suite", help="the suite: dabstep, dabench, oolong or sklearn (offline)")
    add_setting(bench, SETTINGS["lm"])
    add_setting(bench, SETTINGS["lm_options"])
    bench.add_argument("--limit", type=positive(int), help="run only the first N tasks")
    bench.add_argument("--baselines", default="", help="comma-separated, beside the deep agent: cot,react,rlm,deepagents")
    bench.add_argument("--threads", type=positive(int), default=4, help="tasks run at once (default 4)")
    bench.add_argument("--out", default="bench-results", help="directory for the Markdown, JSON and answers")
    bench.add_argument("--resume", action="store_true",
                       help="take the answers an earlier run kept in --out and run only the tasks it had not finished")
    bench.add_argument("--cache-dir", dest="cache_dir",
                       help="where suites are kept (default: DEEPAGENT_BENCH_CACHE or ~/.cache/deepagent-magics/bench)")
    bench.add_argument("--split", help="the suite's split (dabstep: dev or default; oolong: validation or test)")
    bench.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                       help="only tasks whose KEY is VALUE (level=hard, dataset=trec_coarse); repeatable")
    add_setting(bench, SETTINGS["max_iters"], help="most code steps per task")
    add_setting(bench, SETTINGS["max_depth"], default=0,
                help="how deep the deep agent's sub-agents may nest (default 0: none; 1 lets it delegate)")
    add_setting(bench, SETTINGS["quiet"])
