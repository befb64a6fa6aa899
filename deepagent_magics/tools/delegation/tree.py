"""What every agent in one delegation tree shares: its root run, its sub-agent budget, its kernel pool.

Limits hold for the whole tree: ``max_subagents`` is one counter shared by every
agent in it, exact under concurrency.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from ...core.run.run import Run
from ...core.run.session import Session
from ...interpreters.pool import KernelPool, default_pool


class Budget:
    """How many sub-agents a whole tree may start: one counter, exact under concurrency."""

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()

    def acquire(self) -> bool:
        with self._lock:
            if self.used >= self.limit:
                return False
            self.used += 1
            return True

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)


@dataclass
class Tree:
    """What every agent in one delegation tree shares."""

    root_run: Run
    budget: Budget
    pool: KernelPool


@dataclass
class Spec:
    task: str
    context: str = ""
    profile: str | None = None
    agent: str | None = None  # a sub-agent type's name (core.loop.subagent_types), or a packaged profile's


@dataclass
class Outcome:
    """How one sub-agent ended: ``text`` is its result as text (or the ``Error:``), ``value`` what it submitted."""

    ok: bool
    text: str
    value: Any = None

    @property
    def result(self) -> Any:
        """What the parent's tool returns: the submitted value as data, else the ``Error:`` text."""
        return self.value if self.ok else self.text




def tree_of(session: Session) -> Tree:
    """The tree the session's agent belongs to (created for a root agent on its first delegation)."""
    tree = getattr(session.agent, "tree", None)
    if tree is not None:
        return tree
    agent = session.agent

    def make() -> Tree:
        return Tree(session.run, Budget(agent.max_subagents), getattr(agent, "pool", None) or default_pool())

    return session.run.tree.setdefault("delegation", make)  # the run tree's one delegation tree
