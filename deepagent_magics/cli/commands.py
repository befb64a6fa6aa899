"""What each ``deepagent`` command does, over the same `DeepAgent` and run records as the magics.

Every mistake the user can make (a bad flag value, a missing file, no model, an unknown
run id) becomes a `UsageProblem`: one line on stderr and exit status 2. Each command imports the
rooms it uses when it runs, after its input is checked: a mistake is told without loading DSPy.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..core.loop.profiles import available_profiles
from ..core.model.lm_options import parse_lm_options
from ..safe_text import plain
from ..settings import CLI, SETTINGS, agent_keywords, at, for_kernels
from .inputs import load_variables, parse_load
from .models import NO_MODEL, default_maker, model_maker, some_model_named
from .parser import UsageProblem

if TYPE_CHECKING:
    from ..core.run.run import Run

EXTRACTED = 3  # the exit status of a run that finished with an answer the agent did not submit (docs/cli.md)
def run_task(args: argparse.Namespace) -> int:
    task = sys.stdin.read() if args.task == "-" else args.task
    if not task.strip():
        raise UsageProblem("the task is empty: deepagent run \"what to do\"")
    if args.profile not in available_profiles():
        raise UsageProblem(f"unknown profile {args.profile!r}; choose one of: {', '.join(available_profiles())}")
    workspace = Path(args.workspace).expanduser()
    try:
        if workspace.exists() and not workspace.is_dir():
            raise UsageProblem(f"--workspace {args.workspace}: not a directory")
    except OSError as exc:  # a name too long for the system, a folder we may not look into
        raise UsageProblem(f"--workspace {args.workspace}: {exc.strerror or exc}") from None
    options = parse_lm_options(args.lm_options)
    make_lm = model_maker(args.lm, options=options) or default_maker()  # each checked, nothing made yet
    make_sub_lm = model_maker(args.sub_lm, "--sub-lm", options=options)
    namespace = load_variables(args.load)
    if not some_model_named(make_lm):
        raise UsageProblem(NO_MODEL)
    with agent_output_to_stderr():
        run = _run(args, task, (make_lm, make_sub_lm, options), namespace, workspace)
    if run is None:
        return 130
    return _report(run, workspace, args.json)


def _models(make_lm: Callable[[], Any] | None, make_sub_lm: Callable[[], Any] | None,
            options: dict[str, Any]) -> tuple[Any, Any]:
    """The LM and the sub-LM, made once the rest of the input is checked (this imports DSPy)."""
    from ..core.model.lm import NoLMError, resolve_lm

    try:
        lm = resolve_lm(make_lm() if make_lm else None, options=options)
    except NoLMError:  # (any other UserError, a bad model id: main shows its one line)
        raise UsageProblem(NO_MODEL) from None
    return lm, make_sub_lm() if make_sub_lm else None


@contextlib.contextmanager
def agent_output_to_stderr() -> Iterator[None]:
    """While the agent works, file descriptor 1 is stderr: stdout is for the answer alone.

    Agent code's prints are captured per step, but what is written to the descriptor itself
    (``os.system``, ``subprocess``, ``os.write(1, ...)``, ``sys.__stdout__``, a sub-agent kernel
    started now) would land in ``deepagent run ... > answer.md``. The descriptor is pointed at
    stderr and put back afterwards, before the answer is printed.
    """
    sys.stdout.flush()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no stdout at all (closed): nothing to keep clean
        yield
        return
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.__stdout__):
            with contextlib.suppress(Exception):
                stream.flush()  # what was buffered while fd 1 was stderr goes there, not to the answer
        os.dup2(saved, 1)
        os.close(saved)


def _run(args: argparse.Namespace, task: str, models: tuple[Any, Any, dict[str, Any]], namespace: dict[str, Any],
         workspace: Path) -> Run | None:
    """The run, ended (None: interrupted, said on stderr). The kernels' pool is checked and started first (a kernel
    spec or gateway that is not there is a mistake told before DSPy is imported), then the models are made."""
    pool = None
    try:
        pool = _pool(args) if args.max_depth > 0 else None
        lm, sub_lm = _models(*models)
        from ..core.loop.agent import DeepAgent
        from ..core.run.run import Run
        from ..display.text import TextProgress

        settings = agent_keywords({s.name: getattr(args, s.name) for s in at(CLI)})  # as the table says
        agent = DeepAgent(**{**settings, "lm": lm, "sub_lm": sub_lm, "workspace": workspace, "pool": pool, "door": "cli"})
        loaded = [f"{name}={path.resolve()}" for name, path in map(parse_load, args.load)]  # for an export's check
        run = Run(task, profile=agent.profile, config={"approve": args.approve, "front_door": "cli", "loaded": loaded})
        progress = None if args.quiet else TextProgress(run, stream=sys.stderr)
        try:
            agent.run(task, namespace, run=run)
        except KeyboardInterrupt:
            print(f"deepagent: interrupted after {len(run.steps)} steps (run {run.id})", file=sys.stderr)
            return None
        finally:
            if progress is not None:
                progress.close()
    except OSError as exc:
        raise UsageProblem(str(exc).splitlines()[0]) from None
    finally:
        if pool is not None:
            pool.stop()  # no sub-agent kernel outlives the command
    return run


def _pool(args: argparse.Namespace) -> Any:
    url = SETTINGS["gateway_url"].or_env(args.gateway_url)
    if args.kernel_name and not url:  # checked before the pool's room (and DSPy, which it imports) is loaded
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

        try:
            KernelSpecManager().get_kernel_spec(args.kernel_name)
        except NoSuchKernel:
            names = ", ".join(sorted(KernelSpecManager().find_kernel_specs()))
            raise UsageProblem(f"--kernel-name: no kernel spec named {args.kernel_name!r}; installed: {names}") from None
    from ..interpreters.pool import KernelPool
    from ..interpreters.pool.gateway import Gateway, GatewayError
    from ..interpreters.pool.limits import ResourceLimits
    from ..interpreters.pool.sandbox import SandboxPolicy, refusal

    if url:
        try:
            gateway = Gateway(url, args.gateway_token)
            names = gateway.check()
        except GatewayError as exc:
            raise UsageProblem(str(exc)) from None
        if args.kernel_name and args.kernel_name not in names:
            raise UsageProblem(f"--kernel-name: the gateway has no kernel spec {args.kernel_name!r}; it has: "
                               f"{', '.join(names)}")
        return KernelPool(args.pool_size, kernel_name=args.kernel_name, gateway=gateway,
                          sandbox=SandboxPolicy(limits=ResourceLimits.from_settings(
                              for_kernels(vars(args), on_gateway=True)))).warm()  # those a process sets on itself
    sandbox = SandboxPolicy(network=args.subagent_network, required=args.require_sandbox,
                            limits=ResourceLimits.from_settings(vars(args)))
    reason = sandbox.status()
    if reason is not None and sandbox.required:
        raise UsageProblem(refusal(reason))
    return KernelPool(args.pool_size, kernel_name=args.kernel_name, cwd=str(Path(args.workspace).expanduser()),
                      sandbox=sandbox).warm()


def _report(run: Run, workspace: Path, as_json: bool) -> int:
    from ..core.loop.ending import not_submitted
    from ..display.markup import not_sandboxed_line
    from ..display.text import summary
    from ..records.store import find_record

    line = not_sandboxed_line(run)
    if line:
        print(line, file=sys.stderr)
    if as_json:
        try:
            record = find_record(run.id, [workspace])  # the record on disk: scrubbed of secrets
        except (KeyError, ValueError):
            record = {"id": run.id, "status": run.status, "error": run.error, "result": run.result,
                      "extracted": run.extracted}
        record.pop("_path", None)
        print(json.dumps(record, indent=2, default=str))
    elif run.status == "finished":
        result = run.result if run.result is not None else ""
        print(plain(result) if sys.stdout.isatty() else result)  # a terminal never acts on a model's escapes
    if run.status != "finished":
        print(plain(f"deepagent: run {run.id} {summary(run)}"), file=sys.stderr)
        return 1
    if run.extracted:  # core/loop/ending.py: the answer is not the agent's SUBMIT
        print(plain(f"deepagent: run {run.id} {not_submitted(run.extracted)}"), file=sys.stderr)
        return EXTRACTED
    return 0


def list_runs(args: argparse.Namespace) -> int:
    from ..records.listing import runs_table
    from ..records.store import list_records, runs_dir

    records = list_records([args.workspace], limit=args.limit)
    if not records:
        print(f"no recorded runs in {runs_dir(args.workspace)}", file=sys.stderr)
        return 0
    print(plain(runs_table(records)))
    return 0


def trace(args: argparse.Namespace) -> int:
    from ..records.listing import NoSuchStep, format_step, unsigned_note

    record = _record(args.run, args.workspace)
    if note := unsigned_note(record):
        print(plain(note), file=sys.stderr)
    if args.step is not None:
        try:
            print(plain(format_step(record, args.step)))
        except NoSuchStep as exc:
            raise UsageProblem(str(exc)) from None
        return 0
    from ..display.text import TextProgress
    from ..records.replay import replay

    views: list[TextProgress] = []
    replay(record, on_run=lambda run: views.append(TextProgress(run, stream=sys.stdout, show_result=True)))
    return 0


def export(args: argparse.Namespace) -> int:
    if not args.out.endswith(".ipynb"):
        raise UsageProblem(f"the notebook path must end with .ipynb, got {args.out!r}")
    record = _record(args.run, args.workspace)
    from ..records.export import write_notebook

    try:
        target = write_notebook(record, args.out)
    except OSError as exc:
        raise UsageProblem(f"cannot write {args.out}: {exc.strerror or exc}") from None
    print(f"wrote {target}: run {record.get('id')}, {len(record.get('steps') or [])} steps", file=sys.stderr)
    return 0


def _record(run_id: str | None, workspace: str) -> dict[str, Any]:
    from ..records.store import find_record, list_records, runs_dir

    if run_id is None:
        newest = list_records([workspace], limit=1)
        if not newest:
            raise UsageProblem(f"no recorded runs in {runs_dir(workspace)}")
        return newest[0]
    try:
        return find_record(run_id, [workspace])
    except KeyError as exc:
        raise UsageProblem(exc.args[0]) from None
    except ValueError as exc:
        raise UsageProblem(f"cannot read run {run_id!r}: {exc}") from None


def bench(args: argparse.Namespace) -> int:
    from .bench import run_bench

    return run_bench(args)


def acp(args: argparse.Namespace) -> int:
    from .acp import serve_acp

    return serve_acp(args)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": run_task, "runs": list_runs, "trace": trace, "export": export, "bench": bench, "acp": acp,
}
