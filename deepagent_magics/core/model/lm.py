"""Which LM a run uses.

In order: the one given explicitly (``--lm`` on the cell, ``DeepAgent(lm=...)``),
the magic's configured default (``%deepagent_config --lm``), the notebook's
``dspy.configure(lm=...)``, then the ``DEEPAGENT_LM`` environment variable.
A spec is an LM, a notebook variable holding one, a model id (``openai/gpt-4o-mini``), or
``local`` / ``local:PATH.gguf``: a llama.cpp server in this process (`local_server`).
The keys of every LM resolved here are secrets from then on (`core.run.secrets`).
"""

from __future__ import annotations

import os
from typing import Any, Mapping

import dspy

from ...errors import InvalidType, InvalidValue, UserError
from ..run.secrets import register_lm_secrets
from .local_server import is_local, local_lm

NO_LM_MESSAGE = (
    "No LM configured: pass --lm openai/gpt-4o-mini, run %deepagent_config --lm MODEL, "
    "call dspy.configure(lm=dspy.LM(MODEL)), or set DEEPAGENT_LM."
)


class NoLMError(UserError, RuntimeError):
    """No LM could be found; the message says how to set one."""


def make_lm(spec: Any, namespace: Mapping[str, Any] | None = None, options: Mapping[str, Any] | None = None) -> Any:
    """An LM from an LM object, the name of a notebook variable holding one, or a model id (built with
    ``options``: `lm_options`)."""
    if spec is None or isinstance(spec, dspy.BaseLM):
        return spec
    if not isinstance(spec, str):
        raise InvalidType(f"an LM must be a dspy LM or a model id string, not {type(spec).__name__}")
    if namespace is not None and isinstance(namespace.get(spec), dspy.BaseLM):
        return namespace[spec]
    if is_local(spec):
        return local_lm(spec)
    if "/" not in spec:
        raise InvalidValue(f"{spec!r} is not a model id like 'openai/gpt-4o-mini' (or local) nor a notebook variable holding an LM")
    return dspy.LM(spec, **dict(options or {}))


def resolve_lm(explicit: Any = None, configured: Any = None, namespace: Mapping[str, Any] | None = None,
               options: Mapping[str, Any] | None = None) -> Any:
    """The run's LM (see the module docstring); ``options`` apply where it is built from a model id."""
    lm = _resolve(explicit, configured, namespace, options)
    register_lm_secrets(lm)
    return lm


def _resolve(explicit: Any, configured: Any, namespace: Mapping[str, Any] | None,
             options: Mapping[str, Any] | None = None) -> Any:
    for candidate in (explicit, configured):
        lm = make_lm(candidate, namespace, options)
        if lm is not None:
            return lm
    if dspy.settings.lm is not None:
        return dspy.settings.lm
    env = os.environ.get("DEEPAGENT_LM", "").strip()
    if env:
        return make_lm(env, namespace, options)
    raise NoLMError(NO_LM_MESSAGE)


class PreviewLM(dspy.BaseLM):
    """Stands in for the LM when the prompt is only shown (``%deepagent_prompt``): the prompt does not depend
    on the model."""

    def __init__(self):
        super().__init__(model="(no LM: prompt preview)")

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NoLMError("the prompt preview has no LM")


def lm_label(lm: Any) -> str:
    return str(getattr(lm, "model", type(lm).__name__))
