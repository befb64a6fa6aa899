"""Row 6: the cost of showing one more step stays flat as the run grows.

In a real ipykernel (widgets have a real comm there, and every change is a
message on the wire) a run is shown with `display.show_run` exactly as the magic
does it, then fed the events of 500 steps (LM usage, step started, step
finished, each with realistic reasoning, code and output). The time spent in the
display's listener is recorded per step; the figure at step n is the median over
the ten steps up to n, over the rounds. The text display is measured the same way
beside it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import Config, median, not_available, result, table, target

NAME = "display_update"
TITLE = "6. Display: one step's update to the live dashboard"
COMMAND = "python -m bench.run --only display_update"
MARKS = (10, 100, 500)
PROFILE_STEPS = 100
ROOT = Path(__file__).resolve().parent.parent

REASONING = ("Look at the regional totals again, this time split by quarter, and check whether the Q3 drop is "
             "concentrated in a few stores or spread evenly across the region before writing it up.")
CODE = ("by_store = sales[sales.quarter == 'Q3'].groupby(['region', 'store']).amount.sum()\n"
        "drops = (by_store - baseline).sort_values()\n"
        "print(drops.head(10))\n"
        "print(drops.describe())")
OUTPUT = "\n".join(f"north  store-{i:03d}   -{1000 + 37 * i:,.2f}" for i in range(10)) + "\ncount    84.0\nmean   -412.3"


def available() -> str | None:
    try:
        import deepagent_magics.display.dashboard  # noqa: F401
    except ImportError as exc:
        return f"deepagent_magics.display.dashboard is not in this tree ({exc})"
    return None


def measure(steps: int = 500, rounds: int = 3, modes: tuple[str, ...] = ("widgets", "text"),
            profile: bool = False) -> dict[str, Any]:
    """Inside a kernel: per-step listener time of each display mode, over ``rounds`` runs of ``steps`` steps."""
    from IPython import get_ipython

    from deepagent_magics.display import show_run
    from deepagent_magics.core.run.run import Run

    shell = get_ipython()
    workspace = tempfile.mkdtemp(prefix="bench-dash-")
    for i in range(20):
        Path(workspace, f"notes/file{i}.md").parent.mkdir(exist_ok=True)
        Path(workspace, f"notes/file{i}.md").write_text("x" * 500)
    out: dict[str, Any] = {}
    for mode in modes:
        _one_run(Run, show_run, shell, mode, 20, workspace)  # warm up: imports, lexers, widget classes
        samples = []
        for _ in range(rounds):
            samples.append(_one_run(Run, show_run, shell, mode, steps, workspace))
        out[mode] = samples
    if profile:
        from bench.common import profile as run_profile

        report = run_profile(lambda: _one_run(Run, show_run, shell, "widgets", PROFILE_STEPS, workspace))
        out["profile"] = report
    return out


def _one_run(Run, show_run, shell, mode: str, steps: int, workspace: str) -> list[float]:
    run = Run("Find the regions whose sales fell most in Q3", config={"workspace": workspace, "max_iters": steps})
    spent = [0.0]
    subscribe = run.subscribe

    def timed_subscribe(listener):
        def timed(event):
            started = time.perf_counter()
            try:
                listener(event)
            finally:
                spent[0] += time.perf_counter() - started

        return subscribe(timed)

    run.subscribe = timed_subscribe
    view = show_run(run, shell=shell, mode=mode)
    run.start()
    per_step = []
    for index in range(1, steps + 1):
        spent[0] = 0.0
        run.record_usage("scripted", 1200 + index, 80, None)
        run.begin_step(f"{index}: {REASONING}", CODE)
        run.end_step(OUTPUT)
        per_step.append(spent[0])
    run.finish("finished", result="done")
    view.close()
    return per_step


def run(config: Config) -> dict[str, Any]:
    reason = available()
    if reason:
        return not_available(NAME, TITLE, COMMAND, f"not available in this run: {reason}")
    steps = 20 if config.smoke else max(MARKS)
    marks = [mark for mark in MARKS if mark <= steps] or [steps]
    rounds = config.reps(normal=3)
    data = _in_kernel(steps, rounds, profile=config.profile and not config.smoke)

    out = result(NAME, TITLE, COMMAND)
    rows = []
    figures: dict[str, dict[int, float]] = {}
    for mode in ("widgets", "text"):
        if mode not in data:
            continue
        figures[mode] = {mark: median(s for sample in data[mode] for s in sample[max(0, mark - 10):mark]) for mark in marks}
        first = figures[mode][marks[0]]
        rows.append([{"widgets": "live dashboard (ipywidgets)", "text": "text progress"}[mode]]
                    + [f"{figures[mode][mark] * 1000:.3f}" for mark in marks]
                    + [f"{figures[mode][marks[-1]] / first:.2f}×" if first else "n/a"])
    out["tables"].append(table(
        f"ms spent in the display per step, in a real ipykernel, median of the 10 steps up to step n over {rounds} runs",
        ["display"] + [f"step {mark}" for mark in marks] + [f"step {marks[-1]} ÷ step {marks[0]}"],
        rows,
    ))
    widgets = figures.get("widgets", {})
    if widgets:
        last, first = widgets[marks[-1]], widgets[marks[0]]
        out["targets"].append(target(f"dashboard update at step {marks[-1]} vs step {marks[0]}", "≤ 1.5×",
                                     f"{last / first:.2f}×", last <= 1.5 * first, last / (1.5 * first)))
        out["targets"].append(target(f"dashboard update at step {marks[-1]}", "≤ 2 ms", f"{last * 1000:.3f} ms", last <= 0.002, last / 0.002))
    out["notes"].append(
        "A step's update is what the display does for the step's three events (LM usage, step started, step "
        "finished): the dashboard appends one collapsible entry (two widgets sharing one layout and style) to the "
        "current page of 50, highlights the step's code once, patches the step's body and title and rewrites the "
        "status line; the workspace tree (20 files here) is patched from file events and re-read at most every "
        "2 s. Each widget change is serialised and sent on the kernel's iopub channel (no frontend is attached, "
        "so nothing renders)."
    )
    if "profile" in data and widgets:
        last = widgets[marks[-1]]
        parts = [f"{item['share'] * last * 1000:.1f} ms {item['component']}" for item in data["profile"]["components"][:4]]
        out["notes"].append(
            f"At step {marks[-1]} one step's update takes {last * 1000:.1f} ms"
            + (f", {last / 0.002:.1f}× the 2 ms goal" if last > 0.002 else "")
            + "; spread by the profile's shares, that is about " + ", ".join(parts) + ". None of it grows with the "
            "run, which is why the cost is flat."
        )
    if "profile" in data:
        out["profile"] = {"what": f"one {PROFILE_STEPS}-step run of the dashboard in the kernel under pyinstrument; self time by component",
                          "runs": {"live dashboard": data["profile"]["components"]},
                          "tree": data["profile"]["tree"]}
    out["raw"] = {"steps": steps, "rounds": rounds, "marks": marks, "figures_s": figures,
                  "per_step_s": {mode: data[mode] for mode in ("widgets", "text") if mode in data}}
    return out


def _in_kernel(steps: int, rounds: int, profile: bool) -> dict[str, Any]:
    """Run `measure` in a fresh ipykernel; its JSON comes back on stdout."""
    from jupyter_client.manager import start_new_kernel

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(ROOT), env=env)
    chunks: list[str] = []
    errors: list[str] = []

    def on_message(message: dict[str, Any]) -> None:
        kind, content = message["header"]["msg_type"], message["content"]
        if kind == "stream" and content.get("name") == "stdout":
            chunks.append(content["text"])
        elif kind == "error":
            errors.append("\n".join(content.get("traceback", [])))

    code = ("import json, sys\nfrom bench.display_update import measure\n"
            f"_bench = measure(steps={steps}, rounds={rounds}, profile={profile})\n"
            "sys.__stdout__.flush()\nprint('@@BENCH@@' + json.dumps(_bench) + '@@END@@')\n")
    try:
        client.execute_interactive(code, timeout=240, output_hook=on_message)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    text = "".join(chunks)
    if "@@BENCH@@" not in text:
        raise RuntimeError("the kernel did not report: " + ("\n".join(errors) or text[-2000:]))
    return json.loads(text.split("@@BENCH@@", 1)[1].split("@@END@@", 1)[0])
