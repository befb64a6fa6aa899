"""Secrets never reach the disk: every string of a record is scrubbed before it is written.

Scrubbed: the values of environment variables whose names look secret, the
secret-looking settings of the run's LMs (``api_key``, headers...), and well-known
key shapes matched anywhere in any text.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable

REDACTED = "[REDACTED]"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.I)
# Shapes of provider keys, matched anywhere in any text of the record.
KEY_PATTERNS = (
    r"\bsk-[A-Za-z0-9_\-]{8,}",  # OpenAI, Anthropic (sk-ant-...), many OpenAI-compatible servers
    r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bgh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
    r"\bhf_[A-Za-z0-9]{20,}",  # Hugging Face tokens
    r"\bAIza[0-9A-Za-z_\-]{30,}",  # Google API keys
    r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack tokens
    r"\b[Bb]earer\s+[A-Za-z0-9._\-]{12,}",  # Authorization headers
)
MIN_SECRET_LENGTH = 6  # shorter values ("1", "true") would scrub ordinary text


def secret_values(*lms: Any, environ: dict[str, str] | None = None) -> set[str]:
    """Values to scrub: secret-looking environment variables and LM settings (``api_key``, headers...)."""
    environ = os.environ if environ is None else environ
    values = {value for name, value in environ.items() if SECRET_NAME.search(name)}
    for lm in lms:
        _collect(getattr(lm, "kwargs", None), values, secret=False)
        for attribute in ("api_key", "api_base_key"):
            _collect(getattr(lm, attribute, None), values, secret=True)
    return {value for value in values if isinstance(value, str) and len(value) >= MIN_SECRET_LENGTH}


def _collect(value: Any, into: set[str], secret: bool) -> None:
    if isinstance(value, str):
        if secret:
            into.add(value)
            # "Bearer sk-..." also hides the bare key
            into.update(part for part in value.split() if len(part) >= MIN_SECRET_LENGTH)
    elif isinstance(value, dict):
        for key, item in value.items():
            _collect(item, into, secret or bool(SECRET_NAME.search(str(key))))
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect(item, into, secret)


class Redactor:
    """Replaces secrets in every string of a JSON-able value (keys included)."""

    def __init__(self, secrets: Iterable[str] = ()):
        self.secrets = set(secrets)
        self._compile()

    def _compile(self) -> None:
        literal = [re.escape(value) for value in sorted(self.secrets, key=len, reverse=True)]
        self.pattern = re.compile("|".join(literal + list(KEY_PATTERNS)))

    def refresh(self, extra: Iterable[str] = ()) -> None:
        """Pick up secrets set in the environment since (a notebook can set them mid-session)."""
        current = self.secrets | secret_values() | set(extra)
        if current != self.secrets:
            self.secrets = current
            self._compile()

    def text(self, text: str) -> str:
        return self.pattern.sub(REDACTED, text)

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self(key) if isinstance(key, str) else key: self(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self(item) for item in value]
        return value
