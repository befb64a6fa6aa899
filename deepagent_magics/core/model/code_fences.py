"""The code a model wrote, as it runs: the Markdown fences around it taken off.

Models fence their code (```` ```python ````), fence it twice, fence it with ``~~~``, or
write a sentence before and after the fence. A step runs, and is stored (the run record,
the export, the dashboard, ``%deepagent_why``), as the code alone, so an exported notebook
runs and nothing downstream strips fences again.

Text that already parses as Python is code as it stands, even when a line of it starts
with ```` ``` ```` (a Markdown report built in a string). Otherwise the fenced blocks
(line-anchored, as Markdown reads them) tagged as Python or untagged are the code, joined
in order; a block fenced again inside is unwrapped too; an unclosed fence runs to the end.
Text with only blocks of another language (```` ```bash ````) is left as written: it is
not Python, and running it says so.
"""

from __future__ import annotations

import ast
import re
import textwrap

OPENING = re.compile(r"^( {0,3})(`{3,}|~{3,})[ \t]*([^\s`]*)[^`\n]*$")
PYTHON = {"python", "py", "python3", "py3", "ipython", "ipython3", "pycon", ""}
MAX_DEPTH = 4  # fences inside fences inside fences: no model nests deeper


def runnable(text: str, depth: int = 0) -> str:
    """``text`` as the code to run: itself when it parses as Python, else what its fences hold (see above)."""
    text = (text or "").strip("\n")
    if not _has_fence(text):
        return text.strip()
    if _parses(text) or depth >= MAX_DEPTH:
        return text
    outer = _outermost(text)  # the widest Python fence: code that itself shows fences (a report) stays whole
    if outer is not None and _parses(outer):
        return outer
    if outer is not None and _wholly_fenced(outer):  # fenced twice
        inner = runnable(outer, depth + 1)
        if _parses(inner):
            return inner
    blocks = [body for lang, body in fenced_blocks(text) if lang.lower() in PYTHON]
    if not blocks:
        return text
    parts = [runnable(body, depth + 1) for body in blocks]
    return "\n\n".join(part for part in parts if part.strip())


def _outermost(text: str) -> str | None:
    """What lies between the first opening Python fence and the last closing fence of its kind, if any."""
    lines = text.splitlines()
    for first, line in enumerate(lines):
        match = OPENING.match(line)
        if match:
            break
    else:
        return None
    indent, marks, lang = match.groups()
    if lang.lower() not in PYTHON:
        return None
    for last in range(len(lines) - 1, first, -1):
        stripped = lines[last].strip()
        if stripped and set(stripped) == {marks[0]} and len(stripped) >= len(marks):
            return _body(lines[first + 1:last], len(indent))
    return None


def is_fenced(text: str) -> bool:
    """Whether `runnable` would take fences off ``text``."""
    return runnable(text) != (text or "").strip()


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language tag, body) of each fenced block, in order; an unclosed one runs to the end."""
    blocks: list[tuple[str, str]] = []
    fence: tuple[str, int, str, int] | None = None  # (character, length, language, indent)
    body: list[str] = []
    for line in text.splitlines():
        if fence is None:
            match = OPENING.match(line)
            if match:
                indent, marks, lang = match.groups()
                fence, body = (marks[0], len(marks), lang, len(indent)), []
            continue
        char, length, lang, indent = fence
        stripped = line.strip()
        if stripped and set(stripped) == {char} and len(stripped) >= length and len(line) - len(line.lstrip()) <= 3:
            blocks.append((lang, _body(body, indent)))
            fence = None
            continue
        body.append(line)
    if fence is not None:
        blocks.append((fence[2], _body(body, fence[3])))
    return blocks


def _body(lines: list[str], indent: int) -> str:
    lines = [line[min(indent, len(line) - len(line.lstrip(" "))):] for line in lines]
    return textwrap.dedent("\n".join(lines)).strip("\n")


def _wholly_fenced(text: str) -> bool:
    lines = text.strip("\n").splitlines()
    if len(lines) < 2 or not OPENING.match(lines[0]):
        return False
    last = lines[-1].strip()
    return bool(last) and set(last) == {OPENING.match(lines[0]).group(2)[0]}


def _has_fence(text: str) -> bool:
    return any(OPENING.match(line) for line in text.splitlines())


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):  # ValueError: a NUL byte
        return False
    return True
