"""Row 11: what the runtime checks' audit hook costs the user's own code.

Approval's runtime checks (`interpreters/runtime_checks`) add one audit hook to the process the
first time a run asks for approval (or has spend caps), and Python cannot take a hook out again.
Between runs it must cost the user's code next to nothing. Each round starts three fresh Python
processes, interleaved: one with no hook, one with the hook installed and no step running (the
user's code after a run), and one where a thread the agent left behind is still alive (then each
*watched* event of the user's code, a file opened or a socket made, is read a little further). Each
times the same user code, per operation: an audit event the hook watches and one it does not, raised
with ``sys.audit`` (the hook's own share, free of I/O: what the targets read), then everyday
operations for scale: a file opened for writing and closed, ``exec`` of a compiled code object, a
socket made and closed, and ``len`` on a list (no audit event at all: the machine's noise).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from .common import Config, median, result, table, target

NAME = "audit_hook"
TITLE = "11. Approval's audit hook: the cost to the user's own code"
COMMAND = "python -m bench.run --only audit_hook"
ROOT = Path(__file__).resolve().parent.parent
MODES = {"none": "no hook (before any run asked for approval)", "idle": "hook installed, no step running",
         "lingering": "hook installed, a thread the agent started still alive"}
OPS = {"audit_watched": "an event the hook watches (sys.audit('open', path, 'w', flags))",
       "audit_other": "an event it does not watch (sys.audit('exec', code))",
       "open_write": "open(path, 'w') + close (one watched event)", "exec": "exec(small code object)",
       "socket": "socket() + close", "len": "len(list) (no audit event: the machine's noise)"}
TIMED = ("audit_watched", "audit_other")  # the hook's own cost, free of I/O noise: what the targets read

CHILD = textwrap.dedent("""
    import json, os, socket, sys, tempfile, threading, time, timeit
    mode, number = sys.argv[1], int(sys.argv[2])
    from deepagent_magics.interpreters.kernel_side import exec_step  # the same imports in every mode
    from deepagent_magics.interpreters.runtime_checks import hook
    if mode != "none":
        hook.install(exec_step.__code__)
    if mode == "lingering":  # a step starts a thread that outlives it: the hook's registry is not empty
        import ast
        release = threading.Event()
        code = "import threading\\nleft = threading.Thread(target=release.wait)\\nleft.start()"
        namespace = {"release": release}
        watched = hook.scope(ask=lambda action: None, rules={"writes_outside_workspace", "network"})
        exec_step(ast.parse(code), None, "<agent step 1>", namespace, watched)
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "f.txt")
    compiled = compile("x = 1", "<bench>", "exec")
    items = list(range(10))
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    ops = {
        "audit_watched": lambda: sys.audit("open", path, "w", flags),
        "audit_other": lambda: sys.audit("exec", compiled),
        "open_write": lambda: open(path, "w").close(),
        "exec": lambda: exec(compiled, {}),
        "socket": lambda: socket.socket().close(),
        "len": lambda: len(items),
    }
    out = {}
    for name, op in ops.items():
        out[name] = min(timeit.repeat(op, number=number, repeat=3)) / number
    if mode == "lingering":
        release.set()
    print(json.dumps(out))
""")


def _one(mode: str, number: int) -> dict[str, float]:
    completed = subprocess.run([sys.executable, "-c", CHILD, mode, str(number)], cwd=ROOT, capture_output=True,
                               text=True, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    if completed.returncode != 0:
        raise RuntimeError(completed.stderr.strip().splitlines()[-1] if completed.stderr.strip() else "child failed")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def run(config: Config) -> dict[str, Any]:
    rounds, number = config.reps(normal=max(config.repeat, 5)), 200 if config.smoke else 2_000
    samples: dict[str, dict[str, list[float]]] = {mode: {op: [] for op in OPS} for mode in MODES}
    for _ in range(rounds):
        for mode in MODES:  # interleaved: noise on the machine falls on every mode alike
            for op, seconds in _one(mode, number).items():
                samples[mode][op].append(seconds)
    per_op = {mode: {op: median(values) * 1e6 for op, values in ops.items()} for mode, ops in samples.items()}
    rows = []
    for op, label in OPS.items():
        base = per_op["none"][op]
        rows.append([label, f"{base:.2f}"] + [f"{per_op[mode][op]:.2f} (+{per_op[mode][op] - base:.2f})"
                                               for mode in ("idle", "lingering")])
    idle_extra = max(per_op["idle"][op] - per_op["none"][op] for op in TIMED)
    lingering_extra = max(per_op["lingering"][op] - per_op["none"][op] for op in TIMED)
    return result(
        NAME, TITLE, COMMAND,
        tables=[table("µs per operation of the user's code (median over rounds; + the hook's share)",
                      ["operation", MODES["none"], MODES["idle"], MODES["lingering"]], rows)],
        targets=[
            target("the hook's time per audit event of the user's code, no step running", "< 1 µs",
                   f"{idle_extra:.2f} µs", idle_extra < 1.0, idle_extra / 1.0 if idle_extra > 0 else None),
            target("the hook's time per audit event while an agent's thread outlives its run", "< 5 µs",
                   f"{lingering_extra:.2f} µs", lingering_extra < 5.0, lingering_extra / 5.0 if lingering_extra > 0 else None),
        ],
        notes=["The hook returns after one set lookup for events it does not watch (compile, exec, import) and after "
               "a truth test of its registry for those it does (open, socket): no step runs, nothing is registered. "
               "A thread the agent's code left running keeps one registration until it ends; a watched event of the "
               "user's code then also reads what the event is and whether its thread is registered, and returns. "
               "The everyday operations carry the machine's noise (file and socket calls move by several µs from "
               "round to round on a shared machine); the sys.audit rows are the hook's own share."],
        raw={"per_op_us": per_op, "rounds": rounds, "number": number},
    )
