"""The run room: a `Run` and its one event stream (`run`), secrets kept out of what it shows
(`secrets`), the `Session` a run's tools act on (`session`), `StopRun` (`stopping`) and conversation
threads of follow-up runs (`conversations`). Imports only the workspace room below it."""

from ..._compat import old_paths

__path__ = old_paths(__path__)  # core.run.model_text: now safe_text

from .run import Event, Run, Step, Usage

__all__ = ["Event", "Run", "Step", "Usage"]
