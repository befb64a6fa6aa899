"""The quality benchmark's suites: public benchmarks that fit a notebook data agent.

- `dabstep`: DABstep (payments table, fee rules, docs); `dabench`: InfiAgent-DABench (CSV
  questions, ``@name[value]`` answers); `oolong`: OOLONG-synth (long-context aggregation);
  `sklearn_data`: the offline suite, questions over scikit-learn's bundled datasets, answered by the
  reference code in `sklearn_questions` (nothing to download)
- `suite`: what a suite and a task are; `hub`: the cache and the Hugging Face download;
  `reading`: files to notebook variables

Each suite scores with its own published rule. `tuning.bench` runs them; docs/quality.md.
"""

from __future__ import annotations

from ...errors import UserError
from .suite import Suite, Task
from .dabench import DABench
from .dabstep import DABstep
from .hub import SuiteUnavailable, cache_dir
from .oolong import Oolong
from .sklearn_data import SklearnData

SUITES: dict[str, Suite] = {suite.name: suite for suite in (DABstep(), DABench(), Oolong(), SklearnData())}


class UnknownSuite(UserError, ValueError):
    """No suite by that name; the message lists the suites."""


def get_suite(name: str) -> Suite:
    try:
        return SUITES[str(name).strip().lower()]
    except KeyError:
        raise UnknownSuite(f"unknown suite {name!r}; choose one of: {', '.join(SUITES)}") from None


__all__ = ["SUITES", "Suite", "SuiteUnavailable", "Task", "UnknownSuite", "cache_dir", "get_suite"]
