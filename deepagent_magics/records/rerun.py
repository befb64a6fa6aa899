"""What an exported run needs to re-run on its own, and the setup lines that give it or say what is missing.

A run's code reads names it did not make: the user's variables, what an earlier turn of its conversation
made, what a checkpoint restored into its kernel. `plan` reads the exported code with `ast` (never runs it)
for every name it reads that no exported cell binds, and decides, for the notebook `export` writes:

- the earlier turns of the run's conversation, from the records this workspace holds (the host's only), run
  first, as sections of the notebook: their code makes their names. Not those before a checkpoint the run's
  kernel resumed: that kernel had their names from the checkpoint, and so does the notebook:
- ``%deepagent_resume NAME`` loads the checkpoint again (the magic checks the host's signature before it
  loads anything, and never overwrites a name already bound);
- modules and library functions the user had imported when the run started are imported again;
- anything else (the user's own data) is named, with where it came from, in one line: the setup cell stops
  there (`MISSING`), before any step runs, instead of a ``NameError`` in the middle.
"""

from __future__ import annotations

import ast
import builtins
import json
import keyword
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .store import list_records

IPYTHON = {"display", "get_ipython", "In", "Out", "exit", "quit"}  # what IPython binds in every kernel
IMPORT = re.compile(r"^([A-Za-z_]\w*)=([A-Za-z_][\w.]*)(?::([A-Za-z_][\w.]*))?$")  # config["imports"] entries
MISSING = '''
_missing = [name for name in _needed if name not in globals()]
if _missing:
    from IPython.core.error import UsageError as _UsageError
    raise _UsageError("this notebook needs " + "; ".join(_needed[name] for name in _missing)
                      + ": define them above this cell, then run it again")
'''


@dataclass
class Plan:
    imports: list[str] = field(default_factory=list)  # import lines for names the user had imported
    resume: str = ""  # the %deepagent_resume line, or ""
    needed: dict[str, str] = field(default_factory=dict)  # name -> what it is and where it came from

    def setup_lines(self) -> str:
        """The end of the setup cell: the imports, the resume, then the check that stops with one line."""
        lines = list(self.imports)
        if self.resume:
            lines += ["%load_ext deepagent_magics", self.resume]
        if self.needed:
            lines.append(f"_needed = {json.dumps(self.needed, indent=4)}")
            lines.append(MISSING.strip("\n"))
        return "\n".join(lines)


def plan(record: dict[str, Any], home: Path | None, cells: list[str], provided: str = "") -> Plan:
    """What the notebook of ``record`` (read from the workspace ``home``) does about the names its ``cells``
    read (the code of the earlier turns it runs first, then its own); ``provided``: the setup's own code."""
    config = record.get("config") or {}
    result = Plan()
    reads = needed_names([provided, *cells])
    if reads is None:  # a star import: which names it binds cannot be read from the code
        return result
    made_by = {entry.split(" (")[0]: turn.get("id") for turn in _thread(record, home)
               for entry in (turn.get("config") or {}).get("names_created") or []}
    restored = set(_strings(config.get("resumed_names")))
    checkpoint = config.get("resumed")
    where = config.get("resumed_from") if isinstance(config.get("resumed_from"), str) else home
    if isinstance(checkpoint, str) and reads & restored and where is not None:
        line = f"{shlex.quote(checkpoint)} --workspace {shlex.quote(str(where))}"
        result.resume = "%deepagent_resume " + line.replace("$", "$$").replace("{", "{{").replace("}", "}}")
    imported = _imports(config.get("imports"))
    loaded = dict(entry.split("=", 1) for entry in _strings(config.get("loaded")) if "=" in entry)
    for name in sorted(reads):
        if name in imported:
            result.imports.append(imported[name])
        elif name in restored and result.resume:
            result.needed[name] = f"{name} (checkpoint {checkpoint!r} holds it: %deepagent_resume above did not restore it)"
        elif name in made_by and made_by[name] != record.get("id"):
            result.needed[name] = (f"{name} (made by run {made_by[name]}, an earlier turn of this conversation: "
                                   "run that run's export first)")
        elif name in loaded:
            result.needed[name] = f"{name} (deepagent run --load {name}={loaded[name]} made it)"
        else:
            result.needed[name] = f"{name} (a variable of the notebook run {record.get('id')} ran in)"
    return result


def earlier_turns(record: dict[str, Any], home: Path | None) -> list[dict[str, Any]]:
    """The turns of ``record``'s conversation that ran before it in its kernel (after the checkpoint it
    resumed, if any), from the host's records in ``home``, oldest first."""
    config = record.get("config") or {}
    after = config.get("resumed_at") if isinstance(config.get("resumed_at"), (int, float)) else None
    return [turn for turn in _thread(record, home)
            if turn.get("id") != record.get("id") and (after is None or (turn.get("started_at") or 0) > after)]


def _thread(record: dict[str, Any], home: Path | None) -> list[dict[str, Any]]:
    """The host-written root records of ``record``'s conversation that started before it, oldest first."""
    thread = (record.get("config") or {}).get("thread")
    if home is None or not isinstance(thread, str) or record.get("depth", 0):
        return []
    started = record.get("started_at") or 0
    turns = [turn for turn in list_records([home]) if turn.get("_host_written") and turn.get("depth", 0) == 0
             and (turn.get("config") or {}).get("thread") == thread and (turn.get("started_at") or 0) < started]
    return sorted(turns, key=lambda turn: turn.get("started_at") or 0)


def needed_names(cells: Iterable[str]) -> set[str] | None:
    """The names the cells read that none of them binds (anywhere: a function's parameter counts), less the
    builtins and IPython's own; None when a cell has a star import (what it binds is not in the code)."""
    reads: set[str] = set()
    binds: set[str] = set()
    for code in cells:
        try:
            tree = ast.parse(code)
        except SyntaxError:  # a step that did not parse raised before it ran: it reads nothing
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                (reads if isinstance(node.ctx, ast.Load) else binds).add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                if any(alias.name == "*" for alias in node.names):
                    return None
                binds.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                binds.add(node.name)
            elif isinstance(node, ast.arg):
                binds.add(node.arg)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                binds.add(node.name)
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                binds.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                binds.add(node.rest)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                binds.update(node.names)
    return {name for name in reads - binds if not hasattr(builtins, name) and name not in IPYTHON}


def _imports(entries: Any) -> dict[str, str]:
    """``config["imports"]`` (``pd=pandas``, ``load_iris=sklearn.datasets._base:load_iris``) as import lines."""
    lines = {}
    for entry in _strings(entries):
        match = IMPORT.match(entry)
        if match is None or keyword.iskeyword(match.group(1)):
            continue
        name, module, attribute = match.groups()
        if attribute is None:
            lines[name] = f"import {module}" if name == module else f"import {module} as {name}"
        elif "." not in attribute:
            lines[name] = (f"from {module} import {attribute}" if name == attribute
                           else f"from {module} import {attribute} as {name}")
    return lines


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []
