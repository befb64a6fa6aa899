"""Shared fixtures: a real IPython shell with the extension loaded, and a temp workspace."""

from __future__ import annotations

import functools
import gc
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
    # IPython's reset runs a full garbage collection (its display hook's flush): over the session's heap (DSPy,
    # LiteLLM, pandas, scikit-learn: ~700,000 objects) that is 0.3 s on an idle core and 2 s or more on a loaded
    # one, twice per test. What is alive once the last test's garbage is collected (the imports, long-lived
    # state) is moved out of the collector's sight; what this test makes is not, so it is collected as before.
    gc.freeze()
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
    """A time limit must end with its block (interpreters/time_limit/): one left active on the
    main thread would raise in whatever test runs next. Fail the test that left it, not the next one."""
    from deepagent_magics.interpreters.time_limit import limit as time_limit

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
# browser, server, subprocess or realmodel) with DEEPAGENT_FAST_TESTS=1: a test that starts a process anyway (by
# subprocess, fork, posix_spawn or multiprocessing, in the test or in a fixture of any scope) fails and says which
# mark it needs, so the fast set stays what its name says.
FAST = os.environ.get("DEEPAGENT_FAST_TESTS") == "1"


@pytest.fixture(scope="session", autouse=True)
def _fast_tests_start_no_process():
    if not FAST:
        yield
        return
    import _posixsubprocess
    import multiprocessing.process
    import subprocess

    def refuse(*args, **kwargs):
        raise AssertionError("this test starts a process: mark it kernel, browser, server or subprocess "
                             "(pyproject.toml's markers), so that make test-fast leaves it out")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "__init__", refuse)
        patch.setattr(_posixsubprocess, "fork_exec", refuse)  # what subprocess and multiprocessing's spawn use
        patch.setattr(multiprocessing.process.BaseProcess, "start", refuse)
        for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp"):
            if hasattr(os, name):
                patch.setattr(os, name, refuse)
        yield


# A test that needs one of the package's optional extras (pyproject.toml) is marked `needs_extra("local")`: where
# the extra is not installed (make test-fast installs test, browser and optimize only) it is skipped, and the
# skip names the extra and how to install it. make test installs every extra a test needs, so there nothing skips.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.lru_cache(maxsize=None)
def missing_from_extra(extra: str) -> tuple[str, ...]:
    """The distributions of the extra ``extra`` (as pyproject.toml lists them) that are not installed."""
    import re
    import tomllib
    from importlib import metadata

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        extras = tomllib.load(handle)["project"]["optional-dependencies"]
    if extra not in extras:
        raise ValueError(f"needs_extra({extra!r}): pyproject.toml has no such extra (it has {', '.join(extras)})")
    missing = []
    for requirement in extras[extra]:
        name = re.match(r"[A-Za-z0-9._-]+", requirement).group(0)
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    return tuple(missing)


def pytest_runtest_setup(item):
    for mark in item.iter_markers("needs_extra"):
        for extra in mark.args:
            missing = missing_from_extra(extra)
            if missing:
                pytest.skip(f"needs the {extra} extra: pip install -e '.[{extra}]' (not installed: "
                            f"{', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})")


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
