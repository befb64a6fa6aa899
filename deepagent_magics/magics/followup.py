"""Follow-up cells and long runs: which conversation a ``%%deepagent`` cell continues, and the user's recent cells.

``--continue [RUN]`` / ``-c`` continues the last conversation (or RUN's), ``--new`` starts
one, and ``%deepagent_config --continue on`` makes continuing the default. The threads
themselves live in `core.run.conversations` (and in the run records, `records.conversations`, after a
kernel restart). The agent also sees the user's last ``--cells N`` input cells from
IPython's history, bounded and scrubbed of secrets, so it knows how their variables
were made.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from ..core.run import conversations as threads
from ..records.checkpoint import scrub_assignments
from ..core.run.secrets import Redactor, secret_values
from ..records.conversations import latest_thread

CELL_CHARS = 800
CELLS_BUDGET = 2500
LAST = "last"


def choose_thread(magics: Any, args: Any, workspace: str) -> Any:
    """What ``DeepAgent.run(thread=...)`` gets for this cell: "new", or a thread; a bad flag is a UsageError."""
    asked = getattr(args, "continue_run", None)
    if asked is not None and getattr(args, "new", False):
        raise UsageError("--continue and --new contradict each other: use one")
    if getattr(args, "new", False):
        return "new"
    if asked is None:
        if not magics.continue_default:
            return "new"
        return _last_thread(magics, workspace) or "new"  # continuing by default: the first cell starts one
    if asked == LAST:
        found = _last_thread(magics, workspace)
        if found is None:
            raise UsageError("--continue: there is no earlier run to continue; run a %%deepagent cell first "
                             "(or drop --continue)")
        return found
    try:
        return threads.find(asked, workspace)
    except threads.UnknownThread as exc:
        raise UsageError(f"--continue {asked}: {exc}") from None


def _last_thread(magics: Any, workspace: str) -> Any:
    for run in reversed(magics.runs):
        if run.depth == 0 and run.config.get("thread"):
            try:
                return threads.find(run.config["thread"], workspace)
            except threads.UnknownThread:
                continue
    resumed = (getattr(magics, "resumed", None) or {}).get("thread")  # %deepagent_resume: its last conversation
    if resumed:
        try:
            return threads.find(resumed, workspace)
        except threads.UnknownThread:
            pass
    thread_id = latest_thread(workspace)  # after a kernel restart: the newest recorded run's thread
    if thread_id is None:
        return None
    try:
        return threads.find(thread_id, workspace)
    except threads.UnknownThread:
        return None


def recent_cells(shell: Any, count: int, current: str = "", in_a_notebook: bool = True) -> str:
    """The user's last ``count`` input cells (not agent cells), bounded and scrubbed; '' when none.
    ``in_a_notebook``: False for the run API's kernel, whose cells may come from no notebook."""
    if count <= 0 or shell is None or getattr(shell, "history_manager", None) is None:
        return ""
    history = list(shell.history_manager.input_hist_raw)
    picked: list[tuple[int, str]] = []
    for number in range(len(history) - 1, 0, -1):
        source = str(history[number]).strip()
        if not source or source == current.strip() or _is_agent_cell(source):
            continue
        picked.append((number, source))
        if len(picked) >= count:
            break
    if not picked:
        return ""
    redact = Redactor(secret_values())
    lines = ["The user's recent notebook cells (oldest first; how their variables were made):" if in_a_notebook
             else "The kernel's recent cells (oldest first; how its variables were made):"]
    for number, source in reversed(picked):
        source = redact.text(scrub_assignments(source))
        if len(source) > CELL_CHARS:
            source = source[: CELL_CHARS - 1] + "…"
        lines.append(f"[In {number}]\n{source}")
    text = "\n".join(lines)
    while len(text) > CELLS_BUDGET and len(lines) > 2:
        del lines[1]  # the oldest cell goes first
        text = "\n".join(lines)
    return text[:CELLS_BUDGET]


def _is_agent_cell(source: str) -> bool:
    head = source.lstrip()
    return head.startswith("%%deepagent") or head.startswith("%deepagent") or "run_cell_magic('deepagent'" in head
