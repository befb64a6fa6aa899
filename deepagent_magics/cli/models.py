"""Naming a model on the command line: a provider model id, ``local``, or ``scripted:FILE`` for tests and demos.

``--lm openai/gpt-4o-mini`` is a `dspy.LM` (its key and base URL come from the provider's
environment variables, e.g. ``OPENAI_API_KEY``, ``OPENAI_API_BASE``). ``--lm local`` (or
``local:PATH.gguf``) is a llama.cpp server in this process (`core.model.local_server`). ``--lm scripted:steps.json``
(or ``DEEPAGENT_LM=scripted:steps.json``) is a `ScriptedLM` playing the steps in the file, which is
either a list of steps (``[reasoning, code]`` pairs, ``{"reasoning", "code"}`` objects or code
strings) or an object ``{"steps": [...], "scripts": {task fragment: steps}, "replies": ..., "latency": s}``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from ..core.model.local_server import is_local
from ..errors import UserError

SCRIPTED = "scripted:"


class ModelError(UserError, ValueError):
    """A model name the command line cannot use; the message is one line."""


NO_MODEL = "no model: pass --lm openai/gpt-4o-mini (or scripted:FILE.json), or set DEEPAGENT_LM"


def some_model_named(make_lm: Callable[[], Any] | None) -> bool:
    """Whether a model is named for the command, told before DSPy is imported: by a flag (``make_lm``), by
    ``DEEPAGENT_LM``, or (in a process that already imported DSPy, a test's) by DSPy's configured LM."""
    return make_lm is not None or bool(os.environ.get("DEEPAGENT_LM", "").strip()) or "dspy" in sys.modules


def model_from_spec(spec: str | None, flag: str = "--lm", options: dict[str, Any] | None = None) -> Any:
    """The LM ``spec`` names, a model id built with ``options`` (``--lm-option``; None stays None: the
    environment decides)."""
    make = model_maker(spec, flag, options)
    return make() if make is not None else None


def model_maker(spec: str | None, flag: str = "--lm", options: dict[str, Any] | None = None) -> Callable[[], Any] | None:
    """What makes the LM ``spec`` names, with ``spec`` checked now: a mistake in it (a name that is no model id,
    a script that cannot be read) is a `ModelError` told before DSPy is imported, which making the LM does.
    The command checks all of its input this way before it makes anything."""
    if spec is None:
        return None
    spec = spec.strip()
    if spec.startswith(SCRIPTED):
        return scripted_maker(spec[len(SCRIPTED):], flag)
    if is_local(spec):
        return lambda: _local(spec)
    if "/" not in spec or spec.startswith("/") or spec.endswith("/"):
        raise ModelError(f"{flag} {spec!r} is not a model id like 'openai/gpt-4o-mini', 'local' nor 'scripted:FILE.json'")

    def provider_model() -> Any:
        import dspy

        return dspy.LM(spec, **dict(options or {}))

    return provider_model


def _local(spec: str) -> Any:
    from ..core.model.local_server import local_lm
    from ..core.model.local_weights import LocalModelError

    try:
        return local_lm(spec)  # a missing or unreadable model file is told before DSPy is imported
    except LocalModelError as exc:
        raise ModelError(str(exc)) from None


def default_model() -> Any:
    """The LM from ``DEEPAGENT_LM`` when it names a script or the local model (a model id is left to the
    core's resolution)."""
    make = default_maker()
    return make() if make is not None else None


def default_maker() -> Callable[[], Any] | None:
    """`model_maker` for ``DEEPAGENT_LM`` when it names a script or the local model."""
    env = os.environ.get("DEEPAGENT_LM", "").strip()
    return model_maker(env, "DEEPAGENT_LM") if env.startswith(SCRIPTED) or is_local(env) else None


def scripted_model(path: str, flag: str) -> Any:
    """A `ScriptedLM` playing the file at ``path``."""
    return scripted_maker(path, flag)()


def scripted_maker(path: str, flag: str) -> Callable[[], Any]:
    """What makes the `ScriptedLM` playing the file at ``path``, read and checked now."""
    if not path:
        raise ModelError(f"{flag} scripted: needs a file, e.g. scripted:steps.json")
    file = Path(path).expanduser()
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ModelError(f"{flag}: cannot read the script {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelError(f"{flag}: the script {path} is not JSON: {exc}") from None
    if isinstance(data, list):
        data = {"steps": data}
    if not isinstance(data, dict) or not ({"steps", "scripts"} & set(data)):
        raise ModelError(f"{flag}: the script {path} must be a list of steps or an object with 'steps' or 'scripts'")
    try:
        steps = [_step(step) for step in data["steps"]] if "steps" in data else None
        scripts = {str(key): [_step(step) for step in value] for key, value in (data.get("scripts") or {}).items()}
        latency = float(data.get("latency", 0.0))
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise ModelError(f"{flag}: a step in {path} is not [reasoning, code], {{\"reasoning\", \"code\"}} or code: {exc}") from None

    def scripted() -> Any:
        from ..testing import ScriptedLM

        try:
            return ScriptedLM(steps, scripts=scripts, replies=data.get("replies", "(scripted reply)"), latency=latency,
                              model=f"scripted/{file.stem}")
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise ModelError(f"{flag}: the script {path} cannot be played: {exc}") from None

    return scripted


def _step(step: Any) -> Any:
    if isinstance(step, str):
        return step
    if isinstance(step, list) and len(step) == 2 and all(isinstance(part, str) for part in step):
        return tuple(step)
    if isinstance(step, dict) and isinstance(step.get("code"), str):
        return {"reasoning": str(step.get("reasoning", "")), "code": step["code"]}
    raise TypeError(f"{json.dumps(step)[:80]}")
