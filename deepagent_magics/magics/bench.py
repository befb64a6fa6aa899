"""``%deepagent_bench``: the quality benchmark from the notebook, with the configured agent.

    %deepagent_bench dabench --limit 20 --baselines cot,react --lm openai/gpt-4o-mini --save bench --out table

Shows and returns the table (a `BenchReport`, also in ``_deepagent_bench``); every mistake is
one `UsageError` line before anything runs. See docs/quality.md. The benchmark is imported when the
magic is first used.

The benchmark itself is tuning/bench.py; the shell's front door is cli/bench.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..tuning.choices import BENCH_BASELINES, SUITES
from .inputs.flags import parse_flags
from .inputs.out_name import check_out
from .configured import AgentMagicsBase

if TYPE_CHECKING:
    from ..tuning.bench import BenchReport


@magics_class
class BenchMagics(AgentMagicsBase):
    """``%deepagent_bench``."""

    @magic_arguments()
    @argument("suite", help="the suite: " + ", ".join(SUITES))
    @argument("--lm", help="LM for the run: a model id or a notebook variable holding an LM")
    @argument("--limit", type=int, help="run only the first N tasks")
    @argument("--baselines", default="", help="comma-separated, beside the deep agent: " + ",".join(BENCH_BASELINES))
    @argument("--threads", type=int, default=4, help="tasks run at once")
    @argument("--save", dest="folder", help="directory to write the Markdown, JSON and answers to")
    @argument("--resume", action="store_true",
              help="take the answers an earlier run kept in --save and run only the tasks it had not finished")
    @argument("--cache-dir", dest="cache_dir", help="where suites are kept (default: DEEPAGENT_BENCH_CACHE "
                                                    "or ~/.cache/deepagent-magics/bench)")
    @argument("--split", help="the suite's split (dabstep: dev or default; oolong: validation or test)")
    @argument("--where", action="append", default=[], help="only tasks whose KEY is VALUE (level=hard); repeatable")
    @argument("--profile", help="the profile to measure")
    @argument("--out", help="notebook variable to store the table in (also returned)")
    @line_magic
    def deepagent_bench(self, line: str) -> BenchReport:
        """Measure the deep agent (and baselines) on a public benchmark suite; show and return the table."""
        from ..tuning.bench_arguments import BenchError, check_arguments, parse_where
        from ..tuning.suites import SuiteUnavailable, UnknownSuite

        args = parse_flags(self.deepagent_bench, line)
        check_out(args.out)
        try:  # checked before DSPy is imported
            check_arguments(args.suite, args.limit, args.baselines, args.threads)
            where = parse_where(args.where)
            if args.resume and not args.folder:
                raise BenchError("--resume takes the answers an earlier run kept in --save: name the folder")
        except (UnknownSuite, BenchError) as exc:
            raise UsageError(str(exc)) from None
        from ..tuning.bench import BenchStopped, run_suite
        from ..tuning.progress import progress_for

        profile = self._profile(args.profile)
        agent = self._agent(profile, args.lm)  # as %%deepagent runs it: the configured limits, any tuned program
        try:
            report = run_suite(args.suite, agent.lm, limit=args.limit, baselines=args.baselines,
                               threads=args.threads, out=args.folder, cache_dir=args.cache_dir, split=args.split,
                               agent=agent, progress=progress_for(self.shell, "deepagent_bench"), where=where,
                               resume=args.resume)
        except BenchStopped as stopped:  # interrupted: the table of what was done, kept like a whole run's
            report = stopped.report
            print(f"deepagent_bench: stopped {report.stopped}")
        except (SuiteUnavailable, BenchError) as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            raise UsageError(f"--save {args.folder}: {exc.strerror or exc}") from None
        self.shell.user_ns["_deepagent_bench"] = report
        if args.out:
            self.shell.user_ns[args.out] = report
        if report.files:
            print(f"deepagent_bench: wrote {', '.join(report.files)}")
        return report

