"""Run the benchmarks; write bench/results/latest.json and docs/benchmarks.md.

    python -m bench.run                      # every benchmark (what `make bench` runs)
    python -m bench.run --only step_time     # some of them; the others' figures are kept
    python -m bench.run --smoke --results /tmp/smoke.json --docs /tmp/smoke.md

Each benchmark runs in a fresh Python process, so that one's imports, kernels
and memory do not weigh on the next; a benchmark that fails is reported as
failed and the others still run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict
from pathlib import Path

from .common import Config, machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "latest.json"
DOCS = ROOT / "docs" / "benchmarks.md"
BENCHMARKS = ["step_time", "subagent_start", "fanout", "prompt_size", "model_reads", "prompt_growth", "display_update",
              "memory", "gateway", "compaction", "prompt_cache", "audit_hook", "tracing", "local_model", "start_up"]
SMOKE = ["step_time", "prompt_size"]
TIME_LIMIT = 300  # seconds one benchmark may take before it is reported as failed (unless its module says otherwise)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated benchmarks: " + ", ".join(BENCHMARKS))
    parser.add_argument("--smoke", action="store_true", help="a tiny version of a few benchmarks, in seconds")
    parser.add_argument("--repeat", type=int, default=5, help="rounds per measurement (default 5)")
    parser.add_argument("--no-profile", dest="profile", action="store_false", help="skip the pyinstrument profiles")
    parser.add_argument("--results", type=Path, help=f"JSON output (default {RESULTS.relative_to(ROOT)})")
    parser.add_argument("--docs", type=Path, help=f"Markdown output (default {DOCS.relative_to(ROOT)})")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # run one benchmark, print its JSON
    args = parser.parse_args(argv)
    config = Config(smoke=args.smoke, repeat=args.repeat, profile=args.profile)

    if args.child:
        return _child(args.child, config)

    names = _names(args.only, args.smoke)
    if args.smoke and (args.results is None or args.docs is None):
        scratch = Path(tempfile.mkdtemp(prefix="bench-smoke-"))
        args.results = args.results or scratch / "smoke.json"
        args.docs = args.docs or scratch / "smoke.md"
    results_path = args.results or RESULTS
    docs_path = args.docs or DOCS

    results = _load(results_path) if args.only and not args.smoke else {"benchmarks": []}
    results["machine"] = machine()
    results["config"] = asdict(config)
    started = time.perf_counter()
    for name in names:
        print(f"[bench] {name} ...", flush=True)
        began = time.perf_counter()
        outcome = _in_child(name, config)
        outcome["date"] = results["machine"]["date"]
        outcome["seconds"] = round(time.perf_counter() - began, 1)
        _merge(results, outcome)
        print(f"[bench] {name}: {outcome['status']} in {outcome['seconds']} s", flush=True)
        for goal in outcome.get("targets", []):
            print(f"    {goal['what']}: {goal['measured']} (target {goal['target']})", flush=True)
    results["benchmarks"].sort(key=lambda bench: BENCHMARKS.index(bench["name"]) if bench["name"] in BENCHMARKS else 99)
    results["seconds"] = round(time.perf_counter() - started, 1)

    from .report import render

    results_path.parent.mkdir(parents=True, exist_ok=True)
    results_path.write_text(json.dumps(results, indent=1, default=str) + "\n")
    docs_path.parent.mkdir(parents=True, exist_ok=True)
    docs_path.write_text(render(results))
    print(f"[bench] wrote {results_path} and {docs_path} in {results['seconds']} s", flush=True)
    failed = [bench["name"] for bench in results["benchmarks"] if bench["status"] == "failed" and bench["name"] in names]
    return 1 if failed else 0


def _names(only: str | None, smoke: bool) -> list[str]:
    if not only:
        return SMOKE if smoke else BENCHMARKS
    names = [name.strip() for name in only.split(",") if name.strip()]
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown:
        raise SystemExit(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    return names


def _in_child(name: str, config: Config) -> dict:
    """Run one benchmark in a fresh interpreter; its JSON comes back in a file."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = handle.name
    command = [sys.executable, "-m", "bench.run", "--child", f"{name}:{out}", "--repeat", str(config.repeat)]
    command += ["--smoke"] * config.smoke + ["--no-profile"] * (not config.profile)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    limit = getattr(__import__(f"bench.{name}", fromlist=["NAME"]), "TIME_LIMIT", TIME_LIMIT)
    try:
        completed = subprocess.run(command, cwd=ROOT, env=env, timeout=limit)
        data = Path(out).read_text() if os.path.getsize(out) else ""
        if completed.returncode == 0 and data:
            return json.loads(data)
        reason = data or f"exited with status {completed.returncode}"
    except subprocess.TimeoutExpired:
        reason = f"took longer than {limit} s"
    finally:
        os.unlink(out)
    return _failed(name, reason)


def _child(spec: str, config: Config) -> int:
    name, out = spec.split(":", 1)
    try:
        module = __import__(f"bench.{name}", fromlist=["run"])
        outcome = module.run(config)
    except Exception:
        Path(out).write_text(traceback.format_exc())
        traceback.print_exc()
        return 1
    Path(out).write_text(json.dumps(outcome, default=str))
    return 0


def _failed(name: str, reason: str) -> dict:
    from .common import result

    title = name
    try:
        module = __import__(f"bench.{name}", fromlist=["TITLE"])
        title, command = module.TITLE, module.COMMAND
    except Exception:
        command = f"python -m bench.run --only {name}"
    return result(name, title, command, status="failed", reason=reason.strip().splitlines()[-1] if reason.strip() else reason,
                  raw={"error": reason})


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"benchmarks": []}
    data.setdefault("benchmarks", [])
    return data


def _merge(results: dict, outcome: dict) -> None:
    results["benchmarks"] = [bench for bench in results["benchmarks"] if bench["name"] != outcome["name"]]
    results["benchmarks"].append(outcome)


if __name__ == "__main__":
    sys.exit(main())
