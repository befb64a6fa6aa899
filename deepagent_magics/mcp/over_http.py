"""The MCP server over streamable HTTP: every request needs the server's token, and it listens on 127.0.0.1.

Over stdio only the process that started the server can talk to it. Over HTTP any local process
could send ``initialize`` and ``tools/call run_task`` and so run agent code as the server's user;
so every HTTP request must carry ``Authorization: Bearer <token>``, else 401 before the MCP layer
sees it. The token is the ``DEEPAGENT_MCP_TOKEN`` environment variable, or one made at start and
shown once, on stderr. The SDK's own DNS-rebinding protection (allowed Host and Origin headers)
stays on for a loopback address.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import sys
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


def serve(app: Any, host: str, port: int) -> None:
    """Serve the MCP server ``app`` (an `MCPServer`) over streamable HTTP at ``http://host:port/mcp``."""
    import anyio
    import uvicorn

    try:
        token, made = server_token()
    except TokenError as exc:
        raise SystemExit(f"deepagent-mcp: {exc}") from None
    if made:  # shown once; a client sends it with each request
        print(f"deepagent-mcp: this server's token (send it as 'Authorization: Bearer <token>'; set {TOKEN_ENV} "
              f"to choose it): {token}", file=sys.stderr, flush=True)
    asgi = RequireToken(app.streamable_http_app(host=host), token)
    config = uvicorn.Config(asgi, host=host, port=port, log_level=app.settings.log_level.lower())
    anyio.run(uvicorn.Server(config).serve)
