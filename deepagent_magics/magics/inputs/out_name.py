"""``--out NAME``: a variable name a result can be stored in without breaking the notebook."""

from __future__ import annotations

import builtins
import keyword

from IPython.core.error import UsageError

RESERVED_OUT = {"_deepagent_run", "_deepagent_eval", "_deepagent_optimize", "_deepagent_bench"}


def check_out(name: str | None, flag: str = "--out") -> str | None:
    """A name the result can be stored in without breaking the notebook."""
    if name is None:
        return None
    if not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(f"{flag} {name!r} is not a valid variable name")
    if name.startswith("__") and name.endswith("__") or name in RESERVED_OUT:
        raise UsageError(f"{flag} {name!r} is a name Python or the deepagent magics use; choose another")
    if hasattr(builtins, name):
        raise UsageError(f"{flag} {name!r} would hide Python's builtin {name}; choose another name")
    return name
