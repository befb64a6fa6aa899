"""Row 14: how fast the command line and the extension start, against Python itself and DSPy's import.

Each command runs in a fresh process, interleaved round by round (a machine that slows down for a while
slows every peer of that round):

- ``python -c pass`` (the floor) against ``deepagent --help`` (the console script's own code: the
  command line's ``main``), which imports neither DSPy nor LiteLLM;
- ``python -c "import dspy"`` against a scripted ``deepagent run`` (a two-step script, ``--max-depth 0``,
  ``--quiet``): what a run costs beyond importing the library it is built on.

Measured as each process's CPU time (user + system, from the kernel's accounting of children), which other
work on a shared machine does not inflate, and its wall time; the median over rounds of each round's ratio.
And in a fresh interpreter, the package's modules that ``import deepagent_magics`` and
``%load_ext deepagent_magics`` load (issue 27 counted 110 and 161 of 185 before they were loaded on first use).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import Config, median, result, table, target

NAME = "start_up"
TITLE = "14. Start-up: deepagent --help, a scripted run, %load_ext"
COMMAND = "python -m bench.run --only start_up"
BEFORE = {"import": 110, "load_ext": 161}  # the package's modules loaded before (issue 27), of 185

MAIN = "import sys; from deepagent_magics.cli import main; sys.exit(main())"  # what the console script runs
COUNT = """
import json, sys
before = set(sys.modules)
import deepagent_magics
imported = [m for m in sys.modules if m.startswith("deepagent_magics")]
from IPython.core.interactiveshell import InteractiveShell
InteractiveShell.instance().run_line_magic("load_ext", "deepagent_magics")
loaded = [m for m in sys.modules if m.startswith("deepagent_magics")]
print(json.dumps({"import": len(imported), "load_ext": len(loaded), "load_ext_all": len(set(sys.modules) - before),
                  "libraries": [name for name in ("dspy", "litellm") if name in sys.modules]}))
"""


def _timed(command: list[str], cwd: str) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh process (it must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{command}: exit {done.returncode}: {done.stderr[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _module_count() -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", COUNT], capture_output=True, text=True, timeout=600, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def run(config: Config) -> dict[str, Any]:
    rounds = config.reps(normal=max(config.repeat, 5), smoke=1)
    folder = tempfile.mkdtemp(prefix="bench-start-up-")
    Path(folder, "steps.json").write_text(json.dumps([["Look", "x = 1 + 1\nprint(x)"], ["Done", "SUBMIT(result=str(x))"]]))
    python = sys.executable
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "deepagent --help": [python, "-c", MAIN, "--help"],
        'python -c "import dspy"': [python, "-c", "import dspy"],
        "deepagent run (scripted)": [python, "-c", MAIN, "run", "Add one and one.", "--lm", "scripted:steps.json",
                                     "--max-depth", "0", "--quiet", "--workspace", "ws"],
    }
    os.environ.pop("DEEPAGENT_LM", None)
    for command in commands.values():  # warm the file cache (and compile the bytecode) once
        _timed(command, folder)
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for round_ in range(rounds):
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            seconds, used = _timed(commands[name], folder)
            wall[name].append(seconds)
            cpu[name].append(used)

    def paired(samples: dict[str, list[float]], mine: str, peer: str) -> float:
        return median(a / b for a, b in zip(samples[mine], samples[peer]))

    pairs = [("deepagent --help", "python -c pass"), ("deepagent run (scripted)", 'python -c "import dspy"')]
    counts = _module_count()
    out = result(NAME, TITLE, COMMAND)
    out["tables"].append(table(
        f"Fresh processes, {rounds} interleaved rounds: median CPU time (user + system) and wall time",
        ["command", "CPU ms", "wall ms"],
        [[name, f"{median(cpu[name]) * 1000:.0f}", f"{median(wall[name]) * 1000:.0f}"] for name in names]))
    out["tables"].append(table(
        "Ratios (median over rounds of each round's ratio)", ["command", "against", "CPU", "wall"],
        [[mine, peer, f"{paired(cpu, mine, peer):.2f}×", f"{paired(wall, mine, peer):.2f}×"] for mine, peer in pairs]))
    out["tables"].append(table(
        "The package's modules loaded in a fresh interpreter", ["by", "now", "before (issue 27)", "× before"],
        [[what, counts[key], BEFORE[key], f"{counts[key] / BEFORE[key]:.2f}×"]
         for what, key in (("import deepagent_magics", "import"), ("%load_ext deepagent_magics", "load_ext"))]))
    out["targets"].append(target("%load_ext loads neither DSPy nor LiteLLM", "none",
                                 ", ".join(counts["libraries"]) or "none", not counts["libraries"]))
    out["notes"].append(
        "deepagent --help and every bad-input error of the command line import neither DSPy nor LiteLLM "
        "(tests/test_start_fast.py); a run imports DSPy when it makes its model, after its input is checked. "
        "With DSPy 3.4 a scripted run imports no LiteLLM at all (DSPy's own client loads it for a provider "
        "model); the price-list fetch an offline run does not need is skipped while a run works "
        "(core/model/price_list.py). What --help costs beyond Python's start is mostly the package's own "
        "__init__ (the default extensions' registry, core.loop.extensions, and the run's types it names, "
        "about 40 ms of the import on this machine: python -X importtime), and argparse building the parser.")
    out["notes"].append(
        f"%load_ext loads {counts['load_ext']} of the package's modules ({counts['load_ext_all']} modules in all, "
        "IPython's and the standard library's that were not loaded yet included): the magics and what a first "
        "cell's flags are checked with; the agent, DSPy, the tuning room, the records' listing and export, the "
        "display and the kernels' pool are imported by the first magic that uses them.")
    out["notes"].append(
        "Before (the same benchmark on main just before the names moved to first use, commit 67867b8, the same "
        "hour): deepagent --help 1,985 ms of CPU against python -c pass's 21 (97×; it imported DSPy), the "
        "scripted run 1.26× DSPy's import (unchanged: a run imports DSPy and the agent either way), and the "
        "package's modules loaded by import deepagent_magics and %load_ext 126 and 185 (the issue counted 110 "
        "and 161 of 185 when it was written).")
    out["raw"] = {"rounds": rounds, "wall_s": wall, "cpu_s": cpu, "modules": counts}
    return out
