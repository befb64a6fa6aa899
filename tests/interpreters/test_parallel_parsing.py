"""Agent code parsed in several threads at once (an evaluation runs its examples in threads) never fails
with CPython 3.11's "AST constructor recursion depth mismatch" (gh-106905): interpreters/kernel_side.AST_LOCK."""

from __future__ import annotations

import sys
import threading
import time

from deepagent_magics.interpreters.shell import ShellInterpreter

# Sixty small functions: long enough that the AST converter allocates a lot while it works.
CODE = "\n".join(f"def f{i}(a, b=[1, 2, {{3: 4}}]):\n    return [x * {i} for x in range(a) if x and (b or {{}})]"
                 for i in range(60)) + "\nresult = f3(4)"


class _Cycle:
    """Cyclic garbage whose finaliser runs Python code: the collector runs it in the middle of a parse, and the
    thread switch it allows is what lets another thread's parse reset the shared counter."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        time.sleep(0)


def test_many_threads_running_agent_code_at_once_parse_it_without_a_system_error():
    errors: list[str] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def work() -> None:
        interpreter = ShellInterpreter({}, timeout=None)
        for _ in range(40):
            garbage = [_Cycle() for _ in range(20)]
            del garbage
            try:
                interpreter.execute(CODE)
            except Exception as exc:  # noqa: BLE001 - what the agent would read
                errors.append(f"{type(exc).__name__}: {exc}")
                return

    try:
        threads = [threading.Thread(target=work) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
