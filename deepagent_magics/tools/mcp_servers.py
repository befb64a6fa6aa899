"""MCP tools in: the tools of Model Context Protocol servers, offered to the agent as ordinary tools.

``DeepAgent(mcp_servers=["python my_server.py", "http://127.0.0.1:8000/mcp"])`` (or
``%deepagent_config --mcp ...``) connects to each server with the ``mcp`` SDK (a command
line: stdio; an ``http(s)://`` URL: streamable HTTP), lists its tools and turns each into a
plain function (``dspy.Tool.from_mcp_tool`` converts the call and its result) that the
agent calls like any other tool, a sub-agent too (its calls run here, on the host, through
the kernel bridge).

Each server's client lives in a background event loop (one thread for all servers), open
for as long as the process (or until `close_all`); a connection is shared by every agent
naming the same server. A server that cannot start is an `MCPError` (one line) for the
caller; a tool call that fails (wrong arguments, the server died mid-run, a timeout) is an
``Error: ...`` string for the agent, and the run goes on.
"""

from __future__ import annotations

import asyncio
import inspect
import keyword
import os
import re
import shlex
import threading
from typing import Any, Callable, Iterable

import dspy

from ..errors import UserError
from ..core.loop.capability import Capability
from ..core.run import session as _session

CONNECT_TIMEOUT = 30.0
CALL_TIMEOUT = 120.0


class MCPError(UserError, ValueError):
    """An MCP server that cannot be reached or started: the message is one line for the user."""


_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()
_servers: dict[str, "MCPServer"] = {}


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="deepagent-mcp", daemon=True).start()
        return _loop


def _target(spec: str) -> Any:
    """What the SDK's ``mcp.Client`` connects to: a URL as is, a command line as stdio parameters."""
    from mcp import StdioServerParameters

    if re.match(r"https?://", spec):
        return spec
    try:
        argv = shlex.split(spec)
    except ValueError as exc:
        raise MCPError(f"MCP server {spec!r}: not a command line ({exc})") from None
    if not argv:
        raise MCPError("MCP server '': give a command line or an http(s):// URL")
    return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))


def _one_line(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) < 300 else text[:297] + "..."


class MCPServer:
    """One connected MCP server: its client, open in the background loop, and its tools."""

    def __init__(self, spec: str, *, connect_timeout: float = CONNECT_TIMEOUT, call_timeout: float = CALL_TIMEOUT):
        self.spec = spec
        self.call_timeout = call_timeout
        self.client: Any = None
        self.tools: list[Any] = []
        self.error: str | None = None  # why the connection ended, once it has
        self._loop = _background_loop()
        self._closing: asyncio.Event | None = None
        self._ready: "asyncio.Future[None] | None" = None
        target = _target(spec)
        started = asyncio.run_coroutine_threadsafe(self._start(target), self._loop)
        try:
            started.result(connect_timeout)
        except TimeoutError:
            self.close()
            raise MCPError(f"MCP server {spec!r} did not answer within {connect_timeout:g} s") from None
        except Exception as exc:
            raise MCPError(f"MCP server {spec!r} could not be started: {_one_line(exc)}") from None

    async def _start(self, target: Any) -> None:
        self._closing = asyncio.Event()
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.ensure_future(self._serve(target))
        await self._ready

    async def _serve(self, target: Any) -> None:
        from mcp import Client

        try:
            async with Client(target) as client:
                listing = await client.list_tools()
                self.client, self.tools = client, list(listing.tools)
                self._ready.set_result(None)
                await self._closing.wait()
        except BaseException as exc:  # noqa: BLE001 - anything that ends the connection
            self.error = _one_line(exc)
            if not self._ready.done():
                self._ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(self.error))
            if not isinstance(exc, Exception):
                raise
        finally:
            self.client = None
            if self.error is None:
                self.error = "the connection was closed"

    @property
    def alive(self) -> bool:
        return self.client is not None and not self._task.done()

    def call(self, tool: dspy.Tool, kwargs: dict[str, Any]) -> Any:
        """Call ``tool`` on this server from any thread; raise on failure."""
        if not self.alive:
            raise RuntimeError(f"MCP server {self.spec!r} is not running ({self.error})")
        future = asyncio.run_coroutine_threadsafe(tool.func(**kwargs), self._loop)
        try:
            return future.result(self.call_timeout)
        except TimeoutError:
            future.cancel()
            self._check()
            raise RuntimeError(f"MCP server {self.spec!r} did not answer within {self.call_timeout:g} s") from None
        except Exception:
            self._check()
            raise

    def _check(self, timeout: float = 5.0) -> None:
        """After a failed call: if the server no longer answers (a fresh tool listing), the connection is over."""
        client = self.client
        if client is None:
            return
        from mcp.shared.exceptions import MCPError as ProtocolError
        from mcp_types import CONNECTION_CLOSED

        try:
            asyncio.run_coroutine_threadsafe(client.list_tools(cache_mode="bypass"), self._loop).result(timeout)
        except ProtocolError as exc:  # an answer, even "no such method", is a live server
            if getattr(getattr(exc, "error", None), "code", None) == CONNECTION_CLOSED or "closed" in str(exc).lower():
                self._broken(exc)
        except Exception as exc:  # no answer in time, a dropped connection, the SDK's own errors: a dead server
            self._broken(exc)

    def _broken(self, exc: BaseException) -> None:
        if self.client is not None:
            self.error = f"it stopped answering: {_one_line(exc)}"
            self.client = None
            self._loop.call_soon_threadsafe(self._closing.set)

    def close(self) -> None:
        if self._closing is not None:
            self._loop.call_soon_threadsafe(self._closing.set)
            try:
                asyncio.run_coroutine_threadsafe(asyncio.wait_for(asyncio.shield(self._task), 10), self._loop).result(15)
            except Exception:  # a server that will not close within 15 s is left to its process's end
                pass


