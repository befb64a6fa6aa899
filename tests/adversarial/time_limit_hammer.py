"""Many short time limits ending just as they fire, on the main thread and two workers at once (a script).

Run as ``python time_limit_hammer.py ROUNDS``; prints one JSON line: what reached code outside
the blocks, what host code was refused, and what of the limits was left behind. The GIL is
handed over every 10 microseconds (``sys.setswitchinterval``) so that a delivery can land
anywhere: between a block's last line and its end, in its start, in the watchdog's wake-up.
`test_time_limit_ends_with_its_block` runs it with processes spinning on every core.
"""

import ast
import json
import random
import signal
import sys
import threading
import time

from deepagent_magics.interpreters.time_limit import limit as time_limit
from deepagent_magics.interpreters.kernel_side import exec_step, split_trailing_expression
from deepagent_magics.interpreters.time_limit import ExecutionTimeout, TimeLimit
from deepagent_magics.interpreters.time_limit.wake_signal import WAKE

CODE = {  # the block's code, run as the shell runs an agent's step (its frames are the ones the limit traces)
    "<agent step 1>": "end = mono() + d\nwhile mono() < end:\n    pass\n",
    "<agent step 2>": "end = mono() + d\nwhile mono() < end:\n    try:\n        pass\n"
                      "    except BaseException:\n        pass\nd",
    "<agent step 3>": "c_sleep(d)",  # a sleep in C: on the main thread, the limit's signal interrupts it
}
STEPS = [(name, *split_trailing_expression(ast.parse(code, name, "exec"))) for name, code in CODE.items()]
REAL = (time.sleep, signal.signal, signal.setitimer, signal.alarm, signal.pthread_sigmask)
report = {"late": 0, "alarm_handler_calls": 0, "refused": [], "timeouts": 0, "errors": []}
lock = threading.Lock()


def count(key, n=1):
    with lock:
        report[key] += n


def hammer(rounds, seed, host_timers):
    rng = random.Random(seed)
    timeouts = 0
    for i in range(rounds):
        limit, length = rng.uniform(0, 0.003), rng.uniform(0, 0.004)
        name, body, tail = STEPS[i % len(STEPS)]
        namespace = {"mono": time.monotonic, "d": length, "c_sleep": REAL[0]}
        try:
            with TimeLimit(limit, lambda: 0, lambda: 0.0) as block:
                exec_step(body, tail, name, namespace, None, block)
        except ExecutionTimeout:
            timeouts += 1
        try:  # host code after the block: nothing of the limit may reach it
            total = 0
            for n in range(300):
                total += n
            time.sleep(0)
            if host_timers:  # what pytest-timeout does between tests, while other threads' blocks run
                try:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    signal.signal(signal.SIGALRM, on_alarm)
                except PermissionError as exc:
                    with lock:
                        report["refused"].append(str(exc)[:120])
        except ExecutionTimeout:
            count("late")
    count("timeouts", timeouts)
    return sys.gettrace()


def on_alarm(signum, frame):
    count("alarm_handler_calls")


def worker(rounds, seed, out):
    try:
        out.append(hammer(rounds, seed, host_timers=False))
    except BaseException as exc:  # noqa: BLE001 - reported
        with lock:
            report["errors"].append(f"worker: {type(exc).__name__}: {exc}")


def main(rounds):
    wake_before = signal.getsignal(WAKE)
    sys.setswitchinterval(1e-5)
    signal.signal(signal.SIGALRM, on_alarm)  # the user's (or the test runner's) own alarm handler
    traces = []
    workers = [threading.Thread(target=worker, args=(rounds, seed, traces)) for seed in (1, 2)]
    for thread in workers:
        thread.start()
    try:
        traces.append(hammer(rounds, 0, host_timers=True))
    except BaseException as exc:  # noqa: BLE001 - reported
        report["errors"].append(f"main: {type(exc).__name__}: {exc}")
    for thread in workers:
        thread.join()
    try:
        time.sleep(0.3)  # a late delivery or signal would land here
        for _ in range(100_000):
            pass
    except ExecutionTimeout:
        count("late")
    report["traces_left"] = [repr(t) for t in traces if t is not None]
    report["live_blocks"] = sum(block.active for block in time_limit._watchdog.blocks)
    report["patched_left"] = [f.__name__ for f, real in zip((time.sleep, signal.signal, signal.setitimer,
                                                             signal.alarm, signal.pthread_sigmask), REAL)
                              if f is not real]
    report["alarm_handler_kept"] = signal.getsignal(signal.SIGALRM) is on_alarm
    report["wake_handler_left"] = repr(signal.getsignal(WAKE)) if signal.getsignal(WAKE) is not wake_before else None
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
