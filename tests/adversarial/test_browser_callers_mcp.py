"""A web page against the MCP server over HTTP (the real `python -m deepagent_magics.mcp` process).

A page cannot read the server's token, but it can aim requests at the port: from its own origin,
from another port of the loopback (the SDK's default allowed any), through a DNS name rebound to
127.0.0.1 (``Host: evil.example:port``), or on a server bound to every address (where the SDK's
default checked nothing). Each is refused even when the request carries the right token; the
server's own origin and a program without an ``Origin`` still work. The token is never in a log
line (DEBUG, the access log included), nor in what the server answers.
"""

from __future__ import annotations

import json

import pytest

from tests.adversarial.browser_callers import EVIL, request
from tests.mcp.test_server import FACTORY, http_server

pytestmark = pytest.mark.server
TOKEN = "t0k3n-" + "b" * 40
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "page", "version": "1"}}}).encode()


@pytest.fixture
def mcp(tmp_path):
    """(the server's URL, its log) for a server on 127.0.0.1 logging at DEBUG; ``extra`` flags via the param."""
    (tmp_path / "lm_factory_for_test.py").write_text(FACTORY)
    root = tmp_path / "root"
    root.mkdir()

    def start(*extra):
        return http_server(tmp_path, root, "--log-level", "DEBUG", *extra, token=TOKEN)
    return start


def initialize(url, query="", **headers):
    base = url.removesuffix("/mcp")
    return request(base, "POST", "/mcp" + query, INITIALIZE, {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "Host": base.split("//", 1)[1], **headers})


def test_another_origin_or_a_rebound_name_is_refused_even_with_the_token(mcp):
    context, url, _ = mcp()
    with context:
        port = url.split(":")[2].split("/")[0]
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert initialize(url, **bearer).status == 200  # a program: no Origin
        assert initialize(url, Origin=f"http://127.0.0.1:{port}", **bearer).status == 200  # its own page
        assert initialize(url, Origin=f"http://localhost:{port}", Host=f"localhost:{port}", **bearer).status == 200
        for origin in (EVIL, f"{EVIL}:{port}", "http://127.0.0.1:1", f"http://localhost:{int(port) + 1}", "null",
                       f"http://127.0.0.1:{port}.evil.example", f"https://127.0.0.1:{port}@evil.example"):
            reply = initialize(url, Origin=origin, **bearer)
            assert reply.status == 403, (origin, reply)
            assert "mcp-session-id" not in reply.headers
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{port}.evil.example", f"127.0.0.1:{port}x"):
            reply = initialize(url, Host=host, Origin=f"http://{host}", **bearer)
            assert reply.status in (403, 421), (host, reply)
            assert "mcp-session-id" not in reply.headers


def test_a_preflight_from_another_origin_gets_no_allow(mcp):
    context, url, _ = mcp()
    with context:
        base = url.removesuffix("/mcp")
        for asked in ("authorization, content-type", "content-type", "mcp-session-id"):
            reply = request(base, "OPTIONS", "/mcp", None, {
                "Host": base.split("//", 1)[1], "Origin": EVIL, "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": asked})
            assert "access-control-allow-origin" not in reply.headers, reply
            assert reply.status >= 400


def test_on_every_address_the_host_and_origin_are_still_checked(mcp):
    """``--host 0.0.0.0``: the SDK's default would check nothing; the loopback's and the machine's names, and
    ``--allowed-host`` names, are allowed; a rebound name or another origin is not."""
    context, url, _ = mcp("--host", "0.0.0.0", "--allowed-host", "deepagent.internal")
    with context:
        port = url.split(":")[2].split("/")[0]
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert initialize(url, **bearer).status == 200
        assert initialize(url, Host=f"deepagent.internal:{port}", Origin=f"https://deepagent.internal:{port}",
                          **bearer).status == 200
        assert initialize(url, Origin=EVIL, **bearer).status == 403
        assert initialize(url, Host=f"evil.example:{port}", **bearer).status == 421


def test_the_token_is_in_no_log_line_nor_answer_wherever_a_client_puts_it(mcp):
    context, url, log = mcp()
    with context:
        start = len(log.read_text(errors="replace"))
        replies = [
            initialize(url, Authorization=f"Bearer {TOKEN}"),
            initialize(url, f"?token={TOKEN}"),  # in the URL: refused, and kept out of the access log
            initialize(url, f"?token={TOKEN}", Authorization=f"Bearer {TOKEN}"),
            initialize(url, Authorization=f"Basic {TOKEN}"),  # the wrong scheme
            initialize(url, Authorization=f"Bearer {TOKEN}x"),  # a near miss
            initialize(url, Authorization=f"Bearer {TOKEN}", Origin=EVIL),
        ]
        assert [reply.status for reply in replies][:5] == [200, 401, 200, 401, 401]
        for reply in replies:
            assert TOKEN not in reply.text and TOKEN not in json.dumps(reply.headers), reply
    logged = log.read_text(errors="replace")[start:]
    assert "POST /mcp" in logged and "Closing SSE writer" in logged  # the access log and a DEBUG line of the SDK
    assert TOKEN not in logged, [line for line in logged.splitlines() if TOKEN in line]