def connect(spec: str) -> MCPServer:
    """The open connection to ``spec`` (made now, or again if the last one died)."""
    if not isinstance(spec, str) or not spec.strip():
        raise MCPError(f"MCP server {spec!r}: give a command line or an http(s):// URL")
    server = _servers.get(spec)
    if server is None or not server.alive:
        server = _servers[spec] = MCPServer(spec)
    return server


def close_all() -> None:
    """Close every connection (their stdio servers exit)."""
    for spec in list(_servers):
        _servers.pop(spec).close()


def _identifier(name: str, taken: set[str]) -> str:
    ident = re.sub(r"\W", "_", name) or "tool"
    if ident[0].isdigit() or keyword.iskeyword(ident):
        ident = f"mcp_{ident}"
    while ident in taken:
        ident = f"mcp_{ident}"
    return ident


def _signature(tool: dspy.Tool, required: set[str]) -> inspect.Signature:
    """Required arguments first; every one optional to Python and untyped (``Any``), so a wrong or
    missing argument reaches the server, whose own check comes back as an ``Error:`` string rather
    than as DSPy's exception in the agent's code. The types are in the docstring."""
    names = [name for name in tool.args if name.isidentifier() and not keyword.iskeyword(name)]
    names.sort(key=lambda name: name not in required)
    params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=Any)
              for name in names]
    return inspect.Signature(params + [inspect.Parameter("extra", inspect.Parameter.VAR_KEYWORD, annotation=Any)])


def as_function(server: MCPServer, mcp_tool: Any, taken: set[str]) -> Callable[..., Any]:
    """The MCP tool as a plain function of keyword arguments; a failure comes back as ``Error: ...``."""
    tool = dspy.Tool.from_mcp_tool(server.client, mcp_tool)
    schema = getattr(mcp_tool, "input_schema", None) or getattr(mcp_tool, "inputSchema", None) or {}
    required = set(schema.get("required") or [])
    signature = _signature(tool, required)
    order = [name for name in signature.parameters if name != "extra"]  # positional arguments, in this order
    name = _identifier(mcp_tool.name, taken)

    def call(*args: Any, **kwargs: Any) -> Any:
        active = _session.active()
        run = active.run if active is not None else None
        try:
            if len(args) > len(order):
                raise TypeError(f"{name}() takes {len(order)} arguments ({', '.join(order)}), got {len(args)}")
            kwargs.update(zip(order, args))
            result = server.call(tool, kwargs)
        except Exception as exc:  # the agent reads the error and carries on
            message = f"Error: {name}: {_one_line(exc)}"
            if run is not None:
                run.record_tool_call(name, _short(kwargs), error=message)
            return message
        if run is not None:
            run.record_tool_call(name, _short(kwargs))
        return result

    call.__name__ = call.__qualname__ = name
    lines = [mcp_tool.description or f"The {mcp_tool.name!r} tool of the MCP server {server.spec!r}."]
    for arg in order:
        kind = tool.args[arg].get("type", "any")
        note = f" {tool.arg_desc[arg]}" if tool.arg_desc.get(arg) else ""
        lines.append(f"{arg} ({kind}{', required' if arg in required else ''}){note}")
    call.__doc__ = lines[0] + ("  Arguments: " + "; ".join(lines[1:]) if lines[1:] else "")
    call.__signature__ = signature
    call.__annotations__ = {p.name: p.annotation for p in call.__signature__.parameters.values()}
    return call


def _short(kwargs: dict[str, Any], limit: int = 80) -> dict[str, str]:
    out = {}
    for key, value in kwargs.items():
        text = value if isinstance(value, str) else repr(value)
        out[key] = text if len(text) <= limit else text[: limit - 3] + "..."
    return out


def mcp_tools(specs: Iterable[str], taken: Iterable[str] = ()) -> list[Callable[..., Any]]:
    """The tools of every server in ``specs``, as functions for ``DeepAgent(tools=...)``."""
    names = set(taken) | {"SUBMIT", "llm_query", "llm_query_batched", "print"}
    tools = []
    for spec in specs:
        server = connect(spec)
        for mcp_tool in server.tools:
            function = as_function(server, mcp_tool, names)
            names.add(function.__name__)
            tools.append(function)
    return tools


MCP_TOOLS = Capability("mcp", server_tools=mcp_tools)  # MCP servers' tools in (DeepAgent(mcp_servers=...))
