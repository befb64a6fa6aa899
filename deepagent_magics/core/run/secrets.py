"""Secrets out of everything a run shows or keeps, including any piece of 8 characters or more.

A secret is the value of an environment variable whose name says credential (KEY, TOKEN,
SECRET, PASSWORD, CREDENTIAL, AUTH as words of the name: ``OPENAI_API_KEY`` is one,
``KEYBOARD_LAYOUT`` and ``AUTHOR`` are not), a secret-looking setting of an LM (``api_key``,
headers), a value registered with `register_secret` (a token typed into a magic), or a
well-known key shape (``sk-...``, ``ghp_...``) anywhere in any text.

Not only whole secrets: any 8-character piece of a secret, of its reverse, of its base64
forms (at the three alignments) or of its hex form is replaced, so cutting a text short
(a tool argument, a long output) cannot leave part of a secret behind. A text is checked by
looking up its 4-grams at every fifth position (any 8-character piece contains one) among
the secrets' 4-grams, and only a hit is confirmed against the 8-grams; only a text that has
a piece is rewritten. Results are cached, so scrubbing a record again costs only its new
strings.

The run scrubs what it stores and emits (`core.run.run`); records scrub again on write and on
read; the magics scrub what they print; the package's log records are scrubbed by a filter.
Other transformations (every other character, rot13, ...) are not detected: code that wants
to leak a secret on purpose runs with the user's powers anyway.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import re
import threading
from typing import Any, Iterable

REDACTED = "[REDACTED]"
FRAGMENT = 8  # no piece of a secret this long survives
MIN_SECRET_LENGTH = 6  # shorter values ("1", "true") would scrub ordinary text
SECRET_WORDS = {"KEY", "KEYS", "APIKEY", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD",
                "PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH", "AUTHORIZATION"}
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# Shapes of provider keys, matched anywhere in any text.
KEY_PATTERNS = (
    r"\bsk-[A-Za-z0-9_\-]{8,}",  # OpenAI, Anthropic (sk-ant-...), many OpenAI-compatible servers
    r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bgh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
    r"\bhf_[A-Za-z0-9]{20,}",  # Hugging Face tokens
    r"\bAIza[0-9A-Za-z_\-]{30,}",  # Google API keys
    r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack tokens
    r"\b[Bb]earer\s+[A-Za-z0-9._\-]{12,}",  # Authorization headers
)
CACHE_LIMIT = 20_000
_SHAPES = re.compile("|".join(KEY_PATTERNS))
_STRIDE = 5  # with 4-grams: every 8-character window holds one that starts at a multiple of 5


def is_secret_name(name: str) -> bool:
    """Whether an environment variable of this name holds a credential (by the words of its name)."""
    words = {word.upper() for word in _WORDS.findall(name)}
    return bool(words & SECRET_WORDS) or any(word.endswith(("APIKEY", "TOKEN", "SECRET", "PASSWORD")) for word in words)


def _worth_hiding(value: Any) -> bool:
    if not isinstance(value, str) or len(value.strip()) < MIN_SECRET_LENGTH:
        return False
    # A path to a credentials file (GOOGLE_APPLICATION_CREDENTIALS, SSH_AUTH_SOCK) is not itself secret.
    return not (os.path.isabs(value) and os.path.exists(value))


_registered: set[str] = set()  # values registered as secrets in this process (`register_secret`)


def register_secret(*values: str | None) -> None:
    """Hide these values from now on, wherever a run's text is scrubbed (a token typed into a magic)."""
    new = {value.strip() for value in values if _worth_hiding(value)} - _registered
    if new:
        _registered.update(new)
        default_redactor().add(new)


def secret_values(*lms: Any, environ: dict[str, str] | None = None) -> set[str]:
    """Values to scrub: credential-named environment variables, LM settings (``api_key``, headers...)
    and the registered secrets."""
    environ = os.environ if environ is None else environ
    values = {value for name, value in environ.items() if is_secret_name(name)} | _registered
    for lm in lms:
        _collect(getattr(lm, "kwargs", None), values, secret=False)
        for attribute in ("api_key", "api_base_key"):
            _collect(getattr(lm, attribute, None), values, secret=True)
    return {value.strip() for value in values if _worth_hiding(value)}


def _collect(value: Any, into: set[str], secret: bool) -> None:
    if isinstance(value, str):
        if secret:
            into.add(value)
            into.update(value.split())  # "Bearer sk-..." also hides the bare key
    elif isinstance(value, dict):
        for key, item in value.items():
            _collect(item, into, secret or is_secret_name(str(key)))
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect(item, into, secret)


