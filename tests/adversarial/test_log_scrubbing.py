"""Secrets out of DSPy's and its LM clients' own log records (issue 10, item 11: "or logs").

DSPy, its vendored lm15 client, LiteLLM and httpx log what they see: an authentication error
that quotes the key, headers at DEBUG, the REPL output RLM logs at INFO. While the extension is
loaded, and while `DeepAgent.run` works without IPython, those records pass through the scrubber
run records use. Each test logs as the library would, on a handler of its own, and reads what
the handler wrote; a record of an unrelated logger is left alone.
"""

from __future__ import annotations

import io
import logging

import pytest

import deepagent_magics
from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.run.secrets import FRAGMENT
from deepagent_magics.records import log_scrubbing

KEY = "sk-proj-Zq8rT4uV7wX2yA5bC9dE3fG6hJ1kL0mN"  # OPENAI_API_KEY
TOKEN = "tOk3n-Hq72Lx91Vb38Nc47Md56Kf"  # a custom *_TOKEN: no well-known shape, only its name says secret
BEARER = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXBheWxvYWQ.Sig_n4tUr3"  # an unknown bearer token


def fragments(secret: str) -> list[str]:
    return [secret[i:i + FRAGMENT] for i in range(len(secret) - FRAGMENT + 1)]


def leaks(text: str, *secrets: str) -> list[str]:
    return [piece for secret in secrets for piece in fragments(secret) if piece in text]


