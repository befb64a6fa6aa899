"""Secret redaction, kept importable here: it lives in `core.redaction`, because the run scrubs
what it stores and emits at the source (and ``core`` imports nothing from ``records``).
Records scrub again on write and on read."""

from ..core.redaction import (
    FRAGMENT,
    KEY_PATTERNS,
    MIN_SECRET_LENGTH,
    REDACTED,
    Redactor,
    ScrubFilter,
    default_redactor,
    is_secret_name,
    protect_logs,
    register_lm_secrets,
    scrub,
    secret_values,
)

__all__ = ["FRAGMENT", "KEY_PATTERNS", "MIN_SECRET_LENGTH", "REDACTED", "Redactor", "ScrubFilter", "default_redactor",
           "is_secret_name", "protect_logs", "register_lm_secrets", "scrub", "secret_values"]
