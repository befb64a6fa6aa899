"""LiteLLM's and DSPy's model price list: the copy bundled with them while a run needs one, never GitHub's.

LiteLLM (when it is imported) and DSPy's model metadata (on first use) fetch the list from GitHub once
per process; offline that printed ``Model metadata refresh failed`` and four "model cost map fetch"
warnings and waited about 8 s before the first request. While a run, an evaluation or an optimisation
works (`bundled_price_list`), ``LITELLM_LOCAL_MODEL_COST_MAP=True`` makes both use the copy they ship
with; when the last of them ends the variable is taken away again. A value the user set (``False``:
fetch the list) is theirs and never changed. Importing the package sets nothing.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Iterator

VARIABLE = "LITELLM_LOCAL_MODEL_COST_MAP"

_lock = threading.Lock()
_users = 0  # runs (of any thread) inside `bundled_price_list` now
_ours = False  # whether the variable in the environment is the one set here


@contextmanager
def bundled_price_list() -> Iterator[None]:
    """Within: the bundled price list, unless the user chose (runs in several threads share one setting)."""
    global _users, _ours
    with _lock:
        if _users == 0 and VARIABLE not in os.environ:
            os.environ[VARIABLE] = "True"
            _ours = True
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0 and _ours:
                if os.environ.get(VARIABLE) == "True":  # unless someone set it meanwhile
                    del os.environ[VARIABLE]
                _ours = False
