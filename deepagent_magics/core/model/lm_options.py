"""LM options on the model-id path: ``--lm-option max_tokens=4000 --lm-option timeout=600``.

When the LM is named by a model id (``--lm openai/gpt-4o-mini``, ``DEEPAGENT_LM``), these become
``dspy.LM(model_id, **options)``: a request timeout, ``max_tokens``, ``temperature``, ``api_base``
and ``api_key`` for a local server, ``num_retries``. Each value is read as a JSON scalar
(``4000``, ``0.2``, ``true``, ``null``, ``"text"``), else kept as the string written. An LM object
the user made keeps its own options.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from ...errors import UserError


class LMOptionError(UserError, ValueError):
    """An ``--lm-option`` that is not ``KEY=VALUE`` with a usable key; the message is one line."""


def parse_lm_option(text: str) -> tuple[str, Any]:
    key, sep, raw = str(text).partition("=")
    key = key.strip()
    if not sep or not key:
        raise LMOptionError(f"--lm-option {text!r}: write KEY=VALUE, e.g. --lm-option max_tokens=4000")
    if not key.isidentifier():
        raise LMOptionError(f"--lm-option {text!r}: {key!r} is not an option name (letters, digits, '_')")
    if key == "model":
        raise LMOptionError("--lm-option model=...: name the model with --lm")
    try:
        value = json.loads(raw)
    except ValueError:
        return key, raw
    if isinstance(value, (dict, list)):  # only scalars: a structure on the command line is a mistake
        raise LMOptionError(f"--lm-option {text!r}: the value must be a number, true/false, null or text")
    return key, value


def parse_lm_options(values: Iterable[str]) -> dict[str, Any]:
    """``["max_tokens=4000", "timeout=600"]`` -> {"max_tokens": 4000, "timeout": 600} (a later repeat wins)."""
    return dict(parse_lm_option(value) for value in values)
