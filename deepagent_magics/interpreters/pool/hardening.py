"""What a sandbox takes away beyond its mounts: every capability, new privileges, a user namespace, system calls.

bubblewrap started by root keeps root's capabilities unless told otherwise: a kernel could then
``mount --bind / /x`` and see the whole host under its mounts. So every sandbox is started with

- ``--cap-drop ALL``: no capability, whoever starts it (bwrap also sets ``PR_SET_NO_NEW_PRIVS``, so
  none comes back through a setuid or file-capability program);
- ``--unshare-user --disable-userns`` where the kernel allows a user namespace, also for root: what
  capability a kernel bug might give back is then one of the sandbox's own namespace, not the host's,
  and no further user namespace can be made inside;
- ``--seccomp FD``: the filter of `seccomp`, where libseccomp is installed.

`probe` finds, once per bwrap program and setting, the strongest of these that bwrap can apply here;
what it could not apply, and why, goes into every sub-agent's record (`Hardening.record`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable

from . import seccomp


@dataclass(frozen=True)
class Hardening:
    """The hardening a sandbox gets here: which parts bwrap applies, and why each missing one is missing."""

    user_namespace: bool = True
    disable_userns: bool = True  # bwrap >= 0.8: no user namespace can be made inside the sandbox
    seccomp: bool = True
    missing: tuple[tuple[str, str], ...] = ()  # (what is not applied, why)

    def arguments(self, seccomp_fd: int | None = None) -> list[str]:
        """bwrap's arguments for this hardening (``seccomp_fd``: a descriptor from `seccomp.open_program`)."""
        arguments = ["--cap-drop", "ALL"]
        if self.user_namespace:
            arguments.append("--unshare-user")
            if self.disable_userns:
                arguments.append("--disable-userns")
        if self.seccomp and seccomp_fd is not None:
            arguments += ["--seccomp", str(seccomp_fd)]
        return arguments

    def record(self) -> dict[str, Any]:
        """What a sub-agent's record says of it (``sandbox`` in the record's config)."""
        facts: dict[str, Any] = {"capabilities": "none", "no_new_privileges": True,
                                 "user_namespace": self.user_namespace, "seccomp": self.seccomp}
        if self.missing:
            facts["missing"] = dict(self.missing)
        return facts


# Tried in this order; the first that bwrap runs with is used: (user namespace, --disable-userns, seccomp).
CANDIDATES = ((True, True, True), (True, False, True), (False, False, True),
              (True, True, False), (True, False, False), (False, False, False))


def probe(run: Callable[[list[str], tuple[int, ...]], str | None]) -> Hardening | str:
    """The strongest hardening bwrap applies here, or why bwrap cannot run at all (a str).

    ``run(arguments, pass_fds)`` runs bwrap's probe with these extra arguments; it returns None when bwrap
    ran, else what bwrap said."""
    filter_missing = seccomp.unavailable()
    failures: dict[tuple[bool, bool, bool], str] = {}
    for candidate in CANDIDATES:
        user_namespace, disable_userns, with_seccomp = candidate
        if with_seccomp and filter_missing is not None:
            continue
        hardening = Hardening(user_namespace, disable_userns, with_seccomp)
        descriptor = seccomp.open_program() if with_seccomp else None
        try:
            failure = run(hardening.arguments(descriptor), (descriptor,) if descriptor is not None else ())
        finally:
            if descriptor is not None:
                os.close(descriptor)
        if failure is None:
            return Hardening(user_namespace, disable_userns, with_seccomp,
                             _missing(candidate, failures, filter_missing))
        failures[candidate] = failure
    return failures[CANDIDATES[-1]]


def _missing(chosen: tuple[bool, bool, bool], failures: dict[tuple[bool, bool, bool], str],
             filter_missing: str | None) -> tuple[tuple[str, str], ...]:
    user_namespace, _, with_seccomp = chosen
    missing = []
    if not user_namespace:
        why = next(failures[each] for each in CANDIDATES if each[0] and each[2] == with_seccomp)
        missing.append(("user_namespace", f"bwrap could not create one here ({why})"))
    if not with_seccomp:
        why = filter_missing or f"bwrap could not load it ({next(failures[each] for each in failures if each[2])})"
        missing.append(("seccomp", why))
    return tuple(missing)
