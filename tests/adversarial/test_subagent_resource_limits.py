"""Nothing a sub-agent runs takes the user's machine with it (issue 30, item 4).

Each attack (`limit_attacks.ATTACKS`: a fork bomb, a memory hog, a disk fill, a /tmp fill, a CPU spinner,
many open files, a huge file) is a sub-agent's first step in a real agent tree with a real sandboxed kernel
whose limits are set low. Each must end that sub-agent with one line that its parent reads, naming the
limit, its setting and what held it; the sub-agent's record says the same; the attack is refused near its
limit; the host keeps ticking meanwhile; no process and no cgroup is left. Every attack runs as root (this
machine: a cgroup holds processes and memory) and as an unprivileged user (a host dropped with ``setpriv``,
`sandbox_hosts`: rlimits, the process count per user namespace). On today's main nothing stops any of them:
the sub-agent's second step says it got away with it.
"""

from __future__ import annotations

import json
import os

import pytest

from deepagent_magics.interpreters.pool import cgroups, sandbox
from deepagent_magics.interpreters.pool.limits import LIMITS, RLIMIT, TMPFS_SIZE, WORKSPACE_CHECK
from tests.adversarial.limit_attacks import ATTACKS, GOT_AWAY, STOPPED, attack
from tests.adversarial.sandbox_hosts import make_host

pytestmark = [pytest.mark.kernel, pytest.mark.subprocess]

# name: (the limit it hits, how far it may get: at most, at least)
EXPECTED = {
    "fork bomb": ("processes", 48, 16),  # forks: the kernel's own threads count against the 48 too
    "memory hog": ("memory", 256, 16),  # MiB held when it was stopped
    "disk fill": ("disk", None, None),
    "tmp fill": ("disk", 32, 16),  # 1 MiB files in a /tmp of 32 MiB
    "cpu spinner": ("cpu_time", None, None),
    "open files": ("open_files", 128, 32),  # the kernel's own sockets and files count against the 128 too
    "huge file": ("file_size", None, None),
}


@pytest.fixture(autouse=True)
def _bubblewrap_runs_here():
    reason = sandbox.unavailable()
    if reason is not None:
        if os.environ.get("DEEPAGENT_SKIP_SANDBOX") == "1":
            pytest.skip(f"no sandbox here: {reason}")
        pytest.fail(f"bubblewrap cannot sandbox kernels here ({reason}): install it, or DEEPAGENT_SKIP_SANDBOX=1")


def held_as_root(limit: str) -> str:
    """What holds ``limit`` for root on this machine (docs/safety.md#limits)."""
    if limit in ("processes", "memory"):
        found = cgroups.mechanism()
        if found is None or {"processes": "pids", "memory": "memory"}[limit] not in found.controllers:
            pytest.skip(f"no writable cgroup here, so root's {limit} limit is held by nothing the test can see")
        return found.kind
    return {"disk": WORKSPACE_CHECK, "cpu_time": RLIMIT, "file_size": RLIMIT, "open_files": RLIMIT}[limit]


def check(report: dict, name: str, held: str) -> None:
    limit, most, least = EXPECTED[name]
    if name == "tmp fill":
        held = TMPFS_SIZE
    line = report["read"]
    # The parent read one line: the limit, its value, its setting, and what held it; the parent carried on.
    assert report["status"] == "finished", report
    assert isinstance(line, str) and "\n" not in line and line.startswith(STOPPED), report
    reason = LIMITS[limit].reason.format(dict(ATTACKS[name][0])[limit])
    kept = "; its files in the workspace are kept."
    assert line == f"{STOPPED}{reason} (limit {LIMITS[limit].flag}, held by {held}){kept}", line
    assert GOT_AWAY not in json.dumps(report)
    # Its record says which limit, by what; its next step never ran.
    assert report["child_status"] == "failed" and report["child_steps"] == 1, report
    assert report["limits"]["hit"] == {"limit": limit, "by": held}, report["limits"]
    assert held in report["limits"][limit]["by"], report["limits"]
    assert report["child_error"] == f"LimitExceeded: {line[len('Error: '):-len(kept)]}"
    # Refused near its limit, not after the whole bounded attack.
    if most is not None:
        assert report["progress"] is not None and least <= report["progress"] <= most, report
    if name == "disk fill":
        assert report["workspace_mib"] < 1000, report  # stopped well before the whole attack
    if name == "huge file":
        assert report["workspace_mib"] <= 8, report
    # The host kept working meanwhile; nothing is left behind.
    assert report["ticks"] >= 3, report
    assert report["kernels_left"] == [] and report["children_left"] == [], report
    assert report["groups_left"] == [], report


@pytest.mark.parametrize("name", list(ATTACKS))
def test_an_attack_as_root_ends_the_sub_agent_with_one_line_and_leaves_nothing(name, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("root's path needs the tests to run as root (CI does); the unprivileged one runs as this user")
    held = held_as_root(EXPECTED[name][0])
    report = attack(name, str(tmp_path))
    assert report["user"] == 0
    check(report, name, held)


@pytest.mark.parametrize("name", list(ATTACKS))
def test_an_attack_as_an_unprivileged_user_ends_the_sub_agent_with_one_line_and_leaves_nothing(name):
    host = make_host("unprivileged")
    try:
        report = host.python(["-c", "import json, sys\nfrom tests.adversarial.limit_attacks import attack\n"
                                    "print(json.dumps(attack(sys.argv[1], sys.argv[2])))", name, str(host.workspace)],
                             timeout=300)
    finally:
        host.close()
    assert report["user"] != 0
    limit = EXPECTED[name][0]
    check(report, name, WORKSPACE_CHECK if limit == "disk" else RLIMIT)
