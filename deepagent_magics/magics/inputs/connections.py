"""What is checked by reaching it now, so a mistake is one line at the cell, not a failure mid-run: the kernel
spec sub-agents start from (``--kernel-name``), the MCP servers whose tools the agent gets (``--mcp``)."""

from __future__ import annotations

from IPython.core.error import UsageError

from .flags import unquote


def check_kernel_name(name: str | None) -> None:
    """A kernel spec for sub-agents that is installed here (a UsageError naming those that are)."""
    if name:
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

        try:
            KernelSpecManager().get_kernel_spec(name)
        except NoSuchKernel:
            names = ", ".join(sorted(KernelSpecManager().find_kernel_specs()))
            raise UsageError(f"no kernel spec named {name!r}; installed: {names}") from None


def check_mcp_servers(specs: list[str]) -> list[str]:
    """``--mcp`` values: each server connected now, so one that cannot start is a UsageError here."""
    from ...tools.mcp_servers import MCPError, connect

    specs = [unquote(spec.strip()) for spec in specs]
    specs = [] if [spec.lower() for spec in specs] == ["off"] else specs
    for spec in specs:
        try:
            connect(spec)
        except MCPError as exc:
            raise UsageError(str(exc)) from None
    return specs
