"""What the tools act on during one run, and how interpreters call them.

`dspy.RLM` is built once per agent with a fixed list of tools (so an optimiser
can tune it and `save` can store it). The tools find the run they belong to
through `current()`, which each interpreter sets around every tool call it makes,
from whatever thread the agent's code calls it.

One run at a time per namespace: `claim` marks a namespace (a dict, by identity) as
used by a run until `release`; a second run on it is refused with `NamespaceBusy`.
Two runs sharing one namespace would snapshot and restore each other's names.
"""

from __future__ import annotations

import contextvars
import threading
from dataclasses import dataclass, field
from typing import Any

from ...errors import UserError
from ..workspace.workspace import Workspace
from .run import Run

_current: contextvars.ContextVar["Session | None"] = contextvars.ContextVar("deepagent_session", default=None)


@dataclass
class Session:
    run: Run
    workspace: Workspace
    agent: Any = None  # the `DeepAgent` running it (core.loop.agent: a room above this one)
    compactor: Any = None  # model.compaction: made on the first step (False: compaction is off)
    last_inputs: dict[str, Any] | None = None  # loop.ending: the newest step's inputs, for a final answer
    # Set when the run ends early (stopped, a cap, an interrupt, a failure: `DeepAgent._run`) or its kernel is
    # stopped (a sub-agent past its time limit): long tool walks the agent left running check it and stop.
    cancelled: threading.Event = field(default_factory=threading.Event)
    cwd: str | None = None  # the root's working directory while its steps run (None: the process's)
    surroundings: str = ""  # what this run has (its workspace, sub-agent types, skills): each request says it


def active() -> Session | None:
    """The session of the run whose code (or loop) is running in this context, if any."""
    return _current.get()


def current() -> Session:
    session = _current.get()
    if session is None:
        raise RuntimeError("This tool can only be called by an agent's code during a run.")
    return session


def activate(session: Session) -> contextvars.Token:
    return _current.set(session)


def deactivate(token: contextvars.Token) -> None:
    _current.reset(token)


class NamespaceBusy(UserError, RuntimeError):
    """Another run is using this namespace; a second run on it is refused (one line for the user)."""


_claims: dict[int, tuple[dict[str, Any], Run]] = {}  # id(namespace) -> (the namespace, kept alive; its run)
_claims_lock = threading.Lock()


def claim(namespace: dict[str, Any], run: Run) -> None:
    """Mark ``namespace`` as used by ``run``; `NamespaceBusy` if another run is using it."""
    with _claims_lock:
        holder = _claims.get(id(namespace))
        if holder is not None and holder[0] is namespace:
            raise NamespaceBusy(
                f"another agent run ({holder[1].id}, {holder[1].status}) is using this namespace; "
                "wait for it to finish, or give this run a namespace of its own"
            )
        _claims[id(namespace)] = (namespace, run)


def release(namespace: dict[str, Any], run: Run) -> None:
    """End ``run``'s claim on ``namespace`` (a no-op when it holds none)."""
    with _claims_lock:
        holder = _claims.get(id(namespace))
        if holder is not None and holder[0] is namespace and holder[1] is run:
            del _claims[id(namespace)]
