"""`StopRun`: the one exception that ends a run ``stopped``, everything it did kept.

Two people raise it: the user's ``q`` at an approval question (`core/policy/approval.py`, from the
interpreter, before the block runs) and the user's stop button (`core/policy/steering.py`, at the next
step boundary, before the LM is asked; `steering.StopRequested` is this class, kept as a name).
`DeepAgent` catches it in one place, with `spend.CapReached`, and `core/loop/ending.py` ends the run
``stopped`` with the message as its reason. The interpreter's shutdown has already restored the
user's names, as for any ending. Not a `CodeInterpreterError` (nor a `RuntimeError`), so DSPy's loop
does not hand it to the model as an error to read: the loop ends.
"""

from __future__ import annotations

from ...errors import DeepAgentError


class StopRun(DeepAgentError):
    """End the run now with status ``stopped``; the message says who stopped it and when."""
