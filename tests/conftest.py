"""Shared fixtures: a real IPython shell with the extension loaded, and a temp workspace."""

from __future__ import annotations

import os
import signal
import tempfile

# Hypothesis keeps caches (unicode data) in its storage directory: a temporary one, not the repository.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", tempfile.mkdtemp(prefix="deepagent-hypothesis-"))
# The host key that signs records and checkpoints (records/host_key.py): a temporary one, never the user's
# (kernels the tests start inherit it).
os.environ.setdefault("DEEPAGENT_HOST_KEY", os.path.join(tempfile.mkdtemp(prefix="deepagent-host-"), "host.key"))

import dspy  # noqa: E402
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402
from IPython import get_ipython  # noqa: E402
from IPython.testing.globalipapp import start_ipython  # noqa: E402

# A shell starts a background job (`make test &`, some CI runners) with SIGINT ignored, and Python then
# keeps it ignored: nothing could be interrupted, and every kernel and subprocess a test starts would
# inherit that. The tests of the stop button and of interrupts need SIGINT as a notebook has it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

settings.register_profile("deepagent", database=None)  # no .hypothesis/ folder in the repository
settings.load_profile("deepagent")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "true")  # no network: DSPy's bundled model prices


@pytest.fixture(scope="session")
def _shell():
    shell = start_ipython() or get_ipython()  # start_ipython returns None once started
    shell.run_line_magic("load_ext", "deepagent_magics")
    return shell


@pytest.fixture
def ip(_shell, tmp_path, monkeypatch):
    """The IPython shell, with a clean user namespace and the workspace in a temp dir."""
    monkeypatch.delenv("DEEPAGENT_LM", raising=False)
    _shell.reset(new_session=False)
    _shell.run_line_magic("deepagent_config", "--reset")
    # No kernels warmed for sub-agents a test does not start: a sandboxed kernel serves one workspace, and
    # each test's is new (tests that delegate set --pool-size).
    _shell.run_line_magic("deepagent_config", f"--workspace {tmp_path} --quiet on --pool-size 0")
    with dspy.context(lm=None):
        yield _shell
    _shell.reset(new_session=False)


@pytest.fixture
def workspace(tmp_path):
    return tmp_path


@pytest.fixture(autouse=True)
def _no_time_limit_left_on_the_main_thread():
    """A time limit must end with its block (interpreters/time_limit.py): one left active on the
    main thread would raise in whatever test runs next. Fail the test that left it, not the next one."""
    from deepagent_magics.interpreters import time_limit

    yield
    left = [block for block in getattr(time_limit._local, "stack", ()) if block.active]
    if left:
        for block in left:
            block.limit.close()
        pytest.fail(f"this test left {len(left)} time-limit block(s) active on the main thread")


@pytest.fixture(autouse=True)
def _sigint_is_left_as_it_was():
    """Code that changes SIGINT while it works (the stop button's clean-up) must put it back: an ignored
    SIGINT would also be inherited by every kernel and subprocess started later, which then cannot be
    interrupted. Fail the test that left it changed, not the ones after it."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    yield
    after = signal.getsignal(signal.SIGINT)
    if after is not before:
        signal.signal(signal.SIGINT, before)
        pytest.fail(f"this test left SIGINT's handler changed ({after!r}, was {before!r})")


# `make test-fast` runs the tests that need no kernel, browser, server or other process (not marked kernel,
# browser, server, subprocess or realmodel) with DEEPAGENT_FAST_TESTS=1: a test that starts a process
# anyway fails and says which mark it needs, so the fast set stays what its name says.
FAST = os.environ.get("DEEPAGENT_FAST_TESTS") == "1"


@pytest.fixture(autouse=True)
def _fast_tests_start_no_process(monkeypatch):
    if FAST:
        import subprocess

        def refuse(*args, **kwargs):
            raise AssertionError("this test starts a process: mark it kernel, browser, server or subprocess "
                                 "(pyproject.toml's markers), so that make test-fast leaves it out")

        monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
        monkeypatch.setattr(os, "fork", refuse)
    yield


@pytest.fixture(scope="session")
def local_model():
    """The bundled model served once for the whole session (``--lm local``), shared by every test that
    drives it. Its joined file is kept in the system's temporary folder between sessions (hashed again
    once per session: core/model/local_weights.py). The ``local`` extra is part of ``make test``;
    without it these tests fail saying so (``DEEPAGENT_SKIP_REALMODEL=1`` makes that a named skip)."""
    from pathlib import Path

    from deepagent_magics.core.model import local_server, local_weights

    if os.environ.get("DEEPAGENT_SKIP_REALMODEL") == "1":
        pytest.skip("DEEPAGENT_SKIP_REALMODEL=1: the tests that drive the local model are skipped")
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        pytest.fail("the realmodel tests need the local extra: pip install -e '.[local]' (make test installs it)")
    before = os.environ.get(local_weights.CACHE_ENV)
    os.environ[local_weights.CACHE_ENV] = str(Path(tempfile.gettempdir()) / "deepagent-magics-test-models")
    try:
        yield local_server.serve(local_weights.bundled_model())
    finally:
        local_server.stop_all()
        if before is None:
            os.environ.pop(local_weights.CACHE_ENV, None)
        else:
            os.environ[local_weights.CACHE_ENV] = before
