"""records/log_scrubbing.py: DSPy's and its clients' log records scrubbed of secrets while someone needs it
(hostile cases: tests/adversarial/test_log_scrubbing.py)."""

from __future__ import annotations

import logging

import pytest

from deepagent_magics.core.run.secrets import register_secret
from deepagent_magics.records import log_scrubbing
from deepagent_magics.records.log_scrubbing import FILTER, LibraryScrubFilter, in_families, install, release

SECRET = "sk-log-scrubbing-secret-987654"


@pytest.fixture
def holder():
    register_secret(SECRET)
    name = object()
    install(name)
    yield name
    release(name)


def test_library_families_are_known_by_name():
    assert in_families("dspy") and in_families("dspy.clients.lm") and in_families("httpx")
    assert not in_families("dspyx") and not in_families("myapp")


def test_a_record_leaves_with_its_message_scrubbed_and_no_arguments():
    record = logging.LogRecord("dspy", logging.WARNING, "f", 1, "auth failed for %s (%d tries)", (SECRET, 3), None)
    assert LibraryScrubFilter().filter(record)
    assert SECRET not in record.getMessage() and "(3 tries)" in record.getMessage() and record.args is None


def test_a_traceback_quoting_a_secret_is_kept_only_as_scrubbed_text(holder):
    try:
        raise RuntimeError(f"bad key {SECRET}")
    except RuntimeError:
        record = logging.LogRecord("litellm", logging.ERROR, "f", 1, "failed", None, __import__("sys").exc_info())
    LibraryScrubFilter().filter(record)
    assert record.exc_info is None and SECRET not in record.exc_text and "RuntimeError" in record.exc_text


def test_a_record_that_cannot_be_scrubbed_is_withheld_not_passed_raw():
    class Hostile:
        def __str__(self):
            raise ValueError("no")

    record = logging.LogRecord("dspy", logging.INFO, "f", 1, Hostile(), None, None)
    record.stack_info = object()  # scrubbing it fails
    assert LibraryScrubFilter().filter(record) is True
    assert record.msg == "[log record withheld: it could not be scrubbed of secrets]"


def test_the_filter_is_on_while_anyone_holds_it_and_off_after_the_last(holder):
    other = object()
    install(other)
    assert FILTER in logging.getLogger("dspy").filters
    release(other)
    assert log_scrubbing.installed()  # the fixture still holds it
    late = logging.getLogger("httpx.brand_new_logger")
    late.warning("key %s", SECRET)  # a logger made after install gets the filter on its first record
    assert FILTER in late.filters


def test_a_library_log_line_shows_no_secret(holder, caplog):
    with caplog.at_level(logging.WARNING, logger="dspy"):
        logging.getLogger("dspy.clients").warning("calling with %s", SECRET)
    assert caplog.records and SECRET not in caplog.text
