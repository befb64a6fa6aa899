"""Run records: what a run did, on disk, scrubbed of secrets, readable after the kernel is gone.

- `recorder`: a `RunRecorder` keeps ``<workspace>/.deepagent/runs/<id>.json`` up to date while a run works,
  signed with the host key (`host_key`), so only what the host wrote is loaded back as trusted
- secrets are kept out of everything written (``core.run.secrets``)
- `store`: finding and reading records; `replay`: a record back as a `Run`
- `checkpoint`: the workshop saved and restored (`checkpoint_replay`, `checkpoint_secrets`)
- `export`: a record as a re-runnable notebook
- `events`: the append-only event log ``<id>.events.jsonl`` a live client follows
"""

from .._compat import old_paths

__path__ = old_paths(__path__)  # records.redaction, records.threads, records.shape: moved

from typing import Any

from ..core.loop.capability import Capability
from .events import EventLog, EventLogWriter, LogTail, events_path, follow_events, log_root_run, read_events
from .recorder import RunRecorder, record_of, record_root_run, write_json_atomic
from ..core.run.secrets import REDACTED, Redactor, secret_values
from .replay import replay
from .store import FORMAT, RUNS_DIR, find_record, list_records, load_record, runs_dir



class Records(Capability):
    """The run record (``<id>.json``) and the event log (``<id>.events.jsonl``) of each root run."""

    name = "records"

    def on_run(self, agent: Any, run: Any, lms: dict[str, Any]) -> None:
        record_root_run(agent, run, lms)
        log_root_run(agent, run, lms)


RECORDS = Records()

__all__ = ["RECORDS", "Records", "EventLog", "EventLogWriter", "LogTail", "events_path", "follow_events", "log_root_run", "read_events", "RunRecorder", "record_of", "record_root_run", "write_json_atomic", "REDACTED", "Redactor",
           "secret_values", "replay", "FORMAT", "RUNS_DIR", "find_record", "list_records", "load_record", "runs_dir"]
