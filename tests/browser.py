"""JupyterLab in headless Chromium for the browser tests: the server, the page, a notebook opened and set up.

``lab`` serves JupyterLab on 127.0.0.1 (a free port, token auth, a temporary root); ``page`` is a
Chromium page (Playwright) whose last view is kept as a screenshot in a temporary folder
(DEEPAGENT_TEST_ARTIFACTS to choose one); ``open_notebook`` writes a notebook of code cells, opens it
and runs its set-up cell; ``run_cell`` runs one more cell as a user does (Shift+Enter).
"""

from __future__ import annotations

import os
import re
import secrets
import sys
import tempfile
from pathlib import Path

import nbformat
import playwright.sync_api as playwright_api
import pytest

from tests.servers import answers, free_port, serving

CHROMIUM = "/usr/bin/chromium"
# Screenshots go to a temporary folder (DEEPAGENT_TEST_ARTIFACTS names another one to keep them).
ARTIFACTS = Path(os.environ.get("DEEPAGENT_TEST_ARTIFACTS") or Path(tempfile.gettempdir()) / "deepagent-test-artifacts")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 with a token, rooted in a temporary folder (with the notes and
    the CSV the dashboard test's agent reads): (url, token, root)."""
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
    url = f"http://127.0.0.1:{port}"
    with serving([sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
                  f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
                  f"--ServerApp.root_dir={root}", "--allow-root", "--LabApp.extension_manager=readonly",
                  "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
                 cwd=root, env=env, log=root / "lab.log", ready=answers(f"{url}/api/status?token={token}"),
                 poll=0.5):
        yield url, token, root


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


def ARTIFACTS_DIR() -> Path:  # noqa: N802 - reads like the constant it stands for
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def open_notebook(lab, page, name: str, cells: list[str]) -> Path:
    """Write a notebook of these code cells into the lab's root, open it in the page, and run its first
    (set-up) cell until the kernel has really run it. Returns the lab's root folder."""
    url, token, root = lab
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(cell) for cell in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(root / name))
    page.goto(f"{url}/lab/tree/{name}?token={token}&reset")
    page.locator(".jp-Notebook .jp-Cell .cm-content").first.wait_for(timeout=90_000)
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(timeout=90_000)
    run_cell(page, 0, wait_for_count=True)
    return root
