"""Reading a magic's input: ``{name}`` interpolation, and the checks that turn a bad flag into one line."""

from __future__ import annotations

import re
from typing import Any

from IPython.core.error import UsageError

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
MAX_INTERPOLATED_CHARS = 10_000


class AgentFailed(UsageError):
    """The agent's run failed; shown by IPython as one line, with the run kept."""


def interpolate(text: str, namespace: dict[str, Any]) -> str:
    """Replace ``{name}`` with the notebook value of ``name``; ``{{`` and ``}}`` are literal braces."""

    def substitute(match: re.Match) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        name = match.group(1)
        if name not in namespace:
            raise UsageError(f"{{{name}}} in the cell is not a notebook variable; define it or use --no-interpolate")
        value = str(namespace[name])
        if len(value) > MAX_INTERPOLATED_CHARS:
            value = value[:MAX_INTERPOLATED_CHARS] + f"... (truncated; the full value is the variable `{name}`)"
        return value

    return _PLACEHOLDER.sub(substitute, text)


def check_positive(name: str, value: Any) -> Any:
    if value is not None and value <= 0:
        raise UsageError(f"{name} must be positive, got {value}")
    return value


def check_subagent_settings(settings: dict[str, Any]) -> None:
    for name in ("max_subagents", "subagent_max_iters", "subagent_timeout", "max_parallel"):
        check_positive(f"--{name.replace('_', '-')}", settings.get(name))
    for name in ("max_depth", "pool_size"):
        if settings.get(name) is not None and settings[name] < 0:
            raise UsageError(f"--{name.replace('_', '-')} must be 0 or more, got {settings[name]}")
    if settings.get("kernel_name"):
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

        try:
            KernelSpecManager().get_kernel_spec(settings["kernel_name"])
        except NoSuchKernel:
            names = ", ".join(sorted(KernelSpecManager().find_kernel_specs()))
            raise UsageError(f"no kernel spec named {settings['kernel_name']!r}; installed: {names}") from None


def check_mcp_servers(specs: list[str]) -> list[str]:
    """``--mcp`` values: each server connected now, so one that cannot start is a UsageError here."""
    from ..tools.mcp import MCPError, connect

    specs = [_unquote(spec.strip()) for spec in specs]
    specs = [] if [spec.lower() for spec in specs] == ["off"] else specs
    for spec in specs:
        try:
            connect(spec)
        except MCPError as exc:
            raise UsageError(str(exc)) from None
    return specs


def _unquote(text: str) -> str:
    """``"python server.py"`` as typed on the magic line (IPython keeps the quotes)."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text
