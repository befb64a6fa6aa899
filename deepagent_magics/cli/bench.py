"""``deepagent bench SUITE``: the quality benchmark from the shell (docs/quality.md).

The table goes to stdout as Markdown, progress to stderr, and the Markdown, JSON and answer
files to ``--out``. Bad input (an unknown suite or baseline, a limit or thread count below 1,
no model, a suite that cannot be downloaded) is one line and exit status 2.

The benchmark itself is tuning/bench.py; the notebook's front door is magics/bench.py.
"""

from __future__ import annotations

import argparse
import sys

from ..core.model.lm_options import parse_lm_options
from ..errors import UserError
from ..tuning.bench_arguments import check_arguments, parse_where
from ..tuning.progress import TextProgress
from .models import NO_MODEL, default_maker, model_maker, some_model_named
from .parser import UsageProblem


def run_bench(args: argparse.Namespace) -> int:
    try:  # the input checked before DSPy is imported (making the model and running the suite import it)
        check_arguments(args.suite, args.limit, args.baselines, args.threads)
        where = parse_where(args.where)
        options = parse_lm_options(args.lm_options)
        make_lm = model_maker(args.lm, options=options) or default_maker()
        if not some_model_named(make_lm):
            raise UsageProblem(NO_MODEL)
    except UserError:  # an unknown suite, a bad argument or model id: main shows its one line
        raise
    except ValueError as exc:
        raise UsageProblem(str(exc).splitlines()[0]) from None
    from ..core.loop.agent import DeepAgent
    from ..core.model.lm import NoLMError, resolve_lm
    from ..tuning.bench import BenchStopped, run_suite

    try:
        lm = resolve_lm(make_lm() if make_lm is not None else None, options=options)
    except NoLMError:
        raise UsageProblem(NO_MODEL) from None
    except UserError:  # a model that cannot be made: main shows its one line
        raise
    except ValueError as exc:
        raise UsageProblem(str(exc).splitlines()[0]) from None
    progress = TextProgress(f"bench {args.suite}", stream=_Null() if args.quiet else sys.stderr)
    pool = None
    if args.max_depth > 0:  # sub-agents in kernels of this machine, all stopped with the command
        from ..interpreters.pool import KernelPool

        pool = KernelPool(0)
    agent = DeepAgent(lm=lm, max_depth=args.max_depth, max_iters=args.max_iters, pool=pool)
    try:
        report = run_suite(args.suite, lm, limit=args.limit, baselines=args.baselines, threads=args.threads,
                           out=args.out, cache_dir=args.cache_dir, split=args.split, agent=agent, progress=progress,
                           where=where, resume=args.resume)
    except BenchStopped as stopped:  # ^C: the table of what was done, and its files
        print(stopped.report.to_markdown(), end="")
        print(f"deepagent bench: stopped {stopped.report.stopped}; wrote {', '.join(stopped.report.files)}",
              file=sys.stderr)
        return 130
    except UserError:  # a suite that cannot be had: main shows its one line
        raise
    except OSError as exc:
        raise UsageProblem(f"--out {args.out}: {exc.strerror or exc}") from None
    finally:
        if pool is not None:
            pool.stop()
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
