"""The dashboard's HTML: pure functions from a run's parts to the markup its widgets show.

Every value from a run is escaped with `esc` (quotes too: ipywidgets' ``HTML`` sets ``innerHTML``,
and a todo status sits in a ``class`` attribute), whoever wrote it (`safe_text`).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from ..core.loop.ending import not_submitted
from ..core.run.run import Run
from ..core.policy.spend import budget_of

from ..safe_text import escape

PREVIEW_CHARS = 2000
PREVIEW_LINES = 25
OUTPUT_CHARS = 6000
STATUS_COLORS = {"pending": "#888", "running": "#1a73e8", "finished": "#188038", "failed": "#d93025",
                 "interrupted": "#e37400", "abandoned": "#a142f4"}
TODO_MARKS = {"pending": "○", "in_progress": "◐", "completed": "●"}
STYLE = """<style>
.dag-status {font-size: 13px; padding: 4px 0;}
.dag-panel-title {font-weight: 600; margin: 2px 0 4px;}
.dag-todos, .dag-tree {font-size: 12.5px; line-height: 1.5;}
.dag-todo-completed {color: #188038;} .dag-todo-in_progress {color: #1a73e8; font-weight: 600;}
.dag-todo-pending {color: var(--jp-ui-font-color2, #666);}
.dag-tree .dag-size {color: var(--jp-ui-font-color2, #888); margin-left: 8px;}
.dag-tree .dag-new {color: #188038; font-weight: 600; margin-left: 6px;}
.dag-label {font-weight: 600; font-size: 11.5px; text-transform: uppercase; letter-spacing: .04em;
            color: var(--jp-ui-font-color2, #666); margin-top: 6px;}
.dag-reasoning {white-space: pre-wrap;}
.dag-pre, .dag-step .highlight pre {white-space: pre-wrap; font-size: 12px; margin: 2px 0; padding: 6px;
            background: var(--jp-layout-color2, #f5f5f5); border-radius: 3px; max-height: 24em; overflow: auto;}
.dag-error {color: #d93025;}
</style>"""


def esc(text: Any) -> str:
    """``text`` as HTML text or attribute value: ``<``, ``>``, ``&`` and both quotes escaped."""
    return escape(text)


def head_line(text: str, limit: int = 90) -> str:
    line = next((line.strip() for line in (text or "").splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def human_size(size: int | float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"


@functools.lru_cache(maxsize=1)
def _highlighter() -> Any:
    """Pygments' lexer and formatter, built once (the formatter builds a stylesheet each time)."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:  # pragma: no cover - pygments comes with IPython
        return None
    lexer, formatter = PythonLexer(), HtmlFormatter(noclasses=True, nobackground=True)
    return lambda code: highlight(code, lexer, formatter)


def highlight_code(code: str) -> str:
    highlighter = _highlighter()
    return highlighter(code) if highlighter else f'<pre class="dag-pre">{esc(code)}</pre>'


def step_mark(output: str | None) -> str:
    """How a step ended, as one glyph: running, stopped before its end, failed, done."""
    if output is None:
        return "…"
    if output in ("(interrupted)", "(not executed)"):
        return "⏹"
    return "✗" if output.startswith("[Error]") else "✓"


def step_title(index: int, reasoning: str, output: str | None) -> str:
    mark = step_mark(output)
    return f"{mark} Step {index} · {head_line(reasoning) or '(no reasoning)'}"


def step_body(reasoning: str, code: str, output: str | None, code_html: str | None = None) -> str:
    """A step's reasoning, code and output (``code_html``: the code already highlighted)."""
    parts = ['<div class="dag-step">',
             f'<div class="dag-label">Reasoning</div><div class="dag-reasoning">{esc(reasoning.strip())}</div>',
             f'<div class="dag-label">Code</div>{code_html if code_html is not None else highlight_code(code)}']
    if output is None:
        parts.append('<div class="dag-label">Output</div><div><i>running…</i></div>')
    else:
        shown = output if len(output) <= OUTPUT_CHARS else output[:OUTPUT_CHARS] + f"\n… ({len(output) - OUTPUT_CHARS} more chars)"
        css = "dag-pre dag-error" if output.startswith("[Error]") else "dag-pre"
        parts.append(f'<div class="dag-label">Output</div><pre class="{css}">{esc(shown) or "<i>(no output)</i>"}</pre>')
    parts.append("</div>")
    return "".join(parts)


def tokens_text(usage: Any) -> str:
    """``12,345 tokens``, and how many of the input tokens the provider's cache served (docs/caching.md)."""
    cached = getattr(usage, "cached_input_tokens", 0)
    return f"{usage.tokens:,} tokens" + (f" ({cached:,} cached)" if cached else "")


def not_sandboxed(run: Run) -> str | None:
    """Why ``run`` (a sub-agent) ran unsandboxed, from what its record says of its kernel; None if it was
    sandboxed (bubblewrap, or a gateway's containers) or is not a sub-agent."""
    isolation = run.config.get("sandbox") if run.parent is not None else None
    if isinstance(isolation, dict) and isolation.get("sandbox") == "none":
        return str(isolation.get("reason") or "no sandbox")
    return None


def unfiltered(run: Run) -> str | None:
    """Why ``run`` (a sub-agent) ran in bubblewrap without the sandbox's seccomp filter; None if it had it
    (or was not sandboxed by bubblewrap, or is not a sub-agent)."""
    isolation = run.config.get("sandbox") if run.parent is not None else None
    if isinstance(isolation, dict) and isolation.get("sandbox") == "bubblewrap" and isolation.get("seccomp") is False:
        missing = isolation.get("missing")
        return str((missing.get("seccomp") if isinstance(missing, dict) else None) or "not applied")
    return None


def not_sandboxed_line(run: Run) -> str | None:
    """The one line a run says when any of its sub-agents ran unsandboxed, or sandboxed without the seccomp
    filter (None: every one had the whole sandbox)."""
    reason = next((reason for each in run.walk() if (reason := not_sandboxed(each))), None)
    if reason is not None:
        return (f"deepagent: sub-agents ran NOT sandboxed ({head_line(reason, 120)}): their code could write "
                "wherever you can; install bubblewrap, or --require-sandbox to refuse")
    reason = next((reason for each in run.walk() if (reason := unfiltered(each))), None)
    if reason is not None:
        return (f"deepagent: sub-agents ran sandboxed without a seccomp filter ({head_line(reason, 120)}): no "
                "capability, but the system calls a kernel never needs were not refused; install libseccomp2")
    return None


def usage_parts(run: Run) -> list[str]:
    """The run's LM calls, tokens and cost for its whole tree (``run.tree_usage()``), labelled as such when
    sub-agents made some of them, with the root's own (``run.usage``) beside."""
    usage = run.tree_usage()
    parts = [f"{usage.lm_calls} LM calls", tokens_text(usage), usage.cost_text()]
    if run.children:
        own = run.usage
        parts[-1] += f" (whole tree; the root's own: {own.lm_calls} calls, {own.tokens:,} tokens)"
    return parts


def status_line(run: Run, writing: float | None = None) -> str:
    """Status, iteration, usage, time; ``writing``: seconds the model has been writing the next step."""
    color = STATUS_COLORS.get(run.status, "#888")
    parts = [f'<b style="color:{color}">● {esc(run.status)}</b>',
             f"iteration {len(run.steps)}/{run.max_iters or '?'}"
             + (f' · <span class="dag-writing-status">writing… {writing:.0f}s</span>' if writing is not None else ""),
             *map(esc, usage_parts(run)), f"{run.elapsed:.1f} s"]
    budget = budget_of(run)
    if budget is not None and budget.capped:  # spend against each cap of the tree (core.policy.spend)
        parts.append(f'<span class="dag-spend">caps: {esc(budget.describe())}</span>')
    if run.error and run.status != "finished":
        parts.append(f'<span class="dag-error">{esc(head_line(run.error, 160))}</span>')
    if run.status == "finished" and run.extracted:  # core.loop.ending: not the agent's SUBMIT
        parts.append(f'<span class="dag-error">{esc(head_line(not_submitted(run.extracted), 200))}</span>')
    reason = not_sandboxed(run)
    if reason is not None:
        parts.append(f'<span class="dag-error" title="{esc(reason)}">not sandboxed</span>')
    return f'<div class="dag-status">{" · ".join(parts)}</div>'


def todos_html(todos: list[dict[str, str]]) -> str:
    if not todos:
        return '<div class="dag-todos"><i>(no todos yet)</i></div>'
    done = sum(item.get("status") == "completed" for item in todos)
    rows = [f'<div class="dag-todo-{esc(item.get("status", "pending"))}">'
            f'{TODO_MARKS.get(item.get("status", ""), "○")} {esc(item.get("content", ""))}'
            f' <small>({esc(item.get("status", ""))})</small></div>' for item in todos]
    return f'<div class="dag-todos">{"".join(rows)}<small>{done}/{len(todos)} completed</small></div>'


def tree_html(files: list[tuple[str, int]], written: set[str], more: bool = False) -> str:
    """The file tree: folders once, files indented under them, sizes, this run's files marked."""
    if not files:
        return '<div class="dag-tree"><i>(the workspace is empty)</i></div>'
    rows, shown_dirs = [], set()
    for path, size in sorted(files):
        parts = path.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder not in shown_dirs:
                shown_dirs.add(folder)
                rows.append(f'<div style="padding-left:{(depth - 1) * 14}px"><b>▾ {esc(parts[depth - 1])}/</b></div>')
        mark = '<span class="dag-new">● written</span>' if path in written else ""
        rows.append(f'<div style="padding-left:{(len(parts) - 1) * 14 + 12}px">{esc(parts[-1])}'
                    f'<span class="dag-size">{human_size(size)}</span>{mark}</div>')
    if more:
        rows.append(f"<div><i>… more files (showing {len(files)})</i></div>")
    return f'<div class="dag-tree">{"".join(rows)}</div>'


def file_head(path: Path) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(PREVIEW_CHARS + 1)
    except OSError as exc:
        return f'<i>cannot read: {esc(exc)}</i>'
    lines = text[:PREVIEW_CHARS].splitlines()[:PREVIEW_LINES]
    cut = len(text) > PREVIEW_CHARS or len(text.splitlines()) > PREVIEW_LINES
    return f'<pre class="dag-pre">{esc(chr(10).join(lines))}{chr(10) + "…" if cut else ""}</pre>'
