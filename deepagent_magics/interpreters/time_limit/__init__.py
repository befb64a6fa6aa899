"""The time limit of one code block (`limit`), with what it needs: the watchdog thread that delivers
(`watchdog`), the signal that wakes the main thread (`wake_signal`) and the refusals of the calls that
would touch the process's timers while agent code runs (`timer_patches`)."""

from .limit import ExecutionTimeout, TimeLimit, cut_short, host_code

__all__ = ["ExecutionTimeout", "TimeLimit", "cut_short", "host_code"]
