"""What a whole run tree shares: one `RunTree`, made by the root run and handed to every sub-agent's run.

A root run and the sub-agents under it are one unit for the user: one spend budget, one steering
inbox (stop, notes, todos), one approver asking one user, one choice about streaming, one delegation
tree (its sub-agent budget and kernel pool), one trace. Each of those lives here, reached from any run in one
step (``run.tree``), instead of each policy walking ``run.parent`` up by itself.

The run room sits below the rooms whose objects these are (policy, the delegation tools), so the
fields are typed loosely here; each owner's module says what it keeps (`policy.spend.budget_of`,
`policy.steering.steering_of`, `policy.approval.approver_of`, `model.streaming.wanted`,
``tools/delegation/tree.tree_of``, ``tracing/spans.py``).
"""

from __future__ import annotations

import threading
from typing import Any, Callable


class RunTree:
    """The state one run tree shares (see the module docstring)."""

    __slots__ = ("spend", "steering", "approver", "stream", "delegation", "tracing", "_lock")

    def __init__(self) -> None:
        self.spend: Any = None  # policy.spend.SpendBudget, when the tree has caps
        self.steering: Any = None  # policy.steering.Steering, made when the user first steers
        self.approver: Any = None  # policy.approval.Approver, when code needs approval first
        self.stream = True  # steps and llm_query answers streamed into the displays (--no-stream: False)
        self.delegation: Any = None  # tools.delegation.tree.Tree, made on the first delegation
        self.tracing: Any = None  # tracing.spans.TreeTrace, when the root started with a tracer provider configured
        self._lock = threading.Lock()

    def setdefault(self, name: str, make: Callable[[], Any]) -> Any:
        """The tree's ``name``, made with ``make()`` once, even when several threads ask at the same time."""
        found = getattr(self, name)
        if found is None:
            with self._lock:
                found = getattr(self, name)
                if found is None:
                    found = make()
                    setattr(self, name, found)
        return found


def tree_of(run: Any) -> RunTree | None:
    """``run``'s tree (None for no run, or an object that is not a `Run`)."""
    return getattr(run, "tree", None)


def trace_headers(run: Any) -> dict[str, str]:
    """Where ``run`` is in its tree's trace now, as W3C Trace Context headers (``traceparent``, ``tracestate``):
    what a sub-agent's kernel is told with each step. Empty when the tree is not traced (``tracing/spans.py``)."""
    tracing = getattr(tree_of(run), "tracing", None)
    return tracing.headers(run) if tracing is not None else {}
