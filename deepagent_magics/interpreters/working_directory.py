"""The root REPL's working directory: each step run in a given one, and the user's put back after a run.

The root agent's code runs in this process, whose working directory is the user's (a notebook's
folder). Two things follow:

- An evaluation runs each task's root agent in that task's workspace (``DeepAgent.run(cwd=...)``)
  while other tasks run in other threads. The working directory belongs to the process, so each step
  changes into its folder and back under one lock: steps of tasks running at once take turns, their
  model calls do not.
- Code that changes directory (``os.chdir``) would leave the user's notebook elsewhere, or in a
  folder the agent deleted. `restore` puts it back when the run ends, and says where the agent had gone.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Iterator

STEP_LOCK = threading.RLock()  # one step at a time runs in a folder of its own


def getcwd() -> str | None:
    """The process's working directory; None when it no longer exists (deleted under it)."""
    try:
        return os.getcwd()
    except OSError:
        return None


def at_start(folder: str | None) -> str | None:
    """Where to go back to after a run whose steps run in ``folder``: nowhere (None) when they have a
    folder of their own, else the process's directory, read when no other run's step is in its own."""
    if folder is not None:
        return None
    with STEP_LOCK:
        return getcwd()


@contextlib.contextmanager
def stepping_in(folder: str | None) -> Iterator[None]:
    """Run a step with ``folder`` as the working directory, then go back (None: where the process is)."""
    if folder is None:
        yield
        return
    with STEP_LOCK:
        before = getcwd()
        os.chdir(folder)
        try:
            yield
        finally:
            if before is not None and os.path.isdir(before):
                os.chdir(before)


def restore(before: str | None) -> str | None:
    """Back to ``before`` if the run moved away from it: where the run had gone (None: it had not moved)."""
    with STEP_LOCK:
        now = getcwd()
        if before is None or now == before or not os.path.isdir(before):
            return None
        os.chdir(before)
    return now or "a folder since deleted"
