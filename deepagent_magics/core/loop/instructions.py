"""The action instructions the model reads, written once: the profile's text, the REPL's rules, the tools.

`compose` builds them for one agent: its profile's (or sub-agent type's) text, the rules of the
REPL it runs in (the interpreter factory's ``execution_instructions``: the root's door's words,
`doors`; a kernel of its own for a sub-agent), then every tool it is offered, each on one line: its
call signature and the first paragraph of its docstring (the rest is what ``help(name)`` shows).
Where a tool's line goes, and whether it shares another's line, is the `ToolLine` its capability
gives it (`core.loop.capability`; the core names only the REPL's own ``llm_query`` tools); tools
that start sub-agents are left out where delegation is not allowed; ``SUBMIT`` closes the list
with the run's output fields. Nothing is said about a tool the agent is not offered.

`rlm_seam` puts the result in place of dspy.RLM's own template. What differs from run to run (the
workspace, the sub-agent types, the skills) is not here: each request shows it after the inputs
(`DeepAgent.render_inputs`), so these instructions are the same for every run of an agent.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Iterable, Mapping

from .capability import ToolLine

TOOLS_HEAD = ("## Tools\nPaths are relative to the workspace; bad calls return \"Error: ...\"; `help(name)` shows a "
              "tool in full.")
LLM_TOOLS = {
    "llm_query": "llm_query(prompt)",
    "llm_query_batched": "llm_query_batched(prompts)",
}
LLM_DOCS = {
    "llm_query": "Ask a sub-model; returns its text",
    "llm_query_batched": "many at once, in order",
}
# The REPL's own tools (RLM's) and where their line goes among the capabilities' tools.
LLM_LINES = {"llm_query": ToolLine(order=30), "llm_query_batched": ToolLine(order=30, beside="llm_query")}
DOC_CHARS = 300  # of a tool's first paragraph (the user's and MCP tools' docstrings can be long)


def compose(profile_text: str, tools: Iterable[tuple[str, Callable[..., Any]]], repl_rules: str,
            outputs: dict[str, str], *, lines: Mapping[str, ToolLine] | None = None, can_delegate: bool = True,
            read_only: bool = False) -> str:
    """The whole action instructions (see the module docstring).

    ``tools``: (name, callable) in the order offered; ``outputs``: {field name: what it is}; ``lines``: how the
    prompt shows each tool, by name (`Extensions.tool_lines`)."""
    parts = [profile_text.strip()]
    if repl_rules.strip():
        parts.append("## Your REPL\n" + repl_rules.strip())
    parts.append(TOOLS_HEAD + "\n" + "\n".join(tool_lines(tools, outputs, lines=lines, can_delegate=can_delegate,
                                                          read_only=read_only)))
    return "\n\n".join(parts)


def tool_lines(tools: Iterable[tuple[str, Callable[..., Any]]], outputs: dict[str, str], *,
               lines: Mapping[str, ToolLine] | None = None, can_delegate: bool = True,
               read_only: bool = False) -> list[str]:
    """One line per offered tool (a tool ``beside`` another shares its line), in ``order``, then ``SUBMIT``.
    Without delegation, the tools that start sub-agents are not offered; to a read-only agent (the reviewer),
    the tools that write."""
    line_of = {**(lines or {}), **LLM_LINES}.get
    docs: dict[str, tuple[str, str]] = {name: (call, LLM_DOCS[name]) for name, call in LLM_TOOLS.items()}
    for name, func in tools:
        if (not can_delegate and getattr(func, "starts_subagents", False)) or (read_only and getattr(func, "writes", False)):
            continue
        if not (line_of(name) or ToolLine()).listed:  # its capability says it where it is of use
            continue
        brief = (line_of(name) or ToolLine()).brief
        docs[name] = (signature(name, func, required_only=brief), first_paragraph(func))
    place = {name: line_of(name) or ToolLine() for name in docs}
    for name, line in list(place.items()):
        if line.needs and line.needs not in docs:  # of no use without the other: not offered alone
            del docs[name], place[name]
    beside = {name: line.beside for name, line in place.items() if line.beside in docs}
    alone = [name for name, line in place.items() if line.beside and name not in beside]  # its partner is absent
    order = sorted((name for name in docs if name not in beside and name not in alone), key=lambda n: place[n].order)
    order += sorted(alone, key=lambda n: place[n].order)
    shown = []
    for name in order:
        call, doc = docs[name]
        line = f"- `{call}`: {doc}"
        for companion in sorted((c for c, partner in beside.items() if partner == name), key=lambda c: place[c].order):
            other_call, other_doc = docs[companion]
            line = f"{line.rstrip('.')}; `{other_call}`: {other_doc}"
        shown.append(line)
    shown.append(submit_line(outputs))
    return shown


def submit_line(outputs: dict[str, str]) -> str:
    names = list(outputs) or ["result"]
    call = ", ".join(f"{name}=..." for name in names)
    fields = "; ".join(f"`{name}`: {desc}" for name, desc in outputs.items())
    return f"- `SUBMIT({call})`: finish" + (f"; {fields}" if fields else "")


def signature(name: str, func: Callable[..., Any], required_only: bool = False) -> str:
    """``name(a, b=1)``: the parameters as a caller writes them, without annotations (``name(a, ...)``:
    the optional ones left to ``help``)."""
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return f"{name}(...)"
    shown = []
    for parameter in parameters:
        if parameter.kind is parameter.VAR_POSITIONAL:
            shown.append(f"*{parameter.name}")
        elif parameter.kind is parameter.VAR_KEYWORD:
            shown.append(f"**{parameter.name}")
        elif parameter.default is parameter.empty:
            shown.append(parameter.name)
        elif required_only:
            if "..." not in shown:
                shown.append("...")
        else:
            default = repr(parameter.default)
            shown.append(f"{parameter.name}={default if len(default) <= 20 else '...'}")
    return f"{name}({', '.join(shown)})"


def first_paragraph(func: Callable[..., Any]) -> str:
    """The docstring's first paragraph on one line (bounded): what the prompt says of a tool."""
    doc = inspect.getdoc(func) or ""
    text = " ".join(doc.strip().split("\n\n")[0].split())
    if not text:
        return "(no description)"
    return text if len(text) <= DOC_CHARS else text[: DOC_CHARS - 1] + "…"


def workspace_line(root: Any, cwd: Any = None) -> str:
    """Where the root's files are: the workspace, and the kernel's own directory (``cwd``, else the
    process's) when that differs (the tool list says the file tools' paths are relative to the workspace)."""
    import os
    from pathlib import Path

    where = Path(root).resolve()
    try:
        here = Path(cwd or os.getcwd()).resolve()
    except OSError:  # the process's directory was deleted under it
        return f"Workspace: {where}"
    return f"Workspace (working directory): {where}" if here == where else \
        f"Workspace: {where}; your working directory: {here}"
