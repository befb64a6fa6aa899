"""A run record as a notebook: the trajectory a person can read and re-run.

The task is a Markdown cell; each step is its reasoning (Markdown) and its code
(a code cell carrying the output it had in the run); each sub-agent is a section
under the step that spawned it. A first code cell defines stand-ins for the
agent's tools and ``SUBMIT``, so the recorded code re-runs without a model: the
file tools act on the recorded workspace, the todo tools and sub-agent tools
replay what the run recorded, ``llm_query`` answers with a placeholder.

A record is data a model wrote (and one read from disk may have been planted), and a notebook's
Markdown cells are rendered with their raw HTML live (``jupyter nbconvert --to html``, a trusted
notebook). So every Markdown cell made from a record holds the Markdown already rendered and
sanitised (`safe_text.markdown_html`), on one line: Markdown renderers pass such an HTML
block through as it is. The file tools act on the workspace the record was read from, never on
a folder the record names (`store.record_home`).
"""

from __future__ import annotations

import json
import keyword
import os
from pathlib import Path
from typing import Any, Iterator

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from ..core.loop.ending import not_submitted
from ..core.model.code_fences import runnable
from ..safe_text import markdown_html
from ..core.run.run import Usage
from .rerun import earlier_turns, plan
from .store import record_home

KNOWN_TOOLS = {"write_todos", "read_todos", "ls", "read_file", "write_file", "edit_file", "glob", "grep",
               "llm_query", "llm_query_batched", "SUBMIT"}

SETUP = '''\
# Stand-ins for the agent's tools, so the recorded code re-runs without a model.
# File tools act on WORKSPACE: {where}
import json as _json
import os as _os
from pathlib import Path as _Path

from deepagent_magics import Workspace as _Workspace

WORKSPACE = {workspace}
_ws = _Workspace(WORKSPACE)
_NOTEBOOK_DIR = _os.getcwd()  # sub-agents' code ran in the workspace: their sections change there and back
_todos = _json.loads({todos!r})
_subagent_results = _json.loads({results!r})  # what each sub-agent returned, in order
_replays = _json.loads({replays!r})  # tool name -> per call, what the sub-agents it started returned
_submitted = {{}}


def write_todos(todos):
    return "Todo list updated (replay)."


def read_todos():
    return list(_todos)


def ls(path="."):
    return _ws.ls(path)


def read_file(path, offset=0, limit=2000):
    return _ws.read_file(path, offset, limit, read_on="read_file(")


def write_file(path, content):
    return _ws.write_file(path, content)


def edit_file(path, old, new, replace_all=False):
    return _ws.edit_file(path, old, new, replace_all)


def glob(pattern):
    return _ws.glob(pattern)


def grep(pattern, path=".", glob=None):
    return _ws.grep(pattern, path, glob)


def llm_query(prompt, *args, **kwargs):
    return "[replay: no LM in this notebook]"


def llm_query_batched(prompts, *args, **kwargs):
    return [llm_query(prompt) for prompt in prompts]


def _replay(name, many):
    """What the sub-agents of the tool's next recorded call returned (else the next recorded result)."""
    calls = _replays.get(name)
    if calls:
        results = calls.pop(0)
    else:
        results = [_subagent_results.pop(0) if _subagent_results else "[replay: no recorded result]"]
    if name == "review":  # the tool returns the reviewer's JSON verdict as a dict
        try:
            results = [_json.loads(r) if isinstance(r, str) else r for r in results]
        except ValueError:
            pass
    return results if many else results[0]


def SUBMIT(*args, **kwargs):
    """Records the final outputs instead of ending a run."""
    _submitted.update(dict(zip(["result"], args)), **kwargs)
    print("SUBMIT", _submitted)
'''

MANY = {"delegate_batched"}  # sub-agent tools that return a list
SUBAGENT_TOOLS = {"delegate", "delegate_batched", "review"}


