"""The deep agent as an MCP server: ``run_task``, ``list_runs``, ``get_run``.

Each ``run_task`` runs a `DeepAgent` in a fresh namespace in this process (its sub-agents in
kernels of their own), in a workspace under the server's root; its record and event log are
written as for any run, so ``list_runs`` and ``get_run`` read them back. A workspace outside
the root, an unknown run or a bad argument is a tool error with a clear message for the
calling agent; the server goes on serving.

The server's settings bound what a client may ask for: ``lm`` only among ``--allow-lm`` models
(a model is paid with the server's keys; none by default), ``max_iters`` at most ``--max-iters``.
Over HTTP every request needs the server's token (`over_http`).

    python -m deepagent_magics.mcp --root ~/work --lm openai/gpt-4o-mini
    python -m deepagent_magics.mcp --transport streamable-http --port 8765
"""

from __future__ import annotations

import argparse
import importlib
import os
from pathlib import Path
from typing import Any, Callable

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from ..core.loop.ending import not_submitted
from ..core.loop.agent import DeepAgent
from ..core.model.lm import NoLMError
from ..core.run.run import Run
from ..records import list_records, runs_dir
from ..records.store import load_record
from ..errors import InvalidValue
from ..settings import SETTINGS
from .task_protocol import CURRENT_TASK, McpTasks
from .tasks import MAX_LIVE, MAX_TTL_MS

INSTRUCTIONS = ("A deep agent that plans with todos, works in a workspace of files, runs Python and can "
                "delegate to sub-agents. run_task hands it a task and returns its result; list_runs and "
                "get_run read what past runs did (steps, files, usage).")
ENDED = ("finished", "failed", "interrupted")
MAX_ITERS = 50  # the most steps a client may ask for, unless the server says otherwise (--max-iters)
DEFAULT_ITERS = SETTINGS["max_iters"].default  # a run's steps when the client does not say (the table's default)


def load_factory(spec: str) -> Callable[[], Any]:
    """``module:function`` -> the function (it returns the LM to use)."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise SystemExit(f"--lm-factory {spec!r}: use module:function")
    return getattr(importlib.import_module(module), name)


class Workspaces:
    """Workspaces are folders under the root; anything else is refused."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).expanduser().resolve()

    def __call__(self, value: str | None) -> Path:
        path = Path(value or ".").expanduser()
        path = (path if path.is_absolute() else self.root / path).resolve()
        if path != self.root and self.root not in path.parents:
            raise ToolError(f"workspace {value!r} is outside the server's root {self.root}")
        return path


def summary(record: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "task", "status", "result", "extracted", "error", "started_at", "ended_at", "elapsed", "usage_total")
    out = {key: record.get(key) for key in keys}
    out["steps"] = len(record.get("steps") or [])
    out["files"] = sorted((record.get("files") or {}).keys())
    return out


