"""interpreters/pool/hardening.py: bwrap's hardening arguments, the strongest one bwrap applies here, and what is missing.

With the real bwrap (a kernel that tries to remount, unshare, regain a capability) see
``tests/adversarial/test_sandbox_privileges.py``.
"""

from __future__ import annotations

import os

import pytest

from deepagent_magics.interpreters.pool import hardening
from deepagent_magics.interpreters.pool.hardening import Hardening, probe


def test_every_sandbox_drops_every_capability():
    assert Hardening(False, False, False).arguments() == ["--cap-drop", "ALL"]


def test_a_user_namespace_with_none_inside_and_the_seccomp_descriptor():
    assert Hardening().arguments(7) == ["--cap-drop", "ALL", "--unshare-user", "--disable-userns", "--seccomp", "7"]
    assert Hardening(True, False, True).arguments(None) == ["--cap-drop", "ALL", "--unshare-user"]
    assert "--seccomp" not in Hardening(True, True, False).arguments(7)


def test_the_record_says_what_is_applied_and_why_something_is_missing():
    assert Hardening().record() == {"capabilities": "none", "no_new_privileges": True, "user_namespace": True,
                                    "seccomp": True}
    missing = Hardening(False, False, True, (("user_namespace", "not allowed here"),)).record()
    assert missing["user_namespace"] is False and missing["missing"] == {"user_namespace": "not allowed here"}


class Bwrap:
    """bwrap's probe: fails (saying ``why``) whenever it is given one of ``refused``; notes each call."""

    def __init__(self, *refused: str, why: str = "no permission"):
        self.refused, self.why, self.calls = refused, why, []

    def __call__(self, arguments, fds):
        self.calls.append((arguments, fds))
        for fd in fds:
            os.fstat(fd)  # the descriptor is open while bwrap runs
        return self.why if any(flag in arguments for flag in self.refused) else None


@pytest.fixture
def filter_here(monkeypatch):
    """A seccomp filter is available: its descriptor is a real pipe, whose closing is seen."""
    opened = []

    def open_program():
        read, write = os.pipe()
        os.close(write)
        opened.append(read)
        return read

    monkeypatch.setattr(hardening.seccomp, "unavailable", lambda: None)
    monkeypatch.setattr(hardening.seccomp, "open_program", open_program)
    return opened


def closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def test_where_bwrap_takes_everything_the_strongest_is_chosen_and_its_descriptor_closed(filter_here):
    bwrap = Bwrap()
    assert probe(bwrap) == Hardening(True, True, True, ())
    (arguments, fds), = bwrap.calls
    assert fds == (filter_here[0],) and arguments[-2:] == ["--seccomp", str(filter_here[0])]
    assert all(closed(fd) for fd in filter_here)


def test_an_older_bwrap_without_disable_userns_keeps_the_user_namespace(filter_here):
    assert probe(Bwrap("--disable-userns")) == Hardening(True, False, True, ())
    assert all(closed(fd) for fd in filter_here)


def test_no_user_namespace_here_is_said_with_bwraps_reason(filter_here):
    chosen = probe(Bwrap("--unshare-user", why="setting up uid map: Permission denied"))
    assert (chosen.user_namespace, chosen.seccomp) == (False, True)
    assert dict(chosen.missing) == {
        "user_namespace": "bwrap could not create one here (setting up uid map: Permission denied)"}


def test_a_filter_bwrap_cannot_load_is_said_with_bwraps_reason(filter_here):
    chosen = probe(Bwrap("--seccomp", why="seccomp not supported"))
    assert chosen == Hardening(True, True, False, (("seccomp", "bwrap could not load it (seccomp not supported)"),))


def test_without_libseccomp_the_filter_is_not_tried_and_the_reason_is_kept(monkeypatch):
    monkeypatch.setattr(hardening.seccomp, "unavailable", lambda: "pyseccomp is not installed")
    monkeypatch.setattr(hardening.seccomp, "open_program", lambda: pytest.fail("no filter to open"))
    bwrap = Bwrap()
    assert probe(bwrap) == Hardening(True, True, False, (("seccomp", "pyseccomp is not installed"),))
    assert all(fds == () for _, fds in bwrap.calls)


def test_where_bwrap_cannot_run_at_all_its_last_word_is_returned(filter_here):
    assert probe(Bwrap("--cap-drop", why="bwrap: No permissions to create new namespace")) == \
        "bwrap: No permissions to create new namespace"
    assert all(closed(fd) for fd in filter_here) and len(filter_here) == 3  # each try with a filter opened one
