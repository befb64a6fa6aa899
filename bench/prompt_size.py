"""Row 4: the prompt does not grow with the data, and summarising the notebook is cheap.

The same 10-step script runs twice through `DeepAgent.run`, once with a 1 KB and
once with a 100 MB object in the notebook (every step looks at it); what counts
is every character sent to the LM over the run. Then `summarize_namespace`, what
builds the prompt's ``notebook_variables``, is timed on a namespace of 1,000
variables of mixed kinds and sizes.
"""

from __future__ import annotations

import time
from typing import Any

from . import peers
from .common import Config, median, ms, percentile, quiet_gc, result, table, target
from .trajectory import actions

NAME = "prompt_size"
TITLE = "4. Prompt size against data size"
COMMAND = "python -m bench.run --only prompt_size"

SMALL = 1024
LARGE = 100 * 2**20


def run(config: Config) -> dict[str, Any]:
    steps = 4 if config.smoke else 10
    large = 2**20 if config.smoke else LARGE
    script = actions(steps, touch="data")
    objects = {"1 KB": "x" * SMALL, _size(large): "x" * large}
    sizes: dict[str, dict[str, Any]] = {}
    for _ in range(config.reps(normal=5)):  # interleaved, for the run-time ratio
        for label, data in objects.items():
            quiet_gc()
            play = peers.deepagent(script, namespace={"data": data})
            if play.calls != steps:
                raise RuntimeError(f"the {label} run made {play.calls} LM calls: {play.result!r}")
            entry = sizes.setdefault(label, {"chars": sum(play.prompt_chars), "per_call": play.prompt_chars, "walls": []})
            entry["walls"].append(play.wall)
    objects.clear()
    for entry in sizes.values():
        entry["wall"] = median(entry["walls"])
    (small_label, small), (large_label, big) = sizes.items()
    growth = big["chars"] / small["chars"]

    namespace = _namespace(1000 if not config.smoke else 100)
    summary_times = _time_summary(namespace, config.reps(normal=30, smoke=3))
    from deepagent_magics.core.loop.variables import summarize_namespace

    summary_text = summarize_namespace(namespace)
    summary_ms = median(summary_times)

    out = result(NAME, TITLE, COMMAND)
    out["tables"].append(table(
        f"Characters sent to the LM over one {steps}-step DeepAgent run",
        ["object in the notebook", "chars sent (all calls)", "chars in the last call", "× the 1 KB run", "run time × the 1 KB run"],
        [[small_label, f"{small['chars']:,}", f"{small['per_call'][-1]:,}", "1.000×", "1.00×"],
         [large_label, f"{big['chars']:,}", f"{big['per_call'][-1]:,}", f"{growth:.3f}×", f"{big['wall'] / small['wall']:.2f}×"]],
    ))
    out["tables"].append(table(
        f"summarize_namespace on {len(namespace):,} variables (median of {len(summary_times)})",
        ["variables", "median ms", "p95 ms", "summary chars"],
        [[f"{len(namespace):,}", f"{summary_ms * 1000:.2f}", f"{ms(percentile(summary_times, 95)):.2f}", f"{len(summary_text):,}"]],
    ))
    out["targets"].append(target(f"prompt chars, {large_label} vs 1 KB object", "≤ 1.05×", f"{growth:.3f}×", growth <= 1.05, growth / 1.05))
    out["targets"].append(target(f"summary of {len(namespace):,} variables", "≤ 50 ms", f"{summary_ms * 1000:.2f} ms", summary_ms <= 0.050, summary_ms / 0.050))
    out["notes"].append(
        "The object is a str; every code step prints its length, so the step outputs differ only in the digits. "
        "The notebook summary names its type and size (`str, 104,857,600 chars = 'xxx...'`) and never the data: "
        "the difference between the runs is those few characters per call."
    )
    out["notes"].append(
        "The 1,000-variable namespace mixes ints, floats, short and 1 MB strings, lists and dicts of 10,000 items, "
        "nested containers, bytes, sets, objects, functions, classes and modules; the summary lists the first 60 "
        "variables and counts the rest, within 6,000 characters."
    )
    out["raw"] = {"steps": steps, "prompt_chars": sizes, "summary_s": summary_times, "summary_chars": len(summary_text)}
    return out


def _size(size: int) -> str:
    return f"{size / 2**20:.0f} MB" if size >= 2**20 else f"{size / 1024:.0f} KB"


class _Record:
    def __init__(self, index: int):
        self.index = index


def _function(x):
    return x


def _namespace(count: int) -> dict[str, Any]:
    """``count`` variables of the kinds a notebook holds, some of them large."""
    import collections
    import json
    import re

    big_text = "y" * 2**20
    big_list = list(range(10_000))
    big_dict = {f"key{i}": i for i in range(10_000)}
    makers = [
        lambda i: i,
        lambda i: i / 7,
        lambda i: f"value number {i}",
        lambda i: big_text,
        lambda i: big_list,
        lambda i: big_dict,
        lambda i: [[i, {"a": [1, 2, 3]}], (i, "x")],
        lambda i: b"\x00" * 4096,
        lambda i: {i, i + 1, i + 2},
        lambda i: _Record(i),
        lambda i: collections.Counter("abracadabra"),
        lambda i: _function,
        lambda i: _Record,
        lambda i: (json, re, collections)[i % 3],
        lambda i: None,
    ]
    return {f"var_{i}": makers[i % len(makers)](i) for i in range(count)}


def _time_summary(namespace: dict[str, Any], repeat: int) -> list[float]:
    from deepagent_magics.core.loop.variables import summarize_namespace

    summarize_namespace(namespace)
    samples = []
    for _ in range(repeat):
        quiet_gc()
        started = time.perf_counter()
        summarize_namespace(namespace)
        samples.append(time.perf_counter() - started)
    return samples
