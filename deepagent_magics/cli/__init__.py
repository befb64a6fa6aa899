"""The ``deepagent`` command line (and ``python -m deepagent_magics``): a front door beside the magics.

``deepagent run "TASK"`` runs a root agent in a fresh namespace, with text progress on
stderr and the result on stdout; ``deepagent runs``, ``trace`` and ``export`` read the
same run records as ``%deepagent_runs``, ``%deepagent_trace`` and ``%deepagent_export``.
See docs/cli.md.
"""

from __future__ import annotations

import sys
from typing import Sequence

from ..errors import UserError
from .parser import build_parser

__all__ = ["main"]
MESSAGE_CHARS = 300  # of an error line


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (0: done; 1: the run did not finish; 2: bad input; 3: the run
    finished with an answer the agent did not submit, taken from its output)."""
    try:
        args = build_parser().parse_args(argv)  # --help and a mistake here end before the agent is imported
        from . import commands

        return commands.COMMANDS[args.command](args)
    except UserError as exc:  # UsageProblem, or a mistake found deeper (a model id, a --load file): one line
        line = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        if len(line) > MESSAGE_CHARS:  # argparse quotes a whole value, however long it is
            line = line[:MESSAGE_CHARS - 1] + "…"
        print(f"deepagent: error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("deepagent: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `deepagent runs | head`: the reader left; not an error of ours
        sys.stdout = None  # type: ignore[assignment]  # no flush at exit into the closed pipe
        return 141
