"""The time limit's watchdog: one thread that delivers to every limited block whose time is up.

A block (`limit._Block`) says whether it is ``active``, whether it is ``due()``, how long
its limit has ``limit.left()``, and how to ``deliver()`` to its thread (under its own lock,
only while active: a watchdog that wakes late delivers nothing to a block that has ended);
the watchdog keeps when it last delivered to it (``delivered_at``), and delivers again only a
``retry`` later, however early it wakes. The thread is a bare one (not in
``threading.enumerate()``) that keeps watching when an exception is thrown at it, and ends
when no block is left."""

from __future__ import annotations

import _thread
import threading
import time
from typing import Any

_monotonic = time.monotonic


class Watchdog:
    """The one thread that watches every running block, started when first needed.

    It waits on a bare lock, not a ``threading.Event``: `add` runs in a block's thread, where a
    delivery can land between any two lines, and an Event's condition lock taken just before
    one landed would stay taken, hanging the watchdog and every block after."""

    def __init__(self, retry: float) -> None:
        self.retry = retry  # seconds between deliveries to a block whose time is up
        self.blocks: list[Any] = []
        self.lock = threading.Lock()
        self.wakeup = _thread.allocate_lock()
        self.wakeup.acquire()  # held: released to wake the watchdog
        self.running = False

    def add(self, block: Any) -> None:
        with self.lock:
            self.blocks.append(block)
            if not self.running:  # started before the flag: an interrupt between starts a spare one
                _thread.start_new_thread(self._watch, ())
                self.running = True
        self.wake()

    def wake(self) -> None:
        """Have the watchdog look at its blocks now (a new one, or one whose deadline moved)."""
        try:
            self.wakeup.release()
        except RuntimeError:  # already released: it wakes anyway
            pass

    def live(self) -> bool:
        return any(block.active for block in self.blocks)

    def _watch(self) -> None:
        try:
            while True:
                try:
                    if not self._round():
                        return
                except BaseException:  # an exception thrown at the watchdog: keep watching
                    continue
        except BaseException:  # killed after all: the next block starts another
            with self.lock:
                self.running = False

    def _round(self) -> bool:
        """Deliver to every block whose time is up; sleep until the next deadline. False: none left."""
        with self.lock:
            self.blocks = [block for block in self.blocks if block.active]
            blocks = list(self.blocks)
            if not blocks:
                self.running = False
                return False
        wait = 1.0
        for block in blocks:
            if not block.due():
                wait = min(wait, max(block.limit.left(), 0.005))
                continue
            since = _monotonic() - block.delivered_at  # a wake-up may come early: not more than one a `retry`
            if since >= self.retry:
                block.deliver()
                block.delivered_at, since = _monotonic(), 0.0
            wait = min(wait, self.retry - since)
        self.wakeup.acquire(timeout=wait)
        return True
