"""The benchmark runner starts and a tiny benchmark runs end to end (the real ones run in `make bench`)."""

from __future__ import annotations

import pytest

import json
import subprocess
import sys
from pathlib import Path

pytestmark = pytest.mark.subprocess  # make test-fast leaves these out

ROOT = Path(__file__).resolve().parents[2]


def test_smoke_run_writes_results_and_report(tmp_path):
    results, docs = tmp_path / "smoke.json", tmp_path / "smoke.md"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.run", "--smoke", "--results", str(results), "--docs", str(docs)],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr

    data = json.loads(results.read_text())
    benches = {bench["name"]: bench for bench in data["benchmarks"]}
    assert set(benches) == {"step_time", "prompt_size"}
    step = benches["step_time"]
    assert step["status"] == "ok"
    per_step = step["raw"]["per_step_s"]
    assert {"rlm_local", "rlm_shell", "deepagent"} <= set(per_step)
    assert all(seconds > 0 for seconds in per_step.values())
    assert benches["prompt_size"]["status"] == "ok"
    assert data["machine"]["cores"]

    report = docs.read_text()
    assert "## 1. Time per agent step (harness only)" in report
    assert "× LocalInterpreter" in report
    assert "python -m bench.run --only step_time" in report


def test_unknown_benchmark_is_a_one_line_error():
    completed = subprocess.run(
        [sys.executable, "-m", "bench.run", "--only", "no_such_bench"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert completed.returncode != 0
    assert "unknown benchmark(s) no_such_bench" in completed.stderr
