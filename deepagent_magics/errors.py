"""The package's one family of exceptions: every class it raises on purpose descends from `DeepAgentException`.

The family mirrors Python's own (``BaseException`` over ``Exception`` and ``KeyboardInterrupt``)::

    DeepAgentException            the root; never raised itself
    ├── DeepAgentError            something went wrong (an ``Exception``: catch this one)
    │   └── UserError             a mistake of the user's, told in one line at every front door:
    │       ├── InvalidValue      (also a ValueError)  the magics raise IPython's exact ``UsageError``
    │       └── InvalidType       (also a TypeError)   from it, the CLI exits 2, the run API answers 400
    └── DeepAgentSignal           not an error: unwinds agent code that ``except Exception`` must not stop
                                  (a time limit, a cancelled sub-agent, a stopped benchmark)

A module's own exception joins the family and keeps the builtin base its callers catch
(``class NamespaceBusy(UserError, RuntimeError)``), so ``except RuntimeError`` still works.
Outside the family, on purpose: the exceptions of the modules shipped as source into sub-agent
kernels (``interpreters/kernel_side.py``, ``wire.py``, ``guards.py``, ``processes.py``), which import
nothing of the package. This module imports nothing of the package either: every room may import it.
"""

from __future__ import annotations


class DeepAgentException(BaseException):
    """The root of the family: an error (`DeepAgentError`) or a signal (`DeepAgentSignal`), never itself."""


class DeepAgentError(DeepAgentException, Exception):
    """Something the package reports as going wrong."""


class UserError(DeepAgentError):
    """A mistake of the user's (a flag, a setting, a name, a file): its message is one line that says what to do."""


class InvalidValue(UserError, ValueError):
    """A value a setting or an argument cannot take (a ValueError too)."""


class InvalidType(UserError, TypeError):
    """A value of a type a setting or an argument cannot take (a TypeError too)."""


class DeepAgentSignal(DeepAgentException):
    """Not an error: raised into agent code to unwind it, past any ``except Exception`` there."""