def walk(record: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The record and its sub-agents' records, in the order they ran."""
    yield record
    for child in record.get("orphans") or []:
        yield from walk(child)
    for step in record.get("steps") or []:
        for child in step.get("children") or []:
            yield from walk(child)


def setup_source(record: dict[str, Any], earlier: list[dict[str, Any]] = ()) -> str:
    """The stand-ins, with what the sub-agents of ``record`` (and of the ``earlier`` turns the notebook runs
    first) returned, in the order the notebook calls them."""
    turns = [*earlier, record]
    runs = [run for turn in turns for run in walk(turn)]
    results = {run.get("id"): run.get("result") for run in runs}
    # In notebook order: a step's code runs before the sections of the sub-agents it spawned.
    in_order = [run.get("result") for run in runs if run not in turns]
    replays: dict[str, list[list[Any]]] = {}
    called: set[str] = set()
    for run in runs:
        for call in run.get("tool_calls") or []:
            called.add(call.get("name"))
            if call.get("subagents"):
                replays.setdefault(call["name"], []).append([results.get(i) for i in call["subagents"]])
    workspace, where = _workspace(record)
    source = SETUP.format(workspace=workspace, where=where,
                          todos=json.dumps(record.get("todos") or []),
                          results=json.dumps(in_order, default=str), replays=json.dumps(replays, default=str))
    names = called | SUBAGENT_TOOLS | set(replays)
    for name in sorted(n for n in names if isinstance(n, str) and n.isidentifier() and not keyword.iskeyword(n)):
        if name in KNOWN_TOOLS:
            continue
        if name in SUBAGENT_TOOLS or name in replays:
            many = name in MANY or any(len(call) > 1 for call in replays.get(name, []))
            stub = f"def {name}(*args, **kwargs):\n    return _replay({name!r}, many={many})\n"
        else:
            stub = f"def {name}(*args, **kwargs):\n    print('[replay] {name} was called; it has no stand-in')\n"
        source += "\n\n" + stub
    return source


def _workspace(record: dict[str, Any]) -> tuple[str, str]:
    """The expression WORKSPACE is set to, and why: the folder the re-run's code writes to when the run's files
    and its code's working directory were one folder (or the workspace lay inside it), else the run's own."""
    config = record.get("config") or {}
    home = record_home(record)  # a record read from disk: its own workspace, not the one it names
    where = home if home is not None else Path(str(config.get("workspace") or "."))
    cwd = config.get("cwd")
    if isinstance(cwd, str) and cwd:
        try:
            inside = Path(where).resolve().relative_to(Path(cwd).resolve())
        except (ValueError, OSError):
            inside = None
        if inside is not None:
            folder = "_Path.cwd()" if str(inside) == "." else f"_Path.cwd() / {str(inside)!r}"
            return folder, ("the folder this notebook runs in, where its code writes, as the run's code and "
                            "file tools shared one folder.")
    return f"_Path({str(where)!r})", ("the run's workspace (its code ran in another folder); point it elsewhere "
                                      "to leave that untouched.")


def code_cells(record: dict[str, Any]) -> list[str]:
    """The code the notebook runs for ``record``: its steps' and its sub-agents', as they ran."""
    return [runnable(step.get("code", "")) for run in walk(record) for step in run.get("steps") or []]


def to_notebook(record: dict[str, Any]) -> nbformat.NotebookNode:
    """The notebook for one run record: the turns of its conversation it needs first, then its own steps."""
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["deepagent"] = {"run_id": record.get("id"), "status": record.get("status"),
                                "prompt_hash": record.get("prompt_hash")}
    nb.cells.append(model_markdown_cell(_header(record)))
    nb.cells.append(new_markdown_cell(
        "## Setup\nStand-ins for the agent's tools and `SUBMIT`, so the code below re-runs without a model. "
        "Sub-agents ran in their own kernels; here their code runs in this one."))
    home = record_home(record)
    earlier = earlier_turns(record, home)
    source = setup_source(record, earlier)
    needs = plan(record, home, [code for turn in earlier + [record] for code in code_cells(turn)], provided=source)
    if needs.setup_lines():
        source += "\n\n# What the code below reads and does not make (the run found it in its kernel):\n"
        source += needs.setup_lines() + "\n"
    nb.cells.append(new_code_cell(source, metadata={"tags": ["deepagent-setup"]}))
    for number, turn in enumerate(earlier, start=1):
        nb.cells.append(model_markdown_cell(
            f"## Earlier turn {number}: run `{turn.get('id')}`\n\n"
            + "\n".join("> " + line for line in str(turn.get("task", "")).strip().splitlines())
            + "\n\nThis run continues that conversation: its code runs first, to make the names this run reads."))
        _add_steps(nb, turn, level=2)
    if earlier:
        nb.cells.append(model_markdown_cell(f"## This run: `{record.get('id')}`"))
    _add_steps(nb, record, level=2)
    nb.cells.append(model_markdown_cell(_result(record)))
    return nb


def model_markdown_cell(text: str) -> nbformat.NotebookNode:
    """A Markdown cell for text from a record: rendered, sanitised HTML on one line (no blank line
    ends the HTML block early; a newline inside ``<pre>`` is kept as ``&#10;``)."""
    rendered = markdown_html(text).strip().replace("\r", "").replace("\n", "&#10;")
    return new_markdown_cell(f'<div class="deepagent-record">{rendered}</div>')


def _header(record: dict[str, Any]) -> str:
    usage = Usage.from_dict(record.get("usage_total") or record.get("usage"))
    model = (record.get("config") or {}).get("lm") or "?"
    task = "\n".join("> " + line for line in str(record.get("task", "")).strip().splitlines())
    return (f"# Agent run `{record.get('id')}`\n\n{task}\n\n"
            f"**{record.get('status')}** · {len(record.get('steps') or [])} steps · {usage.lm_calls} LM calls · "
            f"{usage.tokens:,} tokens · {usage.cost_text()} (whole tree) · model `{model}` · prompt `{record.get('prompt_hash')}`")


def _add_steps(nb: nbformat.NotebookNode, record: dict[str, Any], level: int) -> None:
    heading = "#" * min(level + 1, 6)
    for child in record.get("orphans") or []:
        _add_subagent(nb, child, level, step=None)
    for step in record.get("steps") or []:
        prefix = "" if record.get("depth", 0) == 0 else f"Sub-agent `{str(record.get('id'))[-6:]}` · "
        nb.cells.append(model_markdown_cell(f"{heading} {prefix}Step {step.get('index')}\n\n{step.get('reasoning', '')}"))
        output = step.get("output") or ""
        cell = new_code_cell(runnable(step.get("code", "")), execution_count=step.get("index"))  # fences off (old records)
        if output:
            error = output.startswith("[Error]")
            cell.outputs = [new_output("stream", name="stderr" if error else "stdout", text=output + "\n")]
            if error:
                cell.metadata["tags"] = ["raises-exception"]
        nb.cells.append(cell)
        for child in step.get("children") or []:
            _add_subagent(nb, child, level, step=step.get("index"))


def _add_subagent(nb: nbformat.NotebookNode, child: dict[str, Any], level: int, step: int | None) -> None:
    heading = "#" * min(level + 1, 6)
    task = "\n".join("> " + line for line in str(child.get("task", "")).strip().splitlines())
    where = f" (from step {step})" if step is not None else ""
    nb.cells.append(model_markdown_cell(
        f"{heading} Sub-agent `{child.get('id')}`{where}\n\n{task}\n\n"
        f"**{child.get('status')}** · {len(child.get('steps') or [])} steps · result: {child.get('result')!s:.200}"))
    cwd = {"tags": ["deepagent-cwd"]}
    nb.cells.append(new_code_cell("_os.chdir(WORKSPACE)  # this sub-agent's kernel ran in the workspace", metadata=cwd))
    _add_steps(nb, child, level + 1)
    back = "WORKSPACE" if child.get("depth", 1) > 1 else "_NOTEBOOK_DIR"
    nb.cells.append(new_code_cell(f"_os.chdir({back})  # back where the parent's code ran", metadata=dict(cwd)))


def _result(record: dict[str, Any]) -> str:
    if record.get("status") == "finished" and record.get("extracted"):  # core/loop/ending.py: not its SUBMIT
        return f"## Result\n\n**⚠ {not_submitted(record['extracted'])}**\n\n{record.get('result')}"
    if record.get("status") == "finished":
        return f"## Result\n\n{record.get('result')}"
    return f"## Result\n\nThe run ended **{record.get('status')}**: {record.get('error') or ''}"


def write_notebook(record: dict[str, Any], path: str | os.PathLike) -> Path:
    """Write the notebook for ``record`` to ``path`` (validated) and return the path."""
    nb = to_notebook(record)
    nbformat.validate(nb)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(target))
    return target