def build_server(root: str | os.PathLike = ".", lm: Any = None, lm_factory: Callable[[], Any] | None = None,
                 allowed_lms: tuple[str, ...] = (), max_iters: int = MAX_ITERS, max_tasks: int = MAX_LIVE,
                 max_task_ttl_ms: int = MAX_TTL_MS, log_level: str = "INFO", **agent_settings: Any) -> MCPServer:
    """The server; a client's ``lm`` must be one of ``allowed_lms``, its ``max_iters`` at most ``max_iters``;
    ``run_task`` also runs as an MCP task (`task_protocol`), at most ``max_tasks`` live at once."""
    workspaces = Workspaces(root)
    tasks = McpTasks(max_live=max_tasks, max_ttl_ms=max_task_ttl_ms)
    app = MCPServer("deepagent", instructions=INSTRUCTIONS, lifespan=tasks.lifespan, log_level=log_level)
    tasks.install(app)
    most = max_iters
    allowed = tuple(dict.fromkeys(allowed_lms))
    models = (f"one of {', '.join(allowed)}" if allowed else "none: this server allows no other model, leave it out")

    def run_sync(task: str, workspace: Path, max_iters: int, model: str | None) -> dict[str, Any]:
        chosen = model or (lm_factory() if lm_factory is not None else lm)
        job = CURRENT_TASK.get()  # the MCP task this call runs as (None: a plain call)
        try:
            agent = DeepAgent(lm=chosen, workspace=workspace, max_iters=max_iters, **{"door": "mcp", **agent_settings})
            run = Run(task, profile=agent.profile)
            if job is not None:  # tasks/get reads its steps, tasks/cancel stops it
                job.attach(run, max_iters)
            agent.run(task, {}, run=run)  # (the SDK's stdio server keeps stray prints off the protocol's stdout)
        except NoLMError as exc:
            raise ToolError(f"no LM: {exc}; start the server with --lm or pass lm=") from None
        except KeyboardInterrupt:
            raise ToolError("the run was interrupted") from None
        finally:
            if job is not None:
                job.detach()
        record = runs_dir(workspace) / f"{run.id}.json"
        result = run.result if isinstance(run.result, (str, type(None))) else repr(run.result)
        if run.extracted:  # core/loop/ending.py: the caller reads it with the answer, not only in a field
            result = f"[{not_submitted(run.extracted)}]\n\n{result or ''}"
        return {"id": run.id, "status": run.status, "result": result, "extracted": run.extracted,
                "error": run.error, "steps": len(run.steps), "files": list(run.files_written),
                "workspace": str(workspace), "record": str(record)}

    async def run_task(task: str, workspace: str = ".", max_iters: int = min(DEFAULT_ITERS, most),
                       lm: str | None = None) -> dict[str, Any]:
        if not task.strip():
            raise ToolError("task is empty: say what the agent should do")
        try:
            SETTINGS["max_iters"].check(max_iters, "max_iters")
        except InvalidValue as exc:
            raise ToolError(str(exc)) from None
        if max_iters > most:
            raise ToolError(f"max_iters {max_iters} is over this server's limit: at most {most}")
        if lm is not None and lm not in allowed:
            raise ToolError(f"lm {lm!r} is not allowed on this server; allowed: {models}")
        folder = workspaces(workspace)
        return await anyio.to_thread.run_sync(run_sync, task, folder, max_iters, lm)

    run_task.__doc__ = f"""Hand a task to a deep agent and wait for its result.

        Args:
            task: what to do, in plain words.
            workspace: folder (under the server's root) the agent reads and writes files in.
            max_iters: the most code steps the agent may take (at most {most}).
            lm: a model id to use instead of the server's: {models}.
        """
    app.tool()(run_task)

    @app.tool()
    def list_runs(workspace: str = ".", status: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        """The runs in a workspace, newest first (optionally only those with this status)."""
        if status is not None and status not in ENDED + ("running", "pending"):
            raise ToolError(f"status {status!r}: one of {', '.join(ENDED + ('running', 'pending'))}")
        records = list_records([workspaces(workspace)])
        return [summary(r) for r in records if status is None or r.get("status") == status][: max(limit, 0)]

    @app.tool()
    def get_run(run_id: str, workspace: str = ".") -> dict[str, Any]:
        """A run's whole record: task, status, result, every step's reasoning, code and output, files, usage."""
        folder = workspaces(workspace)
        path = runs_dir(folder) / f"{run_id}.json"
        if "/" in run_id or "\\" in run_id or run_id.startswith(".") or not path.is_file():
            raise ToolError(f"no run {run_id!r} in {folder}")
        record = load_record(path)
        record.pop("_path", None)
        return record

    return app


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m deepagent_magics.mcp", description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=".", help="the folder workspaces must be under (default: here)")
    parser.add_argument("--lm", help="model id for the agent (default: DEEPAGENT_LM)")
    parser.add_argument("--lm-factory", help="module:function returning the LM (a custom or scripted one)")
    parser.add_argument("--allow-lm", dest="allowed_lms", action="append", default=[], metavar="MODEL",
                        help="a model id a client may ask for in run_task's lm (repeatable; default: none)")
    parser.add_argument("--max-iters", type=int, default=MAX_ITERS, help="the most steps a client may ask for")
    parser.add_argument("--max-depth", type=int, default=SETTINGS["max_depth"].default, help=SETTINGS["max_depth"].help)
    parser.add_argument("--max-tasks", type=int, default=MAX_LIVE,
                        help=f"the most MCP tasks held at once, working or with a result not fetched (default {MAX_LIVE})")
    parser.add_argument("--max-task-ttl", type=float, default=MAX_TTL_MS / 1000, metavar="SECONDS",
                        help=f"the longest a client may ask an MCP task to be kept (default {MAX_TTL_MS // 1000})")
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on over HTTP (default: loopback only)")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--allowed-host", dest="allowed_hosts", action="append", default=[], metavar="NAME[:PORT]",
                        help="over HTTP, a name clients reach the server by besides its address (repeatable): "
                             "another Host header, or Origin, is refused")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"])
    args = parser.parse_args(argv)
    for name in ("max_iters", "max_depth"):  # the bounds of the table (--max-iters: of what a client may ask)
        try:
            SETTINGS[name].check(getattr(args, name))
        except InvalidValue as exc:
            parser.error(str(exc))
    if not 1 <= args.max_tasks <= 1000:
        parser.error(f"--max-tasks {args.max_tasks}: from 1 to 1000")
    if not 1 <= args.max_task_ttl <= 7 * 86400:  # (NaN fails too)
        parser.error(f"--max-task-ttl {args.max_task_ttl:g}: from 1 to {7 * 86400} seconds")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    factory = load_factory(args.lm_factory) if args.lm_factory else None
    app = build_server(args.root, lm=args.lm, lm_factory=factory, allowed_lms=tuple(args.allowed_lms),
                       max_iters=args.max_iters, max_tasks=args.max_tasks,
                       max_task_ttl_ms=int(args.max_task_ttl * 1000), max_depth=args.max_depth,
                       log_level=args.log_level)
    if args.transport == "stdio":
        app.run("stdio")
    else:
        from .over_http import serve

        serve(app, args.host, args.port, tuple(args.allowed_hosts))
