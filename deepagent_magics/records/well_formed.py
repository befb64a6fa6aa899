"""A record read from disk, made safe to show: every field of the type its readers expect.

Records live in the workspace, where the agent can write (``write_file('.deepagent/runs/x.json',
...)``) and so can anything else. A file there is data, not a promise: ``steps`` may be a
string, a usage count a list, a sub-agent a number. `normalize` turns whatever JSON object
has at least an ``id`` and a ``steps`` list into a record every reader (``%deepagent_runs``,
``%deepagent_trace``, export, replay) can use, coercing or dropping what does not fit;
anything else is a ValueError, which the readers report in one line or skip.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 20  # sub-agents nested deeper than this are dropped
USAGE_FIELDS = ("lm_calls", "input_tokens", "output_tokens", "cost", "cached_input_tokens", "unpriced_calls")


def normalize(raw: Any, depth: int = 0) -> dict[str, Any]:
    """A well-formed copy of the record ``raw``; ValueError if it is not a run record at all."""
    if not isinstance(raw, dict) or "id" not in raw or not isinstance(raw.get("steps"), list):
        raise ValueError("not a deepagent run record (no id and list of steps)")
    record = dict(raw)
    record["id"] = _text(raw.get("id"))
    for name in ("task", "status", "profile"):
        record[name] = _text(raw.get(name, "" if name == "task" else None)) or (
            "" if name == "task" else "unknown" if name == "status" else "default")
    for name in ("error", "prompt_hash", "format", "extracted"):
        record[name] = _text(raw[name]) if raw.get(name) is not None else None
    for name in ("started_at", "ended_at", "updated_at"):
        record[name] = _time(raw.get(name))
    record["elapsed"] = _number(raw.get("elapsed"))
    for name in ("depth", "parent_step", "max_iters"):
        value = _number(raw.get(name))
        record[name] = int(value) if value is not None else (0 if name == "depth" else None)
    record["result"] = _scalar(raw.get("result"))
    record["config"] = _config(raw.get("config"))
    record["usage"] = _usage(raw.get("usage"))
    if "usage_total" in raw:
        record["usage_total"] = _usage(raw.get("usage_total"))
    record["todos"] = [{"content": _text(t.get("content")), "status": _text(t.get("status")) or "pending"}
                       for t in _list(raw.get("todos")) if isinstance(t, dict)]
    record["files_written"] = [_text(path) for path in _list(raw.get("files_written"))]
    record["files"] = {_text(k): int(_number(v) or 0) for k, v in _dict(raw.get("files")).items()}
    record["tool_calls"] = [_tool_call(call) for call in _list(raw.get("tool_calls")) if isinstance(call, dict)]
    record["steps"] = [_step(step, position, depth) for position, step in enumerate(raw["steps"], start=1)
                       if isinstance(step, dict)]
    record["orphans"] = _children(raw.get("orphans"), depth)
    return record


def _step(raw: dict[str, Any], position: int, depth: int) -> dict[str, Any]:
    index = _number(raw.get("index"))
    return {
        "index": int(index) if index is not None and 0 < index < 10**9 else position,
        "reasoning": _text(raw.get("reasoning")),
        "code": _text(raw.get("code")),
        "output": _text(raw["output"]) if raw.get("output") is not None else None,
        "started_at": _time(raw.get("started_at")),
        "ended_at": _time(raw.get("ended_at")),
        "children": _children(raw.get("children"), depth),
    }


def _children(raw: Any, depth: int) -> list[dict[str, Any]]:
    if depth >= MAX_DEPTH:
        return []
    out = []
    for child in _list(raw):
        try:
            out.append(normalize(child, depth + 1))
        except ValueError:
            continue
    return out


def _tool_call(raw: dict[str, Any]) -> dict[str, Any]:
    call = {"name": _text(raw.get("name")), "args": {_text(k): _text(v) for k, v in _dict(raw.get("args")).items()},
            "error": _text(raw["error"]) if raw.get("error") is not None else None}
    step = _number(raw.get("step"))
    call["step"] = int(step) if step is not None else None
    if raw.get("subagents"):
        call["subagents"] = [_text(i) for i in _list(raw.get("subagents"))]
    return call


def _config(raw: Any) -> dict[str, Any]:
    # A setting is a scalar, or a list of them (a thread's names_created): nothing deeper is kept.
    config = {_text(k): [_scalar(item) for item in v if not isinstance(item, (dict, list))] if isinstance(v, list)
              else _scalar(v) for k, v in _dict(raw).items()}
    for name in ("workspace", "lm", "sub_lm"):
        if config.get(name) is not None:
            config[name] = _text(config[name])
    return config


def _usage(raw: Any) -> dict[str, Any]:
    usage = _dict(raw)
    out: dict[str, Any] = {}
    for name in USAGE_FIELDS:
        value = _number(usage.get(name))
        if name == "cost":  # None: calls were made and none had a price (core.run.run.Usage)
            out[name] = None if name in usage and usage[name] is None else float(value or 0)
        else:
            out[name] = int(value or 0)
    return out


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str)[:10_000]
    except (TypeError, ValueError):
        return str(value)[:10_000]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value != value or value in (float("inf"), float("-inf")) or abs(value) > 1e15:
        return None
    return value


def _time(value: Any) -> float | None:
    """A Unix time a clock can show (after 1970, before the year 5000), else None."""
    number = _number(value)
    return number if number is not None and 0 <= number < 95_617_584_000 else None


def _scalar(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, (int, float)):
        return _number(value) if not isinstance(value, bool) else value
    return _text(value)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}