def _forms(secret: str) -> list[str]:
    """The secret and the encodings whose pieces are hidden too (only their parts fixed by the secret)."""
    data = secret.encode("utf-8", "surrogatepass")
    out = [secret, secret[::-1], binascii.hexlify(data).decode()]
    for offset in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * offset + data).decode()
            out.append(encoded[4 * ((offset + 2) // 3):(len(data) + offset) // 3 * 4])
    return out


class Redactor:
    """Replaces secrets, and any 8-character piece of one, in every string of a JSON-able value.

    Args:
        secrets: the values to hide.
        environ: also hide credential-named environment variables (re-read by `refresh`).
    """

    def __init__(self, secrets: Iterable[str] = (), *, environ: bool = False):
        self.extra = {value for value in secrets if _worth_hiding(value)}
        self.environ = environ
        self.secrets: set[str] = set()
        self.scans = 0  # texts actually scanned (not answered from the cache)
        self._snapshot: Any = None
        self._lock = threading.Lock()
        self._cache: dict[str, str] = {}
        self._compile(self._current())

    def _current(self) -> set[str]:
        return self.extra | (secret_values() if self.environ else set())

    def _compile(self, secrets: set[str]) -> None:
        grams: set[str] = set()
        for secret in secrets:
            for form in _forms(secret):
                grams.update(form[i:i + FRAGMENT] for i in range(len(form) - FRAGMENT + 1))
        self.secrets = set(secrets)
        self._grams = grams
        self._quads = {gram[i:i + 4] for gram in grams for i in range(FRAGMENT - 3)}
        self._whole = sorted((value for value in secrets if len(value) < FRAGMENT), key=len, reverse=True)
        self._cache = {}

    def add(self, values: Iterable[str]) -> None:
        """Hide these values too (an LM's key, once it is known)."""
        new = {value.strip() for value in values if _worth_hiding(value)} - self.extra
        if new:
            with self._lock:
                self.extra |= new
                self._compile(self._current())

    def refresh(self, extra: Iterable[str] = ()) -> None:
        """Pick up secrets set in the environment since (a notebook, or agent code, can set them mid-run)."""
        if extra:
            self.add(extra)
        if not self.environ:
            return
        snapshot = getattr(os.environ, "_data", None)
        snapshot = tuple(snapshot.items()) if snapshot is not None else tuple(os.environ.items())
        if snapshot == self._snapshot:
            return
        with self._lock:
            self._snapshot = snapshot
            current = self._current()
            if current != self.secrets:
                self._compile(current)

    def text(self, text: str) -> str:
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        self.scans += 1
        out = text
        if self._has_piece(out) or any(value in out for value in self._whole):
            out = self._hide_pieces(out)
        if _SHAPES.search(out):
            out = _SHAPES.sub(REDACTED, out)
        if len(self._cache) >= CACHE_LIMIT:
            self._cache = {}
        self._cache[text] = out
        return out

    def _has_piece(self, text: str) -> bool:
        quads, grams, last = self._quads, self._grams, len(text) - FRAGMENT
        if not quads or last < 0:
            return False
        for at in range(0, last + 5, _STRIDE):
            if text[at:at + 4] in quads:
                for start in range(max(0, at - 4), min(at, last) + 1):
                    if text[start:start + FRAGMENT] in grams:
                        return True
        return False

    def _hide_pieces(self, text: str) -> str:
        grams = self._grams
        covered = bytearray(len(text))
        for i in range(len(text) - FRAGMENT + 1):
            if text[i:i + FRAGMENT] in grams:
                covered[i:i + FRAGMENT] = b"\1" * FRAGMENT
        for value in self._whole:
            at = text.find(value)
            while at >= 0:
                covered[at:at + len(value)] = b"\1" * len(value)
                at = text.find(value, at + 1)
        out, i = [], 0
        while i < len(text):
            if covered[i]:
                while i < len(text) and covered[i]:
                    i += 1
                out.append(REDACTED)
            else:
                start = i
                while i < len(text) and not covered[i]:
                    i += 1
                out.append(text[start:i])
        return "".join(out)

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self(key) if isinstance(key, str) else key: self(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self(item) for item in value]
        return value


_default: Redactor | None = None
_default_lock = threading.Lock()


def default_redactor() -> Redactor:
    """The process-wide redactor: credential-named environment variables and every LM key seen."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Redactor(environ=True)
    return _default


def scrub(value: Any) -> Any:
    """``value`` with every secret (and piece of one) replaced, as of the environment now."""
    redactor = default_redactor()
    redactor.refresh()
    return redactor(value)


def register_lm_secrets(*lms: Any) -> None:
    """Hide the keys of these LMs from now on (called when a run resolves its LM)."""
    values = secret_values(*lms, environ={})
    if values:
        default_redactor().add(values)


class ScrubFilter(logging.Filter):
    """Scrubs a log record's message and traceback (installed on the package's loggers)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to logging to report
            return True
        record.msg, record.args = scrub(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        return True


_FILTER = ScrubFilter()


def protect_logs(package: str = "deepagent_magics") -> None:
    """Install the scrub filter on the package's logger and every logger under it (idempotent)."""
    names = [package] + [name for name in list(logging.root.manager.loggerDict) if name.startswith(package + ".")]
    for name in names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
