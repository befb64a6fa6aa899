"""Raising an exception in another thread (``PyThreadState_SetAsyncExc``), and taking one back.

Taking back one not yet raised (the call with NULL) leaves CPython 3.11's eval breaker set
for the whole process: only raising an asynchronous exception resets it. From then on
every function call takes the slow path, and with a trace or profile function on (a
debugger, ``%debug``, coverage) the first call spins for ever where nothing can stop it.
So `take_back` then raises one of its own in the calling thread, at once, and catches it.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from typing import Callable

from ..errors import DeepAgentSignal

_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc


class Reset(DeepAgentSignal):
    """Raised in the calling thread by `take_back` and caught there: what resets the eval breaker."""


def raise_in(thread_id: int, exc_type: type[BaseException]) -> None:
    """Raise ``exc_type`` in the thread at its next bytecode check (the class: created where it is raised)."""
    _set_async_exc(ctypes.c_ulong(thread_id), ctypes.py_object(exc_type))


def prepared(thread_id: int, exc_type: type[BaseException] | None) -> Callable[[], int]:
    """`raise_in` made ready: one call into C, its arguments built beforehand, so that the caller can
    test a condition and send with no point between them where a thread lets go of the GIL or raises
    what is pending (Python does so at a call's return, a loop's jump back or a function's start).
    With None, the call withdraws what is pending instead, leaving the eval breaker set: then send
    `Reset` to the calling thread the same way, and catch it."""
    return functools.partial(_set_async_exc, ctypes.c_ulong(thread_id),
                             None if exc_type is None else ctypes.py_object(exc_type))


def take_back(thread_id: int) -> None:
    """Withdraw an exception `raise_in` sent to the thread and that it has not raised yet."""
    _set_async_exc(ctypes.c_ulong(thread_id), None)
    me = threading.get_ident()
    raised = False
    try:
        _set_async_exc(ctypes.c_ulong(me), ctypes.py_object(Reset))  # raised as this call returns
        _checkpoint()  # or at the latest here, on entering a function
    except Reset:
        raised = True
    if not raised:  # an interpreter that checks elsewhere: do not leave it pending
        _set_async_exc(ctypes.c_ulong(me), None)


def _checkpoint() -> None:
    pass
