"""The reviewer's verdict: {"status": "pass" | "low" | "fail", "issues": [...], "suggestions": [...]}."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

VERDICTS = ("pass", "low", "fail")
_STATUS_WORDS = {
    "pass": "pass", "passed": "pass", "ok": "pass", "accept": "pass", "accepted": "pass",
    "low": "low", "minor": "low", "warn": "low", "warning": "low", "pass_with_issues": "low",
    "fail": "fail", "failed": "fail", "reject": "fail", "rejected": "fail",
}
_FENCE = re.compile(r"```(?:json|python)?\s*\n(.*?)```", re.S)


def parse_verdict(text: Any) -> dict[str, Any]:
    """The reviewer's verdict as {"status", "issues", "suggestions"}, from JSON, a Python dict,
    fenced or surrounded by prose. Unreadable text fails the review (never a silent pass)."""
    found = text if isinstance(text, dict) else _find_object(str(text))
    if found is None:
        return {"status": "fail", "issues": ["The reviewer's verdict could not be read."], "suggestions": [],
                "raw": str(text)[:2000]}
    raw_status = str(found.get("status", found.get("verdict", ""))).strip().lower().replace(" ", "_")
    status = _STATUS_WORDS.get(raw_status)
    issues, suggestions = _strings(found.get("issues")), _strings(found.get("suggestions"))
    if status is None:
        issues.insert(0, f"The reviewer gave no valid status ({raw_status or 'none'}); treated as fail.")
        status = "fail"
    return {"status": status, "issues": issues, "suggestions": suggestions}


def _find_object(text: str) -> dict | None:
    candidates = [text.strip()] + [block.strip() for block in _FENCE.findall(text)]
    for candidate in candidates:
        value = _load(candidate)
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            end = _balanced_end(text, match.start())
            value = _load(text[match.start():end]) if end else None
        if isinstance(value, dict) and ({"status", "verdict"} & set(value)):
            return value
    return None


def _load(text: str) -> Any:
    for loader in (json.loads, ast.literal_eval):
        try:
            return loader(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None


def _balanced_end(text: str, start: int) -> int | None:
    depth = 0
    for position in range(start, len(text)):
        if text[position] == "{":
            depth += 1
        elif text[position] == "}":
            depth -= 1
            if depth == 0:
                return position + 1
    return None


def _strings(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return [str(item) for item in value if item not in (None, "")]
    return [str(value)]
