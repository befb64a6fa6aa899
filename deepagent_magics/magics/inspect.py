"""Looking back at runs: ``%deepagent_runs``, ``%deepagent_trace`` and ``%deepagent_export``.

All three read the run records (records/) in the configured workspace and in
the workspaces of this session's runs, so they work for runs of earlier
sessions and for runs that were interrupted or crashed. A record is data anyone could
have written (the agent can, with ``write_file``): reading one is defensive
(`records.store`), and one that cannot be read is skipped in the list and one line
for the others. The records' rooms are imported when one of the magics is first used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..core.run.secrets import scrub
from ..safe_text import plain
from .inputs.flags import one_line, parse_flags
from .inputs.folders import expand_path


def format_step(record: dict[str, Any], number: int) -> str:
    """One step of a record as text (records.listing); a step out of range is a UsageError."""
    from ..records.listing import NoSuchStep, format_step as listed_step

    try:
        return listed_step(record, number)
    except NoSuchStep as exc:
        raise UsageError(str(exc)) from None


@magics_class
class InspectMagics(Magics):
    """List past runs, show one again, export one as a notebook."""

    @property
    def _agent_magics(self) -> Any:
        return self.shell.magics_manager.registry.get("DeepAgentMagics")

    def directories(self, workspace: str | None = None) -> list[str]:
        """The workspaces whose records to read: the given one, else the configured one and this session's."""
        if workspace:
            return [expand_path(workspace)]
        found: dict[Path, str] = {}
        magics = self._agent_magics
        candidates = [magics.workspace if magics else "."]
        candidates += [run.config.get("workspace") for run in (magics.runs if magics else [])]
        for candidate in candidates:
            if candidate:
                found.setdefault(Path(candidate).expanduser().resolve(), candidate)
        return list(found.values())

    def record(self, run_id: str | None, workspace: str | None = None) -> dict[str, Any]:
        from ..records.store import find_record, list_records, runs_dir

        directories = self.directories(workspace)
        if run_id is None:
            last = self._agent_magics.last_run if self._agent_magics else None
            if last is not None:
                try:
                    return find_record(last.id, directories)
                except (KeyError, OSError, ValueError):
                    pass
            newest = list_records(directories, limit=1)
            if not newest:
                where = ", ".join(str(runs_dir(d)) for d in directories)
                raise UsageError(f"no recorded runs in {where}; run a %%deepagent cell first")
            return newest[0]
        try:
            return find_record(run_id, directories)
        except KeyError as exc:
            raise UsageError(one_line(exc.args[0])) from None
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read run {run_id!r}: {one_line(exc)}") from None

    @magic_arguments()
    @argument("--limit", type=int, default=20, help="how many runs to list (newest first)")
    @argument("--workspace", help="read the records of this workspace")
    @line_magic
    def deepagent_runs(self, line: str) -> None:
        """A table of recent runs read from their records."""
        from ..records.listing import runs_table
        from ..records.store import list_records, runs_dir

        args = parse_flags(self.deepagent_runs, line)
        if args.limit <= 0:
            raise UsageError(f"--limit must be positive, got {args.limit}")
        directories = self.directories(args.workspace)
        records = list_records(directories, limit=args.limit)
        if not records:
            print(f"no recorded runs in {', '.join(str(runs_dir(d)) for d in directories)}")
            return
        print(plain(scrub(runs_table(records))))

    @magic_arguments()
    @argument("run", nargs="?", help="run id (or a unique start or end of one); default: the last run")
    @argument("--step", type=int, help="print this step only")
    @argument("--workspace", help="read the records of this workspace")
    @argument("--display", choices=["auto", "widgets", "text"], help="dashboard or text")
    @line_magic
    def deepagent_trace(self, line: str) -> Any:
        """Show a past run again (the dashboard, or text without widgets), or print one of its steps."""
        from ..display import show_record
        from ..records.listing import unsigned_note

        args = parse_flags(self.deepagent_trace, line)
        record = self.record(args.run, args.workspace)
        if note := unsigned_note(record):
            print(plain(note))
        if args.step is not None:
            print(plain(scrub(format_step(record, args.step))))
            return None
        mode = args.display or (self._agent_magics.display_mode if self._agent_magics else "auto")
        show_record(record, shell=self.shell, mode=mode)
        return None

    @magic_arguments()
    @argument("args", nargs="*", help="[RUN] PATH.ipynb")
    @argument("--workspace", help="read the records of this workspace")
    @line_magic
    def deepagent_export(self, line: str) -> None:
        """Write a run (the last one by default) as a notebook: %deepagent_export [RUN] PATH.ipynb"""
        args = parse_flags(self.deepagent_export, line)
        if len(args.args) not in (1, 2):
            raise UsageError("usage: %deepagent_export [RUN] PATH.ipynb")
        run_id, path = (None, args.args[0]) if len(args.args) == 1 else args.args
        path = expand_path(path)
        if not path.endswith(".ipynb"):
            raise UsageError(f"the notebook path must end with .ipynb, got {path!r} (usage: %deepagent_export [RUN] PATH.ipynb)")
        record = self.record(run_id, args.workspace)
        from ..records.export import write_notebook

        try:
            target = write_notebook(record, path)
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {one_line(exc.strerror or exc)}") from None
        print(f"wrote {target}: run {record.get('id')}, {len(record.get('steps') or [])} steps")
