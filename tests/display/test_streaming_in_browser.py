"""Streaming in a real JupyterLab (issue 15, part 1): the page shows part of a step before it completes.

The notebook's kernel starts the local OpenAI-compatible provider (`testing_provider`)
that streams each answer in small chunks with pauses, and points DSPy's real client at
it. While the first step is being written, the dashboard in headless Chromium must show
the beginning of its reasoning in the writing panel, and "writing…" in the status line,
before the step's own entry exists; then the run finishes as usual.
"""

from __future__ import annotations

import playwright.sync_api as playwright_api
import pytest
from tests.browser import ARTIFACTS_DIR, lab, open_notebook, page, run_cell  # noqa: F401 - fixtures

pytestmark = pytest.mark.browser

REASONING = ("First I will look at the regional sales figures one region at a time, "
             "then add them up and check the total against the notes before reporting.")

SETUP_CELL = f"""\
%load_ext deepagent_magics
import dspy
from deepagent_magics.testing_provider import FakeProvider, Reply
def slow(reasoning, code):
    return Reply(content=Reply.fields(reasoning=reasoning, code=code).content, chunk=4, pause=0.12)
provider = FakeProvider([Reply.failure(429, "Rate limit reached", headers={{"Retry-After": "2"}},
                                       error_type="rate_limit_error"),
                         slow({REASONING!r}, "total = 120 + 95 + 143\\nprint(total)"),
                         slow("Report it.", "SUBMIT(result=f'Total {{total}}')")]).start()
lm = dspy.LM("openai/fake-model", api_base=provider.url, api_key="sk-local", cache=False, num_retries=1)
%deepagent_config --workspace ws --display widgets
"""
TASK_CELL = "%%deepagent --lm lm\nTotal the regional sales"


def test_the_page_shows_part_of_the_reasoning_before_the_step_completes(lab, page):  # noqa: F811
    open_notebook(lab, page, "streaming.ipynb", [SETUP_CELL, TASK_CELL])
    run_cell(page, 1)

    # A rate limit first: the dashboard says what the run waits for (display/retries.py), as text.
    page.wait_for_function(
        """() => [...document.querySelectorAll('.deepagent-dashboard .dag-retry')].some(
             e => e.innerText.includes('step 1: rate limited (429, Retry-After 2 s): retrying in 2 s, attempt 2 of 2'))""",
        timeout=90_000)

    # While step 1 is written: part of its reasoning shows, the whole of it does not yet, no step entry yet.
    page.wait_for_function(
        """([start, whole]) => {
             const d = document.querySelector('.deepagent-dashboard');
             const w = d && d.querySelector('.dag-writing');
             if (!w) return false;
             const text = w.innerText;
             return text.includes(start) && !text.includes(whole) && !d.innerText.includes('Step 1 ·')
                    && d.querySelector('.dag-status').innerText.includes('writing…');
           }""",
        arg=[REASONING[:25], REASONING], timeout=90_000)
    page.screenshot(path=str(ARTIFACTS_DIR() / "streaming-partial.png"))

    dashboard = page.locator(".deepagent-dashboard")
    playwright_api.expect(dashboard.locator(".dag-status")).to_contain_text("finished", timeout=90_000)
    done = dashboard.inner_text()
    assert f"Step 1 · {REASONING[:20]}" in done and "Total 358" in done
    assert "writing…" not in done
