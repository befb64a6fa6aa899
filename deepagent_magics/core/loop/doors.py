"""The front doors a run comes in by, and what the root agent is told of each: where its code runs, what
persists, where the user's data is.

A root agent's REPL rules (the prompt's "Your REPL") are its door's own words, then the rules every root
agent shares, written once (`SHARED`). The notebook (``%%deepagent``), the run API (a ``%%deepagent`` cell in
a server's kernel), the command line (``deepagent run``), the MCP server and ``DeepAgent.run`` called from
Python each say only what is true there: no notebook where there is none, nothing "stays" in a process
that ends with the run. A door is one entry: `add_door(Door("acp", ...))`; an agent names its door with the
``door`` setting (``DeepAgent(door="cli")``), and the run record keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InvalidValue

SHARED = ("Throwaway names start with `{scratch}` (removed at the end). Never rebind or delete a user's variable "
          "(make `sales_clean`, not `sales = ...`). A step may run {timeout:g} s.")


@dataclass(frozen=True)
class Door:
    """One front door: ``name`` (the ``door`` setting's value) and its own words for the root's REPL rules:
    ``where`` its code runs and where the user's data is, and what ``persists`` after the run."""

    name: str
    where: str
    persists: str

    def repl_rules(self, timeout: float, scratch: str) -> str:
        return f"{self.where} {self.persists} {SHARED.format(timeout=timeout, scratch=scratch)}"


DOORS: dict[str, Door] = {}


def add_door(door: Door) -> Door:
    """Make ``door`` one an agent may name (a new front door's words: one entry)."""
    DOORS[door.name] = door
    return door


def door(name: str) -> Door:
    """The door called ``name``; `InvalidValue` (one line) for one no door is called."""
    try:
        return DOORS[name]
    except KeyError:
        raise InvalidValue(f"door {name!r} is not a front door; the doors are {', '.join(DOORS)}") from None


USE_THEM = "the listed variables are defined (use them; never reload them)."
add_door(Door("notebook", f"Code runs in the user's live Jupyter kernel: {USE_THEM}",
              "What you define stays in their notebook."))
add_door(Door("api", f"Code runs in a Jupyter kernel of the server the user's request reached: {USE_THEM}",
              "What you define stays in that kernel for their later runs; they read your answer and the "
              "workspace's files."))
add_door(Door("cli", "Code runs in the process of the user's `deepagent run` command: the listed variables are "
                     "the files they loaded (use them; never reload them).",
              "The process ends with the run: only your answer and the files you write outlast it."))
add_door(Door("mcp", "Code runs in an MCP server's process, for a client's call: no variables are defined "
                     "beforehand; the user's data is in the workspace.",
              "Nothing you define outlasts the run: the client gets your answer, and the files you write stay."))
add_door(Door("acp", "Code runs in a Jupyter kernel started for the user's conversation in their editor or chat (an "
                     "ACP client): the listed variables are the ones earlier turns made (use them; never reload them).",
              "What you define stays in that kernel while the conversation goes on; the user reads your answer and "
              "the workspace's files."))
add_door(Door("python", f"Code runs in the Python program that started this run, in its namespace: {USE_THEM}",
              "What you define stays in that namespace after the run."))
