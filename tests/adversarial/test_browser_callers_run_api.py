"""A web page on another origin against the run API, on a real Jupyter Server the user is logged in to.

The browser adds the user's login cookie to whatever a page sends to the server's host (a page on
another port of 127.0.0.1 is the same *site*, so SameSite does not stop it). What must hold is
Jupyter Server's own checks, which the run API's handlers inherit: a cookie-authenticated request
that changes something needs the ``_xsrf`` token the page cannot read, and an ``Origin`` of
another origin is refused; a preflight gets no CORS allow; a ``Host`` that is not the loopback's
(DNS rebinding) is refused. A program with the token in its ``Authorization`` header still works,
and the token is never in a URL, a log line or an error the API sends.
"""

from __future__ import annotations

import json

import pytest

from tests.adversarial.browser_callers import EVIL, jupyter_server

pytestmark = pytest.mark.server

RUNS = "/deepagent/api/runs"
A_RUN = json.dumps({"task": "print('the page ran me')", "kernel_name": "python3"}).encode()  # would start one
NO_KERNEL = {"task": "x", "kernel_id": "0" * 8 + "-0000-0000-0000-" + "0" * 12}  # reaches the handler, starts none


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    context, server = jupyter_server(tmp_path_factory.mktemp("jupyter"))
    with context:
        server.log_in()
        yield server


def test_the_users_cookie_works_from_the_servers_own_origin_with_the_xsrf_token(server):
    """The control: the same cookie, from the server's own page with its _xsrf token, reaches the handler."""
    reply = server.as_the_users_browser("POST", RUNS, json.dumps(NO_KERNEL).encode(), **{
        "Content-Type": "application/json", "Origin": server.url, "X-XSRFToken": server.cookies["_xsrf"]})
    assert reply.status == 404 and "no running kernel" in reply.json()["message"], reply


@pytest.mark.parametrize("headers", [
    pytest.param({"Origin": EVIL}, id="another site"),
    pytest.param({"Origin": "http://127.0.0.1:1"}, id="another port of the loopback (same site)"),
    pytest.param({"Origin": "null"}, id="a sandboxed frame"),
    pytest.param({}, id="no Origin (an old browser's form)"),
    pytest.param({"Origin": EVIL, "X-XSRFToken": "guessed"}, id="a guessed xsrf token"),
    pytest.param({"Origin": EVIL, "X-XSRFToken": "<the real one>"}, id="the real xsrf token, another origin"),
])
@pytest.mark.parametrize("kind", ["application/json", "text/plain"])
def test_a_cross_origin_post_with_the_users_cookie_is_refused_and_starts_no_run(server, headers, kind):
    headers = {name: server.cookies["_xsrf"] if value == "<the real one>" else value for name, value in headers.items()}
    before = server.runs_and_kernels()
    reply = server.as_the_users_browser("POST", RUNS, A_RUN, **{"Content-Type": kind, **headers})
    assert reply.status in (403, 404), reply
    assert "access-control-allow-origin" not in reply.headers
    assert server.runs_and_kernels() == before == ([], [])  # no run, no kernel started for it


@pytest.mark.parametrize("path", ["/stop", "/answer"])
def test_stop_and_answer_from_another_origin_are_refused_before_the_handler(server, path):
    reply = server.as_the_users_browser("POST", f"{RUNS}/r1{path}", b'{"answer": "y"}', **{
        "Content-Type": "application/json", "Origin": EVIL})
    assert reply.status in (403, 404) and "no run" not in reply.text, reply  # our 404 would say "no run"


def test_a_cross_origin_read_with_the_users_cookie_is_refused(server):
    reply = server.as_the_users_browser("GET", RUNS, Origin=EVIL)
    assert reply.status == 404 and '"runs"' not in reply.text, reply
    assert server.as_the_users_browser("GET", RUNS, Origin=server.url).status == 200  # the control


@pytest.mark.parametrize("asked", ["content-type", "authorization", "x-xsrftoken"])
def test_a_preflight_from_another_origin_gets_no_allow(server, asked):
    reply = server.as_the_users_browser("OPTIONS", RUNS, **{
        "Origin": EVIL, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": asked})
    assert "access-control-allow-origin" not in reply.headers, reply.headers
    assert "access-control-allow-credentials" not in reply.headers


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "attacker.test:80"])
def test_a_rebound_dns_name_is_refused_even_with_the_cookie(server, host):
    port = server.url.rsplit(":", 1)[1]
    host = host.format(port=port)
    for reply in (server.as_the_users_browser("GET", RUNS, Host=host),
                  server.as_the_users_browser("POST", RUNS, A_RUN, Host=host, Origin=f"http://{host}",
                                              **{"Content-Type": "application/json"})):
        assert reply.status == 403, reply
    assert server.runs_and_kernels() == ([], [])


def test_a_program_with_the_token_in_its_header_still_works_from_any_origin(server):
    """Token authentication is explicit: a browser never adds it on its own, so Jupyter skips the checks."""
    assert server.with_token("GET", RUNS).status == 200
    reply = server.with_token("POST", RUNS, NO_KERNEL)
    assert reply.status == 404 and "no running kernel" in reply.json()["message"]


def test_a_token_in_the_url_is_refused_and_the_token_is_in_no_log_line_nor_error(server):
    start = len(server.log.read_text(errors="replace"))  # after Jupyter's own start-up lines
    token = server.token
    replies = [
        server.with_token("GET", RUNS),
        server.with_token("GET", f"{RUNS}/nope-1"),
        server.with_token("POST", RUNS, {"task": "x", "workspace": "/etc"}),  # 403: outside the root
        server.with_token("POST", RUNS, {"task": "x", "bogus": token}),  # a field named... the token's value
        server.as_the_users_browser("GET", f"{RUNS}?token={token}", Origin=server.url),
        server.as_the_users_browser("POST", f"{RUNS}?token={token}", A_RUN, **{"Content-Type": "application/json"}),
        server.with_token("GET", f"{RUNS}/nope-1/events?token={token}"),
        server.with_token("GET", RUNS, Authorization=f"token {token}x"),  # a wrong token
    ]
    url_token = replies[5]
    assert url_token.status == 400 and "header" in url_token.json()["message"], url_token
    assert replies[6].status == 400 and server.runs_and_kernels() == ([], [])
    for reply in replies:
        assert token not in reply.text and token not in json.dumps(reply.headers), reply
    logged = server.log_since(start)
    assert "/deepagent/api/runs" in logged  # the requests were logged (DEBUG): the log was looked at
    assert token not in logged, [line for line in logged.splitlines() if token in line]
