"""The MCP server over streamable HTTP: every request needs the server's token, and it listens on 127.0.0.1.

Over stdio only the process that started the server can talk to it. Over HTTP any local process
could send ``initialize`` and ``tools/call run_task`` and so run agent code as the server's user;
so every HTTP request must carry ``Authorization: Bearer <token>``, else 401 before the MCP layer
sees it. The token is the ``DEEPAGENT_MCP_TOKEN`` environment variable, or one made at start and
written to a file only its user can read, in Jupyter's runtime folder (stderr names the file,
never the token: stderr ends up in logs), removed when the server stops.

A web page is another caller: it cannot read the token, but it can point a request at the port
(a page on another origin, or a DNS name rebound to 127.0.0.1). The SDK's own transport security
refuses those on every bind address: the ``Host`` header must be one of the names this server is
reached by, with its port (421 otherwise), and an ``Origin`` header, when a browser sends one, must
be this server's own origin (403 otherwise; the SDK's default would let any port of the loopback
in). A query string never reaches the access log: a token pasted into a URL stays out of it.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import secrets
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from ..errors import UserError

TOKEN_ENV = "DEEPAGENT_MCP_TOKEN"
MIN_TOKEN = 16  # characters: a shorter token in the environment is refused


class TokenError(UserError, ValueError):
    """The token in the environment cannot be used; the message is one line."""


def server_token(environ: dict[str, str] | None = None) -> tuple[str, bool]:
    """(the token, whether it was made here) from ``DEEPAGENT_MCP_TOKEN`` or a new random one."""
    environ = os.environ if environ is None else environ
    given = environ.get(TOKEN_ENV, "").strip()
    if given:
        if len(given) < MIN_TOKEN or any(ch.isspace() for ch in given):
            raise TokenError(f"{TOKEN_ENV} must be at least {MIN_TOKEN} characters without spaces")
        return given, False
    return secrets.token_urlsafe(32), True


class RequireToken:
    """ASGI middleware: an HTTP request without ``Authorization: Bearer <token>`` gets 401 and goes no further."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.expected = token.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and not self._authorized(scope):
            body = json.dumps({"error": "unauthorized: send the server's token as 'Authorization: Bearer <token>'"})
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
            await send({"type": "http.response.body", "body": body.encode()})
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: dict[str, Any]) -> bool:
        values = [value for name, value in scope.get("headers", []) if name.lower() == b"authorization"]
        if len(values) != 1:
            return False
        scheme, _, credential = values[0].strip().partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), self.expected)


LOOPBACK = ("127.0.0.1", "localhost", "::1")
EVERY_ADDRESS = ("0.0.0.0", "::", "")


def allowed_hosts(host: str, port: int, extra: tuple[str, ...] = ()) -> list[str]:
    """The ``Host`` header values a request may carry: the names this server is reached by, with its port.

    On a loopback address, the loopback's names; on one other address, that address; on every address
    (``0.0.0.0``), the loopback's names and this machine's; ``extra`` (``--allowed-host``) adds the names
    a proxy or the network reaches it by (``name`` or ``name:port``)."""
    names = list(LOOPBACK) if host in LOOPBACK or host in EVERY_ADDRESS else [host]
    if host in EVERY_ADDRESS:
        names += [socket.gethostname(), socket.getfqdn()]
    hosts = [_with_port(name, port) for name in [*names, *extra]]
    return list(dict.fromkeys(hosts))


def _with_port(name: str, port: int) -> str:
    if re.fullmatch(r"(\[[^\]]+\]|[^:\[\]]+):\d+", name):  # name:port or [v6]:port, as given
        return name
    bare = name.strip("[]")
    return f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"


def transport_security(host: str, port: int, extra: tuple[str, ...] = ()) -> Any:
    """The SDK's DNS-rebinding protection, on for any address: those hosts, and their own origins only."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = allowed_hosts(host, port, extra)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=[f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")])


class NoQueryInAccessLog(logging.Filter):
    """uvicorn's access line without the query string (``/mcp?token=...`` is logged as ``/mcp?...``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str) and "?" in args[2]:
            record.args = (*args[:2], args[2].split("?", 1)[0] + "?...", *args[3:])
        return True


def serve(app: Any, host: str, port: int, extra_hosts: tuple[str, ...] = ()) -> None:
    """Serve the MCP server ``app`` (an `MCPServer`) over streamable HTTP at ``http://host:port/mcp``."""
    import anyio
    import uvicorn

    try:
        token, made = server_token()
    except TokenError as exc:
        raise SystemExit(f"deepagent-mcp: {exc}") from None
    kept = write_token_file(token, port) if made else None
    if kept:
        print(f"deepagent-mcp: this server's token is in {kept} (readable by you only; send it as "
              f"'Authorization: Bearer <token>'; set {TOKEN_ENV} to choose it)", file=sys.stderr, flush=True)
    asgi = RequireToken(app.streamable_http_app(host=host, transport_security=transport_security(host, port, extra_hosts)),
                        token)
    config = uvicorn.Config(asgi, host=host, port=port, log_level=app.settings.log_level.lower())
    logging.getLogger("uvicorn.access").addFilter(NoQueryInAccessLog())  # after Config: it sets up uvicorn's logging
    if kept:  # uvicorn re-raises a SIGTERM once it has shut down: exit through the `finally` below
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        anyio.run(uvicorn.Server(config).serve)
    finally:
        if kept:
            kept.unlink(missing_ok=True)


def token_file(port: int) -> Path:
    """Where a made token is kept: Jupyter's runtime folder, beside its servers' own files."""
    from jupyter_core.paths import jupyter_runtime_dir

    return Path(jupyter_runtime_dir()) / f"deepagent-mcp-{port}.token"


def write_token_file(token: str, port: int) -> Path:
    """``token`` in `token_file`, created for its user alone (0600, in a 0700 folder; a link there is refused)."""
    path = token_file(port)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # one left by a server that was killed
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
    return path
