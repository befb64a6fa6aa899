"""`StopRun`: raised inside a run to end it with status ``stopped``, everything it did kept.

The user's ``q`` at an approval question raises it from the interpreter, before the block
runs; `DeepAgent.run` turns it into ``run.finish("stopped")`` (the interpreter's shutdown
has already restored the user's names, as for any ending). Not a `CodeInterpreterError`,
so DSPy's loop does not hand it to the model as an error to read: the loop ends.
"""

from __future__ import annotations


class StopRun(Exception):
    """End the run now with status ``stopped``; the message says who stopped it and when."""
