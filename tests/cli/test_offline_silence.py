"""Offline, a run neither fetches model metadata nor warns about not getting it.

LiteLLM (when imported) and DSPy's model metadata (on first use) fetch a price list from GitHub; offline
that printed ``Model metadata refresh failed`` and four "model cost map fetch" warnings and waited about
8 s before the first request. Here the price list's address is a local server that counts who asks, so
a fetch shows as a request (no clock needed), and the CLI runs a task against a local OpenAI-compatible
provider with nothing of ours in the environment telling LiteLLM to stay offline.
"""

from __future__ import annotations

import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

import pytest

from deepagent_magics.testing_provider import FakeProvider, Reply

ROOT = Path(__file__).resolve().parents[2]
WARNINGS = ("Model metadata refresh failed", "model cost map", "cost map fetch", "Falling back to local backup")


@pytest.fixture
def price_list():
    """A stand-in for GitHub's price list that answers 404 (as offline, it cannot be had) and counts requests."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            asked.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/model_prices_and_context_window.json", asked
    server.shutdown()
    server.server_close()


def run_cli(tmp_path: Path, provider: FakeProvider, env: dict[str, str]) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("DEEPAGENT_LM", "LITELLM_LOCAL_MODEL_COST_MAP")}
    environment |= {"PYTHONPATH": str(ROOT), "DSPY_CACHEDIR": str(tmp_path / ".dspy_cache"),
                    "OPENAI_API_BASE": provider.url, "OPENAI_API_KEY": "sk-local-test"} | env
    return subprocess.run([sys.executable, "-m", "deepagent_magics", "run", "Print 391 and submit it.",
                           "--lm", "openai/fake", "--workspace", "ws"],
                          cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)


@pytest.mark.subprocess
def test_an_offline_run_asks_for_no_price_list_and_warns_about_none(tmp_path, price_list):
    url, asked = price_list
    with FakeProvider([Reply.fields(reasoning="Print and submit.", code="print(391)\nSUBMIT(result='391')")]) as provider:
        done = run_cli(tmp_path, provider, {"LITELLM_MODEL_COST_MAP_URL": url})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "391\n"
    assert asked == [], f"the run fetched the price list: {asked}"
    assert not [line for line in done.stderr.splitlines() if any(w in line for w in WARNINGS)], done.stderr


@pytest.mark.subprocess
def test_a_user_who_asks_for_the_remote_price_list_gets_it(tmp_path, price_list):
    """``LITELLM_LOCAL_MODEL_COST_MAP=False`` set by the user is theirs: the fetch happens (and fails here)."""
    url, asked = price_list
    with FakeProvider([Reply.fields(reasoning="Print and submit.", code="print(391)\nSUBMIT(result='391')")]) as provider:
        done = run_cli(tmp_path, provider, {"LITELLM_MODEL_COST_MAP_URL": url, "LITELLM_LOCAL_MODEL_COST_MAP": "False"})
    assert done.returncode == 0, done.stderr
    assert asked, "with LITELLM_LOCAL_MODEL_COST_MAP=False the price list is fetched"
