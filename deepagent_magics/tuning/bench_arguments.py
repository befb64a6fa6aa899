"""The benchmark's arguments checked, without loading DSPy: a mistake on the command line or in the magic
is one line (`BenchError`, `suites.UnknownSuite`) told before anything heavy is imported."""

from __future__ import annotations

from typing import Any, Iterable

from ..errors import UserError
from .choices import BENCH_BASELINES, DEEPAGENTS
from .suites import Suite, get_suite


def available() -> str | None:
    """None when LangChain's deepagents can be imported, else why not."""
    try:
        import deepagents  # noqa: F401
        from deepagents.backends import FilesystemBackend  # noqa: F401
    except Exception as exc:  # any import error of an optional peer: why it is not available
        return f"{type(exc).__name__}: {exc}"
    return None


class BenchError(UserError, ValueError):
    """A bad argument to the benchmark (a limit, a thread count, a baseline); the message is one line."""


def check_arguments(suite: str, limit: Any = None, baselines: Iterable[str] = (), threads: Any = 4) -> tuple[Suite, list[str]]:
    """The suite and the baselines, or one line saying what is wrong (`UnknownSuite`, `BenchError`)."""
    found = get_suite(suite)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise BenchError(f"--limit must be a whole number of tasks, 1 or more, got {limit!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise BenchError(f"--threads must be a whole number, 1 or more, got {threads!r}")
    names = [name.strip() for name in ([baselines] if isinstance(baselines, str) else baselines)
             for name in str(name).split(",") if name.strip()]
    unknown = [name for name in names if name not in BENCH_BASELINES]
    if unknown:
        raise BenchError(f"unknown baseline {', '.join(unknown)}; choose from: {', '.join(BENCH_BASELINES)}")
    if DEEPAGENTS in names and available():
        raise BenchError(f"the deepagents baseline needs LangChain deepagents: pip install 'deepagent-magics[bench]' "
                         f"({available()})")
    return found, list(dict.fromkeys(names))


def parse_where(values: Iterable[str]) -> dict[str, str]:
    """``["level=hard", "dataset=trec_coarse"]`` -> {"level": "hard", "dataset": "trec_coarse"}."""
    where = {}
    for value in values:
        key, sep, wanted = str(value).partition("=")
        if not sep or not key.strip() or not wanted.strip():
            raise BenchError(f"--where {value!r}: write KEY=VALUE, e.g. --where level=hard")
        where[key.strip()] = wanted.strip()
    return where
