"""Secrets out of DSPy's and its LM clients' own log records.

DSPy (``dspy``, ``dspy.*``, its vendored lm15 client under ``dspy._vendor.lm15``), LiteLLM
(``LiteLLM``, ``LiteLLM Router``, ``LiteLLM Proxy``) and the HTTP clients (``httpx``,
``httpcore.*``) log what they see: an authentication error that quotes the key, a debug line
with the request's headers, the REPL output RLM logs at INFO. While the extension is loaded,
and while a `DeepAgent` run works without IPython, a `LibraryScrubFilter` sits first on each of those
loggers and passes every record through the scrubber run records use (`core.run.secrets.scrub`):
the message with its arguments, the traceback text, the stack text.

A logger's filters see only the records logged on that very logger (not those propagated
from its children), so the filter goes on every logger of those families that exists; a logger
of those families created later (a module imported since) gets it when it makes its first record:
a log-record factory in front of logging's own one (`logging.setLogRecordFactory`) puts the filter
on the record's logger, which then runs it on that record. The filter is installed once per holder
(the extension, each running root run) and removed from every logger when the last holder lets
go; the factory is then taken out again (or, if another library has wrapped it since, stays in
the chain doing nothing). Records of any other logger are never touched.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ..core.loop.capability import Capability
from ..core.run.secrets import scrub
from ..core.run.run import RUN_FINISHED

# Logger families scrubbed: a name itself and every ``name.*`` below it.
FAMILIES = ("dspy", "lm15", "LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx", "httpcore",
            "httpx2", "httpcore2")


def in_families(name: str) -> bool:
    return any(name == family or name.startswith(family + ".") for family in FAMILIES)


class LibraryScrubFilter(logging.Filter):
    """Scrubs a record's message (formatted with its arguments), traceback and stack text in place.

    The record leaves with ``msg`` the scrubbed text and no ``args``, so a handler formats it
    as is whatever the arguments were (dicts, numbers, objects). A record whose arguments do not
    fit its message keeps both, scrubbed, as text. Text fields added with ``extra=`` are scrubbed
    too. A traceback that held a secret is kept only as its scrubbed text (``exc_info`` is dropped,
    so no handler renders the raw exception). A record that cannot be scrubbed is withheld: its
    message says so, and the library's call goes on.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            self._scrub(record)
        except Exception:  # never break the library's call; never let the raw record through
            record.msg, record.args, record.exc_info, record.exc_text, record.stack_info = (
                "[log record withheld: it could not be scrubbed of secrets]", None, None, None, None)
        return True

    def _scrub(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: keep what it says, as text, scrubbed
            message = f"{record.msg!s} {record.args!r}"
        record.msg, record.args = scrub(message), None
        if record.exc_info and not record.exc_text:
            try:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            except Exception:  # a traceback that cannot be formatted: its type, never the raw record
                record.exc_text = f"{record.exc_info[0]!r}"
        if record.exc_text:
            scrubbed = scrub(record.exc_text)
            if scrubbed != record.exc_text:
                record.exc_info = None  # the raw exception still quotes the secret
            record.exc_text = scrubbed
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        for name, value in list(vars(record).items()):  # ``extra=`` fields a formatter may print
            if name not in _STANDARD and isinstance(value, (str, dict, list)):
                setattr(record, name, scrub(value))


_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


FILTER = LibraryScrubFilter()
_holders: set[Any] = set()
_lock = threading.Lock()


def _library_loggers() -> list[logging.Logger]:
    existing = [name for name, logger in list(logging.root.manager.loggerDict.items())
                if isinstance(logger, logging.Logger) and in_families(name)]
    return [logging.getLogger(name) for name in sorted(set(existing) | set(FAMILIES))]


class _RecordFactory:
    """In front of the record factory that was there: gives a library logger made since the filter."""

    def __init__(self, previous: Any):
        self.previous = previous

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.previous(*args, **kwargs)
        if _holders and in_families(getattr(record, "name", "")):
            _put_first(logging.getLogger(record.name))  # Logger.handle runs it on this very record next
        return record


def _put_first(logger: logging.Logger) -> None:
    """The filter goes before any other filter of ``logger``: another library's filter (LiteLLM puts its
    own redaction on ``httpx``) sees the record scrubbed, and every record is scrubbed the same way
    whichever library was imported first."""
    if not logger.filters or logger.filters[0] is not FILTER:
        if FILTER in logger.filters:
            logger.removeFilter(FILTER)
        logger.filters.insert(0, FILTER)


_factory: _RecordFactory | None = None  # ours, while it is in logging's chain


def _attach() -> None:
    global _factory
    for logger in _library_loggers():
        _put_first(logger)
    if _factory is None:
        _factory = _RecordFactory(logging.getLogRecordFactory())
        logging.setLogRecordFactory(_factory)


def _detach() -> None:
    global _factory
    for logger in list(logging.root.manager.loggerDict.values()):
        if isinstance(logger, logging.Logger) and FILTER in logger.filters:
            logger.removeFilter(FILTER)
    if _factory is not None and logging.getLogRecordFactory() is _factory:  # else wrapped since: stays, idle
        logging.setLogRecordFactory(_factory.previous)
        _factory = None


def install(holder: Any = "extension") -> None:
    """Scrub the library loggers (idempotent; also picks up loggers created since the last call)."""
    with _lock:
        _holders.add(holder)
        _attach()


def release(holder: Any = "extension") -> None:
    """``holder`` no longer needs the filter; the last one out removes it from every logger."""
    with _lock:
        _holders.discard(holder)
        if not _holders:
            _detach()


def installed() -> bool:
    return FILTER in logging.getLogger("dspy").filters


def scrub_library_logs(agent: Any, run: Any, lms: dict[str, Any]) -> None:
    """The run hook (`core.loop.extensions`): the filter is on for as long as each root run works."""
    if run.parent is not None:  # a sub-agent: its root holds the filter; look again for new loggers
        with _lock:
            if _holders:
                _attach()
        return
    holder = ("run", id(run))
    install(holder)

    def on_event(event: Any) -> None:
        if event.kind == RUN_FINISHED and event.run is run:
            release(holder)
            unsubscribe()

    unsubscribe = run.subscribe(on_event)


LOG_SCRUBBING = Capability("log_scrubbing", on_run=scrub_library_logs)  # DSPy's, LiteLLM's, httpx's
