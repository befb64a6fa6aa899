"""interpreters/time_limit/watchdog.py: one thread delivers to every block whose time is up, not more than once a
`retry` however often it wakes, and ends when no block is left."""

from __future__ import annotations

import time

from deepagent_magics.interpreters.time_limit.watchdog import Watchdog


class Block:
    """What the watchdog reads of a block: due from the start, counting its deliveries."""

    def __init__(self):
        self.active, self.delivered_at, self.deliveries = True, float("-inf"), []
        self.limit = self

    def due(self):
        return True

    def left(self):
        return 0.0

    def deliver(self):
        self.deliveries.append(time.monotonic())


def test_deliveries_are_a_retry_apart_even_when_woken_early():
    watchdog, block = Watchdog(retry=0.1), Block()
    watchdog.add(block)
    for _ in range(50):  # a block starting elsewhere wakes the watchdog: it must not deliver again at once
        try:
            watchdog.wakeup.release()
        except RuntimeError:
            pass
        time.sleep(0.01)
    block.active = False
    gaps = [b - a for a, b in zip(block.deliveries, block.deliveries[1:])]
    assert len(block.deliveries) >= 2 and min(gaps) >= 0.1 - 0.001, gaps


def test_it_ends_when_no_block_is_left_and_a_new_block_starts_it_again():
    watchdog, block = Watchdog(retry=0.05), Block()
    watchdog.add(block)
    block.active = False
    deadline = time.monotonic() + 30
    while watchdog.running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not watchdog.running
    again = Block()
    watchdog.add(again)
    deadline = time.monotonic() + 30
    while not again.deliveries and time.monotonic() < deadline:
        time.sleep(0.01)
    again.active = False
    assert again.deliveries
