"""``deepagent bench SUITE``: the quality benchmark from the shell (docs/quality.md).

The table goes to stdout as Markdown, progress to stderr, and the Markdown, JSON and answer
files to ``--out``. Bad input (an unknown suite or baseline, a limit or thread count below 1,
no model, a suite that cannot be downloaded) is one line and exit status 2.
"""

from __future__ import annotations

import argparse
import sys

from ..core.lm import NoLMError, resolve_lm
from ..tuning.bench import BenchError, SuiteUnavailable, UnknownSuite, check_arguments, run_suite
from ..tuning.progress import TextProgress
from ..tuning.suites import SUITES
from ..tuning.systems import BASELINES
from .models import ModelError, default_model, model_from_spec
from .parser import UsageProblem, positive


def add_parser(commands: argparse._SubParsersAction) -> None:
    bench = commands.add_parser("bench", help="measure the agent on a public benchmark (docs/quality.md)",
                                description="Run the deep agent (and baselines) on a public benchmark suite, "
                                            "scored by the suite's own rule; the table goes to stdout.")
    bench.add_argument("suite", help=f"the suite: {', '.join(SUITES)}")
    bench.add_argument("--lm", help="model id (openai/gpt-4o-mini) or scripted:FILE.json (default: DEEPAGENT_LM)")
    bench.add_argument("--limit", type=positive(int), help="run only the first N tasks")
    bench.add_argument("--baselines", default="", help=f"comma-separated, beside the deep agent: {','.join(BASELINES)}")
    bench.add_argument("--threads", type=positive(int), default=4, help="tasks run at once (default 4)")
    bench.add_argument("--out", default="bench-results", help="directory for the Markdown, JSON and answers")
    bench.add_argument("--cache-dir", dest="cache_dir",
                       help="where suites are kept (default: DEEPAGENT_BENCH_CACHE or ~/.cache/deepagent-magics/bench)")
    bench.add_argument("--split", help="the suite's split (dabstep: dev or default; oolong: validation or test)")
    bench.add_argument("--max-iters", dest="max_iters", type=positive(int), default=20, help="most code steps per task")
    bench.add_argument("--quiet", action="store_true", help="no progress on stderr")


def run_bench(args: argparse.Namespace) -> int:
    from ..core.agent import DeepAgent

    try:
        check_arguments(args.suite, args.limit, args.baselines, args.threads)
        lm = resolve_lm(model_from_spec(args.lm) or default_model())
    except (UnknownSuite, BenchError, ModelError) as exc:
        raise UsageProblem(str(exc)) from None
    except NoLMError:
        raise UsageProblem("no model: pass --lm openai/gpt-4o-mini (or scripted:FILE.json), or set DEEPAGENT_LM") from None
    except ValueError as exc:
        raise UsageProblem(str(exc).splitlines()[0]) from None
    progress = TextProgress(f"bench {args.suite}", stream=_Null() if args.quiet else sys.stderr)
    agent = DeepAgent(lm=lm, max_depth=0, max_iters=args.max_iters)
    try:
        report = run_suite(args.suite, lm, limit=args.limit, baselines=args.baselines, threads=args.threads,
                           out=args.out, cache_dir=args.cache_dir, split=args.split, agent=agent, progress=progress)
    except SuiteUnavailable as exc:
        raise UsageProblem(str(exc)) from None
    except OSError as exc:
        raise UsageProblem(f"--out {args.out}: {exc.strerror or exc}") from None
    print(report.to_markdown(), end="")
    print(f"deepagent bench: wrote {', '.join(report.files)}", file=sys.stderr)
    if report.rows and all(row["error"] for row in report.rows):
        print(f"deepagent bench: every task failed; the first: {report.rows[0]['error']}", file=sys.stderr)
        return 1
    return 0


class _Null:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass
