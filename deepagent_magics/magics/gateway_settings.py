"""``%deepagent_config --gateway-url URL --gateway-token T``: where sub-agent kernels start.

Without a URL (and without ``JUPYTER_GATEWAY_URL``) they start on this machine; with one, on that
Jupyter gateway (interpreters/pool/gateway.py). A URL is checked when it is set: a wrong URL or
token is one `UsageError` line then, not a failure in the middle of a run.
"""

from __future__ import annotations

import os
from typing import Any

from IPython.core.error import UsageError

from .arguments import shown_lm_options

OFF = ("off", "none", "")


def gateway_url(configured: str | None) -> str | None:
    """The gateway in effect: the configured URL, else ``JUPYTER_GATEWAY_URL``, else None (local)."""
    if configured is not None:
        return None if configured.strip().lower() in OFF else configured
    return os.environ.get("JUPYTER_GATEWAY_URL") or None


def make_gateway(url: str | None, token: str | None) -> Any:
    if not url:
        return None
    from ..interpreters.pool.gateway import Gateway, GatewayError

    try:
        return Gateway(url, token or None)
    except GatewayError as exc:
        raise UsageError(str(exc)) from None


def check_gateway(updates: dict[str, Any], configured_url: str | None, configured_token: str | None) -> None:
    """Check a gateway URL or token being set: the gateway must answer and accept the token."""
    if "gateway_url" not in updates and "gateway_token" not in updates:
        return
    url = gateway_url(updates.get("gateway_url", configured_url))
    gateway = make_gateway(url, updates.get("gateway_token", configured_token))
    if gateway is None:
        return
    from ..interpreters.pool.gateway import GatewayError

    try:
        gateway.check()
    except GatewayError as exc:
        raise UsageError(str(exc)) from None


def shown(name: str, value: Any) -> Any:
    """A setting as ``%deepagent_config`` prints it: never the token itself."""
    if name == "gateway_token":
        return "(set)" if value else None
    if name == "lm_options":
        from .arguments import shown_lm_options

        return shown_lm_options(value)
    if name == "gateway_url" and value is None:
        env = os.environ.get("JUPYTER_GATEWAY_URL")
        return f"{env} (from JUPYTER_GATEWAY_URL)" if env else "(none: kernels start on this machine)"
    return value