@pytest.fixture
def secrets(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ACME_SERVICE_TOKEN", TOKEN)


class Capture:
    """A handler of the test's own on one logger: what a user's log file would hold."""

    def __init__(self, name: str):
        self.logger = logging.getLogger(name)
        self.stream = io.StringIO()
        self.handler = logging.StreamHandler(self.stream)
        self.handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.level = self.logger.level
        self.logger.addHandler(self.handler)
        self.logger.setLevel(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.handler.emit, emit = (lambda record: (self.records.append(record), emit(record))), self.handler.emit

    @property
    def text(self) -> str:
        return self.stream.getvalue()

    def close(self) -> None:
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.level)


@pytest.fixture
def capture():
    opened: list[Capture] = []

    def open_(name: str) -> Capture:
        opened.append(Capture(name))
        return opened[-1]

    yield open_
    for item in opened:
        item.close()


# ----------------------------------------------------------------- while the extension is loaded
HOSTILE = {
    # name: (logger, how it logs)
    "env key in an auth error": ("dspy.clients.lm",
                                 lambda log: log.error("AuthenticationError: Incorrect API key provided: %s", KEY)),
    "custom *_TOKEN in an f-string": ("LiteLLM", lambda log: log.warning(f"retrying with token={TOKEN}")),
    "bearer header at DEBUG": ("httpx", lambda log: log.debug("headers: %s", [("Authorization", f"Bearer {BEARER}")])),
    "key inside a dict arg": ("httpcore.http11",
                              lambda log: log.debug("request %s", {"headers": {"api-key": KEY}, "timeout": 5})),
    "non-str %-args": ("dspy.predict.rlm", lambda log: log.info("%d tries, %.1f s, key %r", 3, 1.5, TOKEN)),
    "vendored lm15 client": ("dspy._vendor.lm15.transports", lambda log: log.warning("401 for key " + KEY)),
    "a key cut short": ("LiteLLM Router", lambda log: log.info("key prefix %s...", KEY[:14])),
    "args that do not fit the message": ("dspy", lambda log: log.warning("key %s %s", TOKEN)),
}


@pytest.mark.parametrize("case", list(HOSTILE), ids=list(HOSTILE))
def test_library_log_records_are_scrubbed_while_the_extension_is_loaded(ip, secrets, capture, case):
    name, log = HOSTILE[case]
    captured = capture(name)
    log(captured.logger)
    assert captured.text, "the record was dropped, not scrubbed"
    assert not leaks(captured.text, KEY, TOKEN, BEARER), captured.text
    assert "[REDACTED]" in captured.text


def test_an_exception_quoting_the_key_is_scrubbed_in_logger_exception(ip, secrets, capture):
    captured = capture("dspy.clients.lm")
    try:
        raise PermissionError(f"invalid x-api-key {KEY} for project; token {TOKEN}")
    except PermissionError:
        captured.logger.exception("LM call failed")
    assert "PermissionError" in captured.text and "Traceback" in captured.text  # the traceback is still there
    assert not leaks(captured.text, KEY, TOKEN), captured.text
    # no handler can render the raw exception again from the record
    record = captured.records[-1]
    assert record.exc_info is None or not leaks(str(record.exc_info[1]), KEY, TOKEN)


def test_a_chained_exception_from_a_provider_is_scrubbed(ip, secrets, capture):
    captured = capture("LiteLLM")
    try:
        try:
            raise ValueError({"error": {"message": f"Incorrect API key provided: {KEY}"}})
        except ValueError as inner:
            raise RuntimeError("provider said no") from inner
    except RuntimeError:
        captured.logger.error("call failed", exc_info=True, stack_info=True)
    assert "provider said no" in captured.text
    assert not leaks(captured.text, KEY), captured.text


def test_a_field_given_with_extra_is_scrubbed(ip, secrets, capture):
    captured = capture("LiteLLM Proxy")
    captured.handler.setFormatter(logging.Formatter("%(message)s key=%(api_key)s headers=%(headers)s n=%(n)d"))
    captured.logger.info("call", extra={"api_key": KEY, "headers": {"Authorization": f"Bearer {BEARER}"}, "n": 3})
    assert "call key=" in captured.text and "n=3" in captured.text
    assert not leaks(captured.text, KEY, BEARER), captured.text


def test_a_message_object_whose_str_quotes_the_key_is_scrubbed(ip, secrets, capture):
    class Failure:
        def __str__(self):
            return f"provider error for {TOKEN}"

    captured = capture("dspy.clients.lm")
    captured.logger.error(Failure())
    assert "provider error for" in captured.text and not leaks(captured.text, TOKEN), captured.text


def test_a_record_that_cannot_be_scrubbed_is_withheld_and_the_library_call_goes_on(ip, secrets, capture):
    class Hostile:
        def __str__(self):
            raise RuntimeError(f"str() failed for {KEY}")

        __repr__ = __str__

    captured = capture("dspy.clients.lm")
    captured.logger.warning(Hostile())  # logging itself would print a traceback quoting the key
    captured.logger.warning("key %s", Hostile())
    assert captured.text.count("withheld") == 2 and not leaks(captured.text, KEY), captured.text


def test_records_of_other_loggers_are_left_alone(ip, secrets, capture):
    for name in ("myapp", "dspyx", "httpx_helper", "notebook.dspy"):
        captured = capture(name)
        captured.logger.warning("my own key %s, %d", KEY, 7)
        assert KEY in captured.text, name
        assert captured.records[-1].args == (KEY, 7)  # untouched: a user's handler sees their record as logged


def test_a_library_logger_created_after_loading_is_scrubbed_from_its_first_record(ip, secrets, capture):
    name = "LiteLLM.created_after_loading_for_this_test"
    assert name not in logging.root.manager.loggerDict
    captured = capture(name)  # the logger is made now, long after the extension was loaded
    captured.logger.error("bad key %s", KEY)
    assert captured.text and not leaks(captured.text, KEY), captured.text


def test_a_library_logger_created_by_agent_code_is_scrubbed_in_the_run(ip, secrets, capture, tmp_path):
    name = "dspy.brand_new_module_for_this_test"
    assert name not in logging.root.manager.loggerDict
    captured = capture(name)
    lm = ScriptedLM([("Log.", f"import logging\nlogging.getLogger({name!r}).warning('k=' + __import__('os')"
                              f".environ['ACME_SERVICE_TOKEN'])\nSUBMIT(result='ok')")])
    DeepAgent(lm=lm, workspace=tmp_path).run("log something", namespace={})
    assert captured.text and not leaks(captured.text, TOKEN), captured.text


class Peek(logging.Filter):
    """Another library's filter on the same logger (LiteLLM puts its own redaction on ``httpx``): what it sees."""

    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.seen.append(record.getMessage())
        return True


@pytest.mark.parametrize("made", ["before loading", "after loading"])
def test_a_filter_another_library_put_on_the_logger_first_sees_the_record_scrubbed(ip, secrets, capture, made):
    """Ours runs first whatever was imported first, so no other filter reads a secret and every record says
    ``[REDACTED]`` the same way (in CI, LiteLLM's own ``REDACTED`` won when LiteLLM was imported first)."""
    name = f"httpx.peeked_{made.replace(' ', '_')}"
    peek = Peek()
    if made == "before loading":  # the logger and the other filter exist when the extension loads
        deepagent_magics.unload_ipython_extension(ip)
        logging.getLogger(name).addFilter(peek)
        deepagent_magics.load_ipython_extension(ip)
    else:  # made since: our filter joins it at its first record (the record factory)
        logging.getLogger(name).addFilter(peek)
    captured = capture(name)
    try:
        captured.logger.debug("headers: %s", [("Authorization", f"Bearer {BEARER}")])
    finally:
        captured.logger.removeFilter(peek)
    assert peek.seen and not leaks(peek.seen[0], BEARER), peek.seen
    assert "[REDACTED]" in peek.seen[0] and "[REDACTED]" in captured.text, captured.text


def test_the_filter_is_removed_on_unload_and_back_on_load(ip, secrets, capture):
    deepagent_magics.unload_ipython_extension(ip)
    try:
        assert not log_scrubbing.installed()
        assert all(log_scrubbing.FILTER not in logger.filters for logger in logging.root.manager.loggerDict.values()
                   if isinstance(logger, logging.Logger))
        captured = capture("dspy.clients.lm")
        captured.logger.error("key %s", KEY)
        assert KEY in captured.text  # unloaded: nothing of ours is left on the user's logging
    finally:
        deepagent_magics.load_ipython_extension(ip)
    assert log_scrubbing.installed()
    deepagent_magics.load_ipython_extension(ip)  # loaded twice: still one filter
    assert logging.getLogger("dspy").filters.count(log_scrubbing.FILTER) == 1


# ----------------------------------------------------------------- DeepAgent.run without IPython
def test_without_ipython_the_filter_holds_for_the_run_and_is_gone_after(ip, secrets, capture, tmp_path):
    deepagent_magics.unload_ipython_extension(ip)  # as in a script: no extension
    try:
        captured = capture("dspy.predict.rlm")
        code = ("import logging, os\n"
                "logging.getLogger('dspy.predict.rlm').warning('using %s and %s', os.environ['OPENAI_API_KEY'],"
                " {'token': os.environ['ACME_SERVICE_TOKEN']})\n"
                "print('ok')")
        lm = ScriptedLM([("Log.", code), ("Done.", "SUBMIT(result='done')")])
        run = DeepAgent(lm=lm, workspace=tmp_path).run("log during the run", namespace={})
        assert run.status == "finished", run.error
        assert "using" in captured.text and not leaks(captured.text, KEY, TOKEN), captured.text
        assert not log_scrubbing.installed()  # the run let go of it
        assert logging.getLogRecordFactory() is logging.LogRecord  # and took its record factory out again
    finally:
        deepagent_magics.load_ipython_extension(ip)


def test_a_failing_run_lets_go_of_the_filter_too(ip, secrets, tmp_path):
    deepagent_magics.unload_ipython_extension(ip)
    try:
        lm = ScriptedLM([("Boom.", "raise SystemExit(3)")] * 3)
        DeepAgent(lm=lm, workspace=tmp_path, max_iters=2).run("fail", namespace={})
        assert not log_scrubbing.installed()
    finally:
        deepagent_magics.load_ipython_extension(ip)
