"""What a request shows of the run's inputs: the task, its context and the variables view.

RLM would show each input as a 1,000-character head and tail, cut mid-line (`rlm_seam` replaces
that with this text). Here each part is shown whole up to its budget; a longer one keeps its
first and last lines and, where lines were left out, one line saying how many and the code that
prints them (``print(context[1200:5400])``): the values are in the REPL under the same names.
A line is never cut in half; a single line longer than the budget is left out whole, and said so.

The section heads (`TASK_HEAD`, `CONTEXT_HEAD`, `VARIABLES_HEAD`) are what the model and the
scripted test model (`testing.ScriptedLM`) find the parts by.
"""

from __future__ import annotations

from typing import Any

TASK_HEAD = "Task (`task`):"
CONTEXT_HEAD = "Context (`context`):"
VARIABLES_HEAD = "Variables in scope:"
TASK_CHARS = 4000
CONTEXT_CHARS = 4000  # the earlier turns of a conversation (core.run.conversations) fit whole


def render(task: Any, context: Any, variables: Any = None, *, task_chars: int = TASK_CHARS,
           context_chars: int = CONTEXT_CHARS, surroundings: str = "") -> str:
    """The three parts as one text, then ``surroundings`` (what the run has: its workspace, the sub-agent types,
    the skills); an empty context and a view of ``None`` (a sub-agent's) are left out."""
    parts = [f"{TASK_HEAD}\n{fit(_text(task), task_chars, 'task')}"]
    context = _text(context)
    if context.strip():
        parts.append(f"{CONTEXT_HEAD}\n{fit(context, context_chars, 'context')}")
    if variables is not None:
        parts.append(f"{VARIABLES_HEAD}\n{_text(variables)}")
    if surroundings.strip():
        parts.append(surroundings.strip())
    return "\n\n".join(parts)


def fit(text: str, budget: int, name: str) -> str:
    """``text`` whole if it fits ``budget``, else its first and last whole lines around a marker line."""
    text = text.rstrip("\n")  # offsets stay those of the REPL's value
    if len(text) <= budget:
        return text
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    head, used = 0, 0
    while head < len(lines) and used + len(lines[head]) + 1 <= budget // 2:
        used += len(lines[head]) + 1
        head += 1
    tail, used = len(lines), 0
    while tail > head and used + len(lines[tail - 1]) + 1 <= budget - budget // 2:
        used += len(lines[tail - 1]) + 1
        tail -= 1
    begin, end = starts[head], min(starts[tail], len(text))
    count = tail - head
    what = f"{count:,} line{'s' if count != 1 else ''} ({end - begin:,} chars)"
    marker = f"[... {what} left out here: print({name}[{begin}:{end}]) shows them]"
    return "\n".join(lines[:head] + [marker] + lines[tail:])


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))
