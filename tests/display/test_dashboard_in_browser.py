"""The dashboard in a real JupyterLab, driven by headless Chromium (Playwright).

JupyterLab is served on 127.0.0.1 (a free port, token auth, a temporary root);
a notebook runs a ``%%deepagent`` cell with a ScriptedLM that takes a little time
per call, and the test reads the dashboard while the cell runs and after it.
The screenshot is kept in a temporary folder (DEEPAGENT_TEST_ARTIFACTS to choose one);
DEEPAGENT_UPDATE_DOCS_IMAGE=1 also copies it to docs/img/dashboard.png.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import playwright.sync_api as playwright_api
import pytest
from tests.browser import ARTIFACTS_DIR, lab, open_notebook, page, run_cell  # noqa: F401 - the fixtures

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
DOCS_IMAGE = ROOT / "docs" / "img" / "dashboard.png"

STEPS = [
    ("Plan: read the notes, total the sales, then write the report.",
     "write_todos([{'content': 'Read the Q3 notes', 'status': 'in_progress'},\n"
     "             {'content': 'Total the sales by region', 'status': 'pending'},\n"
     "             {'content': 'Write report.md', 'status': 'pending'}])\n"
     "print(ls())"),
    ("Read the notes and load the numbers.",
     "notes = read_file('notes/q3.txt')\n"
     "sales = {'North': 120, 'South': 95, 'East': 143}\n"
     "print(notes)"),
    ("Total the sales by region.",
     "write_todos([{'content': 'Read the Q3 notes', 'status': 'completed'},\n"
     "             {'content': 'Total the sales by region', 'status': 'in_progress'},\n"
     "             {'content': 'Write report.md', 'status': 'pending'}])\n"
     "total = sum(sales.values())\n"
     "best = max(sales, key=sales.get)\n"
     "print(total, best)"),
    ("Write the report.",
     "lines = [f'- {region}: {amount}' for region, amount in sorted(sales.items())]\n"
     "write_file('report.md', '# Q3 sales\\n\\n' + '\\n'.join(lines) + f'\\n\\nTotal: {total}\\n')\n"
     "print(read_file('report.md'))"),
    ("Mark the plan done and submit.",
     "write_todos([{'content': 'Read the Q3 notes', 'status': 'completed'},\n"
     "             {'content': 'Total the sales by region', 'status': 'completed'},\n"
     "             {'content': 'Write report.md', 'status': 'completed'}])\n"
     "SUBMIT(result=f'**Q3 sales total {total}**; {best} leads. The report is in `report.md`.')"),
]

SETUP_CELL = f"""\
%load_ext deepagent_magics
from deepagent_magics.testing import ScriptedLM
lm = ScriptedLM({STEPS!r}, latency=1.0)
%deepagent_config --workspace ws --display widgets
"""
TASK_CELL = "%%deepagent --lm lm\nTotal the Q3 sales by region from the notes and write report.md"


def test_the_dashboard_shows_todos_workspace_and_trajectory_while_and_after_the_cell_runs(lab, page):  # noqa: F811
    expect = playwright_api.expect
    open_notebook(lab, page, "dashboard.ipynb", [SETUP_CELL, TASK_CELL])  # the set-up cell has run
    run_cell(page, 1)

    dashboard = page.locator(".deepagent-dashboard")
    dashboard.wait_for(timeout=90_000)
    # While the cell runs: the status says running, and steps and todos have arrived already.
    page.wait_for_function(
        """() => { const d = document.querySelector('.deepagent-dashboard');
                   return d && d.innerText.includes('running') && d.innerText.includes('Step 2 ·'); }""",
        timeout=90_000)
    live = dashboard.inner_text()
    assert "Read the Q3 notes" in live and "q3.txt" in live and "Step 1 · Plan" in live
    assert "finished" not in live.split("\n")[0]
    page.screenshot(path=str(ARTIFACTS_DIR() / "dashboard-running.png"))

    expect(dashboard.locator(".dag-status")).to_contain_text("finished", timeout=90_000)
    done = dashboard.inner_text()
    assert "iteration 5/20" in done
    for todo in ("Read the Q3 notes", "Total the sales by region", "Write report.md"):
        assert todo in done
    assert "3/3 completed" in done
    assert "report.md" in done and "● written" in done and "data.csv" in done and "notes/" in done
    for index, (reasoning, _) in enumerate(STEPS, start=1):
        assert f"Step {index} · {reasoning[:20]}" in done
    assert "SUBMIT(result=" in done  # the newest step is open with its code
    expect(dashboard).to_contain_text("Q3 sales total 358")  # the result, rendered
    assert dashboard.locator(".dag-step .highlight").count() >= 1  # highlighted code

    dashboard.scroll_into_view_if_needed()
    shot = ARTIFACTS_DIR() / "dashboard.png"
    dashboard.screenshot(path=str(shot))
    if os.environ.get("DEEPAGENT_UPDATE_DOCS_IMAGE"):  # refresh docs/img/dashboard.png on request only
        DOCS_IMAGE.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, DOCS_IMAGE)
