"""tuning/machine_load.py: what a benchmark's time was spent against: wall time, this process's CPU time (a model
served in the process works on its threads) and the machine's load average, sampled while it runs."""

from __future__ import annotations

import os
import threading
import time

from deepagent_magics.tuning.machine_load import MachineLoad, cpu_seconds


def spin(until: threading.Event, spent: list[float]) -> None:
    while not until.is_set():
        sum(range(1000))
    spent.append(time.thread_time())  # this thread's own CPU seconds


def test_the_cpu_time_of_every_thread_of_the_process_is_counted_and_the_load_sampled_while_it_runs():
    before = cpu_seconds()
    stop, spent = threading.Event(), []
    with MachineLoad(every=0.01) as load:
        worker = threading.Thread(target=spin, args=(stop, spent))  # as llama.cpp's threads would in this process
        worker.start()
        for _ in range(3000):  # the watcher samples on its own while the work goes on (bounded: no hang if not)
            if len(load.samples) >= 10:
                break
            stop.wait(0.01)
        stop.set()
        worker.join()
    summary = load.summary()
    assert load.cpu >= spent[0] > 0 and cpu_seconds() - before >= load.cpu  # the worker's time is in it
    assert summary["cpu_seconds"] == round(load.cpu, 1)
    assert load.wall > 0 and summary["cpus"] == os.cpu_count()
    assert len(load.samples) >= 11  # at the start, while running, at the end
    assert summary["load_min"] <= summary["load_mean"] <= summary["load_max"] == round(max(load.samples), 2)
    assert not any(thread.name == "deepagent-bench-load" for thread in threading.enumerate())  # the watcher ended


def test_without_a_load_average_the_summary_says_none_not_zero(monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (_ for _ in ()).throw(OSError("no load average here")))
    with MachineLoad(every=60) as load:
        pass
    summary = load.summary()
    assert load.samples == [] and summary["load_mean"] is None and summary["load_max"] is None
