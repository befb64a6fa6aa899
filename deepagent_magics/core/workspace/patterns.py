"""The agent's search patterns, matched in linear time (RE2).

Python's ``re`` backtracks: ``(a+)+$`` over a line of a's and a b runs for years, in C,
holding the GIL, so no timeout and no stop button reaches it and the whole notebook
freezes (a sub-agent's ``grep`` runs on a host thread). Every pattern the agent gives
(``grep``'s regular expression, ``glob`` patterns) is compiled with RE2, whose matching
time is linear in the text. RE2 has no backreferences and no lookarounds; a pattern that
uses them gets an error saying so.
"""

from __future__ import annotations

import re
import string
from typing import Any

import re2

from ...errors import DeepAgentError

MAX_PATTERN = 5_000
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print each refused pattern on the kernel's stderr
_BACKREFERENCE = re.compile(r"\\[1-9]|\(\?P=|\\g<")
_LOOKAROUND = re.compile(r"\(\?<?[=!]")
_ATOMIC = re.compile(r"\(\?>|[*+?}][+]")


class PatternError(DeepAgentError, ValueError):
    """A pattern the search cannot take; the message (``Error: ...``) is what the agent reads."""


def compile_regex(pattern: str) -> Any:
    """``pattern`` compiled with RE2 (``.search(text)``), or a PatternError saying why not."""
    if not isinstance(pattern, str):
        raise PatternError(f"Error: the pattern must be a string, not {type(pattern).__name__}")
    if len(pattern) > MAX_PATTERN:
        raise PatternError(f"Error: the pattern is {len(pattern)} characters long; keep it under {MAX_PATTERN}")
    try:
        return re2.compile(_unicode_classes(pattern), _OPTIONS)
    except re2.error as exc:
        unsupported = [name for name, shape in (("backreferences", _BACKREFERENCE), ("lookarounds", _LOOKAROUND),
                                                ("atomic groups or possessive quantifiers", _ATOMIC))
                       if shape.search(pattern)]
        if unsupported:
            raise PatternError(
                f"Error: grep matches with a linear-time engine (RE2), which has no {' or '.join(unsupported)} "
                f"(in {pattern!r}); search for a simpler pattern and filter the lines in code"
            ) from None
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(f"Error: invalid regular expression {pattern!r}: {reason}") from None


_CLASSES = {"w": r"\p{L}\p{N}_", "d": r"\p{Nd}"}


def _unicode_classes(pattern: str) -> str:
    """``\\w`` and ``\\d`` as Python's ``re`` means them (Unicode); RE2's own are ASCII only."""
    if "\\" not in pattern:
        return pattern
    out, i, depth = [], 0, 0  # depth: inside a [...] class
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            escape = pattern[i + 1]
            i += 2
            if escape in _CLASSES:
                out.append(_CLASSES[escape] if depth else f"[{_CLASSES[escape]}]")
            elif escape.lower() in _CLASSES and not depth:
                out.append(f"[^{_CLASSES[escape.lower()]}]")
            else:
                out.append(char + escape)
            continue
        if char == "[" and not depth:
            depth = 1
            out.append(char)
            i += 1
            if pattern[i:i + 1] == "^":
                out.append("^")
                i += 1
            if pattern[i:i + 1] == "]":  # a ] first in a class is literal
                out.append("\\]")
                i += 1
            continue
        if char == "]" and depth:
            depth = 0
        out.append(char)
        i += 1
    return "".join(out)


def glob_regex(pattern: str, *, cross_folders: bool = False) -> Any:
    """An RE2 pattern matching whole relative paths (``a/b.txt``) the glob ``pattern`` matches.

    ``*`` and ``?`` stay inside one folder name and ``**`` spans any number of folders, as
    in ``pathlib``; with ``cross_folders`` (grep's file filter, like ``fnmatch``) ``*`` also
    crosses ``/``.
    """
    if len(pattern) > MAX_PATTERN:
        raise PatternError(f"Error: the pattern is {len(pattern)} characters long; keep it under {MAX_PATTERN}")
    if cross_folders:
        body = _segment(pattern, any_char=".")
    else:
        segments = [segment for segment in pattern.split("/") if segment not in ("", ".")]
        parts = []
        for position, segment in enumerate(segments):
            last = position == len(segments) - 1
            if segment == "**":
                parts.append("(?:[^/]+(?:/[^/]+)*)" if last else "(?:[^/]+/)*")
            else:
                parts.append(_segment(segment, any_char="[^/]") + ("" if last else "/"))
        body = "".join(parts)
    try:
        return re2.compile(f"(?s){body}", _OPTIONS)
    except re2.error:
        raise PatternError(f"Error: invalid glob pattern {pattern!r}") from None


def _segment(text: str, any_char: str) -> str:
    out = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        i += 1
        if char == "*":
            while i < n and text[i] == "*":
                i += 1
            out.append(f"{any_char}*")
        elif char == "?":
            out.append(any_char)
        elif char == "[":
            end = i + (1 if i < n and text[i] in "!^" else 0)
            end += 1 if end < n and text[end] == "]" else 0
            while end < n and text[end] != "]":
                end += 1
            if end >= n:
                out.append(r"\[")
                continue
            inside = text[i:end]
            i = end + 1
            negate = inside[:1] in ("!", "^")
            inside = inside[1:] if negate else inside
            escaped = "".join("\\" + c if c in "\\[]^" else c for c in inside)
            out.append(f"[^/{escaped}]" if negate else f"[{escaped}]")
        else:
            out.append("\\" + char if char in string.punctuation else char)
    return "".join(out)
