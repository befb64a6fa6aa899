"""mcp/over_http.py: over HTTP every request needs the server's token (the real server: tests/mcp/test_server.py)."""

from __future__ import annotations

import asyncio

import pytest

from deepagent_magics.mcp.over_http import MIN_TOKEN, TOKEN_ENV, RequireToken, TokenError, server_token


def test_the_token_is_the_environments_or_a_new_random_one():
    assert server_token({TOKEN_ENV: "a" * MIN_TOKEN}) == ("a" * MIN_TOKEN, False)
    made, fresh = server_token({})
    assert fresh and len(made) >= 32 and made != server_token({})[0]
    for bad in ("short", "a" * 10 + " " + "b" * 10):
        with pytest.raises(TokenError):
            server_token({TOKEN_ENV: bad})


def call(app, headers):
    sent = []

    async def receive():
        return {"type": "http.request"}

    async def send(message):
        sent.append(message)

    asyncio.run(app({"type": "http", "headers": headers}, receive, send))
    return sent


def test_a_request_without_the_bearer_token_gets_401_and_goes_no_further():
    reached = []

    async def inner(scope, receive, send):
        reached.append(scope)

    app = RequireToken(inner, "right-token-0123456789")
    for headers in ([], [(b"authorization", b"Bearer wrong")], [(b"authorization", b"Basic right-token-0123456789")],
                    [(b"authorization", b"Bearer right-token-0123456789")] * 2):
        assert call(app, headers)[0]["status"] == 401
    assert reached == []
    call(app, [(b"Authorization", b"bearer right-token-0123456789")])
    assert len(reached) == 1


def test_the_allowed_hosts_are_the_servers_names_with_its_port():
    from deepagent_magics.mcp.over_http import allowed_hosts, transport_security

    assert allowed_hosts("127.0.0.1", 8765) == ["127.0.0.1:8765", "localhost:8765", "[::1]:8765"]
    assert allowed_hosts("10.0.0.5", 80, ("proxy.example", "[fe80::1]", "name.example:443")) == [
        "10.0.0.5:80", "proxy.example:80", "[fe80::1]:80", "name.example:443"]
    every = allowed_hosts("0.0.0.0", 9000)
    assert "localhost:9000" in every and len(every) >= 4 and all(host.endswith(":9000") for host in every)
    security = transport_security("127.0.0.1", 8765)
    assert security.enable_dns_rebinding_protection and not any("*" in o for o in security.allowed_origins)
    assert "http://127.0.0.1:8765" in security.allowed_origins
