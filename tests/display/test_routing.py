"""display/routing.py: a listener called from any thread runs in the starting cell's context, one call at a time."""

from __future__ import annotations

import contextvars
import threading

from deepagent_magics.core.run.run import Event, Run
from deepagent_magics.display.routing import Routed

CELL = contextvars.ContextVar("cell", default="none")


def test_events_from_another_thread_see_the_starting_cells_context():
    seen = []
    CELL.set("the running cell")
    routed = Routed(lambda event: seen.append(CELL.get()))

    def elsewhere():
        CELL.set("a sub-agent's thread")
        routed(Event("step_started", Run("sub"), {}))

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    routed(Event("step_started", Run("root"), {}))
    assert seen == ["the running cell", "the running cell"]


def test_calls_are_serialised():
    inside, overlaps = [0], []

    def listener(event):
        inside[0] += 1
        overlaps.append(inside[0])
        for _ in range(1000):
            pass
        inside[0] -= 1

    routed = Routed(listener)
    threads = [threading.Thread(target=lambda: [routed(Event("x", Run("r"), {})) for _ in range(50)]) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert max(overlaps) == 1 and len(overlaps) == 200
