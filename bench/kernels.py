"""The sub-agent kernels (KernelInterpreter on a KernelPool), when this tree has them.

Benchmarks that need kernels ask `available()` first: None when they can run,
else the reason, which the report prints as "not available in this run".
"""

from __future__ import annotations

import importlib
from typing import Any


def available() -> str | None:
    for module in ("deepagent_magics.kernel_interpreter", "deepagent_magics.kernel_pool"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            return f"{module} is not in this tree ({exc})"
    return None


def close() -> None:
    """Shut down every kernel the benchmarks started."""
