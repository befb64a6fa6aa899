"""The dashboard in a real JupyterLab, driven by headless Chromium (Playwright).

JupyterLab is served on 127.0.0.1 (a free port, token auth, a temporary root);
a notebook runs a ``%%deepagent`` cell with a ScriptedLM that takes a little time
per call, and the test reads the dashboard while the cell runs and after it.
The screenshot is kept in a temporary folder (DEEPAGENT_TEST_ARTIFACTS to choose one);
DEEPAGENT_UPDATE_DOCS_IMAGE=1 also copies it to docs/img/dashboard.png.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

import playwright.sync_api as playwright_api

pytestmark = pytest.mark.browser
CHROMIUM = "/usr/bin/chromium"

ROOT = Path(__file__).resolve().parent.parent
# Screenshots go to a temporary folder (DEEPAGENT_TEST_ARTIFACTS names another one to keep them).
ARTIFACTS = Path(os.environ.get("DEEPAGENT_TEST_ARTIFACTS") or Path(tempfile.gettempdir()) / "deepagent-test-artifacts")
DOCS_IMAGE = ROOT / "docs" / "img" / "dashboard.png"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]

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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 with a token, rooted in a temporary folder."""
    root = tmp_path_factory.mktemp("lab")
    (root / "ws" / "notes").mkdir(parents=True)
    (root / "ws" / "notes" / "q3.txt").write_text("North steady, South fell after the strike, East grew.\n")
    (root / "ws" / "data.csv").write_text("region,amount\nNorth,120\nSouth,95\nEast,143\n")
    news = root / ".settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text('{"fetchNews": "false"}')  # no "get notified about Jupyter news?" pop-up
    tracker = root / ".settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    tracker.write_text('{"autoStartDefaultKernel": true}')  # no "Select Kernel" dialog over the notebook
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(root / ".config"), JUPYTER_RUNTIME_DIR=str(root / ".runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(root / ".settings"), JUPYTERLAB_WORKSPACES_DIR=str(root / ".workspaces"))
    log = open(root / "lab.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--allow-root", "--LabApp.extension_manager=readonly", "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("JupyterLab did not start:\n" + (root / "lab.log").read_text()[-3000:])
                time.sleep(0.5)
        yield url, token, root
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def require_chromium() -> None:
    """`make test` installs Debian's chromium (as root with apt); without it the test fails, saying how to
    get it, unless DEEPAGENT_SKIP_BROWSER=1 asks for a skip (which then names its reason)."""
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("DEEPAGENT_SKIP_BROWSER"):
        pytest.skip(f"DEEPAGENT_SKIP_BROWSER is set and {CHROMIUM} is missing: the dashboard is not checked in a browser")
    pytest.fail(f"{CHROMIUM} is missing: install it (apt-get install -y chromium, as `make test` does as root), "
                "or set DEEPAGENT_SKIP_BROWSER=1 to skip the browser test")


@pytest.fixture
def page():
    require_chromium()
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1500})
        try:
            yield page
        finally:
            page.screenshot(path=str(ARTIFACTS_DIR() / "last-page.png"))  # what the browser showed last
            browser.close()


def run_cell(page, index: int, wait_for_count: bool = False) -> None:
    """Run one cell with Shift+Enter; a request sent while the kernel connection settles can be lost: retry."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    for _ in range(4):
        dialog = page.locator(".jp-Dialog")
        if dialog.count():  # e.g. "Select Kernel": take the default, as a user would
            dialog.locator(".jp-mod-accept").first.click()
        cell.locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")
        if not wait_for_count:
            return
        try:
            playwright_api.expect(cell.locator(".jp-InputPrompt")).to_contain_text(re.compile(r"\[\d+\]"), timeout=20_000)
            return
        except AssertionError:
            continue
    raise AssertionError(f"cell {index} never ran")


def test_the_dashboard_shows_todos_workspace_and_trajectory_while_and_after_the_cell_runs(lab, page):
    url, token, root = lab
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP_CELL), nbformat.v4.new_code_cell(TASK_CELL)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(root / "dashboard.ipynb"))
    expect = playwright_api.expect

    page.goto(f"{url}/lab/tree/dashboard.ipynb?token={token}&reset")
    page.locator(".jp-Notebook .jp-Cell .cm-content").first.wait_for(timeout=90_000)
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(timeout=90_000)
    run_cell(page, 0, wait_for_count=True)  # the set-up cell, until the kernel has really run it
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


def ARTIFACTS_DIR() -> Path:  # noqa: N802 - reads like the constant it stands for
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
