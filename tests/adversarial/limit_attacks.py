"""The attacks of ``test_subagent_resource_limits``: each is a sub-agent's code, run by a real agent tree.

`attack` runs one: a root agent (a scripted LM) delegates to a sub-agent whose first step is the attack
and whose second step would say it got away with it; its kernel is a real sandboxed kernel from a pool
whose limits are set low for the attack. Meanwhile a thread of the host ticks. The report says what the
parent read, what the sub-agent's record says, how far the attack got, how often the host ticked while
it ran, and what it left behind (processes, cgroups that were not there before it began). It runs in the
test's own process (as root) and in a host dropped to an unprivileged user (`sandbox_hosts`), so both
paths are proven.

Every attack is bounded: where no limit holds it (today's main), it stops by itself well short of harming
the machine (150 processes, 1 GiB of memory, 1000 MiB of disk, 30 CPU seconds, 1000 open files).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

STOPPED = "Error: the sub-agent was stopped: "
GOT_AWAY = "the attack was not stopped"

# name: (the pool's limits, the sub-agent's attack step)
ATTACKS = {
    "fork bomb": (dict(processes=48), """
        import os, time
        for i in range(150):
            if os.fork() == 0:
                time.sleep(120)
                os._exit(0)
            with open('progress.txt', 'w') as f:
                f.write(str(i + 1))
        """),
    "memory hog": (dict(memory=256), """
        hoard = []
        for i in range(64):
            hoard.append(bytearray(b'x') * (16 << 20))
            with open('progress.txt', 'w') as f:
                f.write(str((i + 1) * 16))
        """),
    "disk fill": (dict(disk=32, file_size=64), """
        for i in range(1000):
            with open(f'fill-{i}.bin', 'wb') as f:
                f.write(b'x' * (1 << 20))
        """),
    "tmp fill": (dict(disk=32, file_size=64), """
        for i in range(200):
            with open(f'/tmp/fill-{i}.bin', 'wb') as f:
                f.write(b'x' * (1 << 20))
            with open('progress.txt', 'w') as f:
                f.write(str(i + 1))
        """),
    "cpu spinner": (dict(cpu_time=2), """
        import time
        start = time.process_time()
        while time.process_time() - start < 30:
            pass
        """),
    "open files": (dict(open_files=128), """
        import os
        kept = []
        for i in range(1000):
            kept.append(open(os.devnull))
            with open('progress.txt', 'w') as f:
                f.write(str(i + 1))
        """),
    "huge file": (dict(file_size=8), """
        with open('huge.bin', 'wb') as f:
            for i in range(64):
                f.write(b'x' * (1 << 20))
        """),
}


def attack(name: str, workspace: str) -> dict:
    """Run the attack ``name`` as a sub-agent's first step in ``workspace``; what happened, as plain data."""
    import textwrap

    import psutil

    from deepagent_magics import DeepAgent
    from deepagent_magics.interpreters.pool import KernelPool, cgroups
    from deepagent_magics.interpreters.pool.limits import ResourceLimits
    from deepagent_magics.interpreters.pool.sandbox import SandboxPolicy
    from deepagent_magics.testing import ScriptedLM

    limits, code = ATTACKS[name]
    before = set(_groups_here(cgroups))  # groups of kernels other tests keep (a warm default pool): not ours
    pool = KernelPool(size=0, sandbox=SandboxPolicy(limits=ResourceLimits(**limits)))
    taken: list = []
    take = pool.take

    def recording_take(*args, **kwargs):
        kernel = take(*args, **kwargs)
        group = kernel.limits.group if kernel.limits is not None else None
        taken.append((kernel.pid, kernel.signal_group, dict(group.folders) if group is not None else {}))
        return kernel

    pool.take = recording_take
    ticks, done = [0], threading.Event()

    def tick():
        while not done.wait(0.02):
            ticks[0] += 1

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    lm = ScriptedLM(scripts={
        "LIMITS-ROOT": [("Delegate the work.", "before = ticks[0]\nr = delegate('LIMITS-CHILD: do the work')\n"
                                               "during = ticks[0] - before\nprint(r)"),
                        ("Report.", "SUBMIT(result=r)")],
        "LIMITS-CHILD": [("Do the work.", textwrap.dedent(code)), ("Report.", f"SUBMIT(result={GOT_AWAY!r})")],
    })
    namespace = {"ticks": ticks}
    try:
        run = DeepAgent(lm=lm, workspace=workspace, pool=pool, timeout=90, subagent_timeout=240).run(
            "LIMITS-ROOT: delegate the work", namespace=namespace)
    finally:
        done.set()
        pool.stop()
    [child] = run.children
    here = [folder for folder in _groups_here(cgroups) if folder not in before]
    progress = Path(workspace, "progress.txt")
    return {
        "status": run.status, "error": run.error,
        "read": run.result, "ticks": namespace.get("during"),
        "child_status": child.status, "child_error": child.error, "child_steps": len(child.steps),
        "limits": child.to_dict()["config"].get("limits"),
        "progress": int(progress.read_text()) if progress.exists() else None,
        "workspace_mib": sum(path.stat().st_size for path in Path(workspace).glob("*.bin")) / (1 << 20),
        "kernels_left": _still_alive([pid for pid, inner, _ in taken for pid in (pid, inner) if pid]),
        "groups_left": [folder for _, _, folders in taken for folder in folders.values() if os.path.exists(folder)]
                       + here,
        "children_left": [child.pid for child in psutil.Process().children(recursive=True)
                          if "keeper.py" not in " ".join(_cmdline(child))],
        "user": os.geteuid(),
    }


def _groups_here(cgroups) -> list[str]:
    """The kernel groups this process has now, in every controller's host folder."""
    mechanism = cgroups.mechanism()
    return [os.path.join(folder, entry) for folder in (mechanism.folders.values() if mechanism else [])
            for entry in os.listdir(folder) if os.path.isdir(os.path.join(folder, entry))]


def _still_alive(pids: list[int], seconds: float = 10.0) -> list[int]:
    """Those of ``pids`` still alive after a while: a killed process with much memory takes a moment to exit."""
    deadline = time.monotonic() + seconds
    while any(map(_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if _alive(pid)]


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _cmdline(process) -> list[str]:
    try:
        return process.cmdline()
    except Exception:  # gone meanwhile
        return []

