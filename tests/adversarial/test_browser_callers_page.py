"""A real page in headless Chromium, on another port of 127.0.0.1, against the run API of a Jupyter Server the
same browser is logged in to (the same site: Chromium sends the login cookie with the page's requests).

The page tries what a hostile page can: a "simple" cross-origin POST (no preflight: ``no-cors``,
``text/plain``), a JSON POST (preflighted), a form posted into a hidden frame, and a read of the
runs. No run and no kernel start, and the page reads nothing; the same browser on the server's own
page, with the ``_xsrf`` cookie's value in its header as JupyterLab sends it, reaches the handler.
"""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from tests.adversarial.browser_callers import jupyter_server
from tests.browser import page  # noqa: F401  (the fixture: headless Chromium)
from tests.servers import free_port

pytestmark = [pytest.mark.server, pytest.mark.browser]

RUNS = "/deepagent/api/runs"
A_RUN = {"task": "print('the page ran me')", "kernel_name": "python3"}
NO_KERNEL = {"task": "x", "kernel_id": "0" * 8 + "-0000-0000-0000-" + "0" * 12}

HOSTILE = """<!doctype html><title>cute cats</title>
<iframe name="sink" style="display:none"></iframe>
<form id="f" method="POST" target="sink" enctype="text/plain" action="{api}">
  <input name='{{"task": "print(1)", "kernel_name": "python3", "x": "' value='"}}'></form>
<script>
window.tries = (async () => {{
  const body = JSON.stringify({run});
  const out = {{}};
  try {{ const r = await fetch("{api}", {{method: "POST", mode: "no-cors", credentials: "include",
         headers: {{"Content-Type": "text/plain"}}, body}}); out.simple = r.type; }} catch (e) {{ out.simple = String(e); }}
  try {{ const r = await fetch("{api}", {{method: "POST", credentials: "include",
         headers: {{"Content-Type": "application/json"}}, body}}); out.json = r.status; }} catch (e) {{ out.json = "blocked"; }}
  try {{ const r = await fetch("{api}", {{credentials: "include"}}); out.read = await r.text(); }}
  catch (e) {{ out.read = "blocked"; }}
  document.getElementById("f").submit();
  await new Promise(done => setTimeout(done, 1500));
  return out;
}})();
</script>"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    context, server = jupyter_server(tmp_path_factory.mktemp("jupyter"))
    with context:
        yield server


@pytest.fixture
def hostile_site(server):
    """The hostile page, served by a real HTTP server on another port of 127.0.0.1: its URL."""
    html = HOSTILE.format(api=server.url + RUNS, run=json.dumps(A_RUN)).encode()

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(html)

        def log_message(self, *args):
            pass

    site = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Page)
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{site.server_address[1]}/cats.html"
    finally:
        site.shutdown()
        site.server_close()


def log_in(page, server):
    page.goto(f"{server.url}/login")
    page.fill("input[name=password]", server.token)
    page.press("input[name=password]", "Enter")
    page.wait_for_load_state()
    names = [cookie["name"] for cookie in page.context.cookies(server.url)]
    assert any(name.startswith("username-") for name in names) and "_xsrf" in names, names


def test_a_page_on_another_port_of_the_loopback_starts_no_run_with_the_users_cookie(server, hostile_site, page):  # noqa: F811
    log_in(page, server)
    page.goto(hostile_site)
    tries = page.evaluate("window.tries")
    assert tries["json"] == "blocked" and tries["read"] == "blocked", tries  # no CORS allow: nothing read
    assert tries["simple"] == "opaque", tries  # sent (with the cookie), its answer unreadable
    assert server.runs_and_kernels() == ([], [])  # and it started nothing
    logged = server.log.read_text(errors="replace")
    assert "Blocking Cross Origin API request" in logged or "XSRF" in logged or "_xsrf" in logged

    page.goto(f"{server.url}/login")  # the control: a page of the server (an API page forbids fetch), as JupyterLab calls it
    reply = page.evaluate("""async (args) => {
        const xsrf = document.cookie.split("; ").find(c => c.startsWith("_xsrf=")).slice(6);
        const r = await fetch(args.api, {method: "POST", credentials: "same-origin",
            headers: {"Content-Type": "application/json", "X-XSRFToken": decodeURIComponent(xsrf)},
            body: JSON.stringify(args.body)});
        return [r.status, await r.text()];
    }""", {"api": RUNS, "body": NO_KERNEL})
    assert reply[0] == 404 and "no running kernel" in reply[1], reply
