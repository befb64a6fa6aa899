"""Rebuilding a checkpoint's unpicklable variables by running their recorded code again.

Code that runs again in the notebook is the user's decision: `restore` (checkpoint.py) replays
only when its ``approve`` callable, shown the code, says yes (the magic asks on stdin; with no
one to ask, nothing is replayed). The code runs in a scratch namespace holding *copies* of the
values it names, so ``orders.append(-99)`` in a recorded step cannot change the list the user
rebuilt since; only the names asked for are taken from the scratch. What the code does outside
the namespace (files it appends to, requests it sends) happens again: that is what the user is
shown and asked about.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import io
import types
from typing import Any, Callable

from ..errors import DeepAgentSignal

SUBMIT_STUB = "def SUBMIT(*args, **kwargs):\n    raise _ReplayDone()\n"
Approve = Callable[[list[str], str], "tuple[bool, str]"]  # (names, code) -> (run it?, why not)


class _ReplayDone(DeepAgentSignal, Exception):
    """The replayed code called SUBMIT: its run is done (an Exception too, as it always was)."""


def recorded_code(runs: Any) -> list[tuple[str, str]]:
    """(run id, code) for each recorded step, from a manifest's ``replay`` list; anything malformed is left out."""
    out: list[tuple[str, str]] = []
    for run in runs if isinstance(runs, list) else []:
        if not isinstance(run, dict) or not isinstance(run.get("code"), list):
            continue
        out += [(str(run.get("run"))[:80], code) for code in run["code"] if isinstance(code, str) and code.strip()]
    return out


def shown(steps: list[tuple[str, str]]) -> str:
    """The code as the user is shown it before approving: each step under its run."""
    lines, last = [], None
    for run, code in steps:
        if run != last:
            lines.append(f"# --- recorded by run {run}")
            last = run
        lines.append(code.rstrip())
    return "\n".join(lines)


def replay(steps: list[tuple[str, str]], namespace: dict[str, Any], wanted: set[str]) -> dict[str, Any]:
    """Run ``steps`` in order in a scratch namespace of copies; the wanted names they made."""
    scratch = _copies(namespace, steps)
    scratch["_ReplayDone"] = _ReplayDone
    exec(compile(SUBMIT_STUB, "<deepagent replay>", "exec"), scratch)
    submitted: set[str] = set()
    for run, code in steps:
        if run in submitted:  # SUBMIT ended that run: its later steps never ran
            continue
        try:
            with _quiet():
                exec(compile(code, f"<replay of run {run}>", "exec"), scratch)
        except _ReplayDone:
            submitted.add(run)
        except BaseException as exc:  # a step that failed then, or needs a tool: the next one may still work
            if isinstance(exc, KeyboardInterrupt):
                raise
            continue
    return {name: scratch[name] for name in wanted if name in scratch}


def _copies(namespace: dict[str, Any], steps: list[tuple[str, str]]) -> dict[str, Any]:
    """Deep copies of the namespace's values the code names (modules as they are); one that cannot be copied is left out."""
    named: set[str] = set()
    for _, code in steps:
        try:
            named |= {node.id for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Name)}
        except (SyntaxError, ValueError, RecursionError):
            continue
    scratch: dict[str, Any] = {}
    for name in named & set(namespace):
        value = namespace[name]
        if isinstance(value, (types.ModuleType, types.FunctionType, type)):
            scratch[name] = value
            continue
        try:
            scratch[name] = copy.deepcopy(value)
        except Exception:  # a value that cannot be copied is left out of the replay's scratch
            continue
    return scratch


@contextlib.contextmanager
def _quiet():
    """Replayed code prints nothing into the cell."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield
