"""records/checkpoint_secrets.py: a secret inside a value about to be checkpointed is found, whatever holds it."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd

from deepagent_magics.core.run.secrets import Redactor
from deepagent_magics.records.checkpoint_secrets import holds_secret, scrub_assignments

SECRET = "sk-live-checkpoint-0123456789"
REDACT = Redactor([SECRET])


def test_assignments_of_secret_looking_names_are_scrubbed_in_code():
    assert scrub_assignments('api_key = "abc"\nOPENAI_TOKEN: \'x\'\nname = "kept"') == (
        'api_key = "[REDACTED]"\nOPENAI_TOKEN: \'[REDACTED]\'\nname = "kept"')


def test_plain_values_and_containers_are_read_through():
    assert holds_secret({"config": [("k", SECRET)]}, REDACT)
    assert holds_secret(SECRET.encode(), REDACT)
    assert not holds_secret({"config": [("k", "harmless")]}, REDACT)


def test_numpy_text_that_pickle_would_hide_is_read_out():
    array = np.array(["a", SECRET])
    assert SECRET.encode() not in pickle.dumps(array)  # UCS-4 on disk: a byte search would miss it
    assert holds_secret(array, REDACT, pickle.dumps(array))
    assert not holds_secret(np.arange(10), REDACT)


def test_pandas_values_index_and_columns_are_read_out():
    assert holds_secret(pd.DataFrame({"a": ["x", SECRET]}), REDACT)
    assert holds_secret(pd.DataFrame({SECRET: [1]}), REDACT)
    assert holds_secret(pd.Series([1], index=[SECRET]), REDACT)
    assert not holds_secret(pd.DataFrame({"a": [1, 2]}), REDACT)


class Opaque:
    def __init__(self):
        self.hidden = SECRET


def test_the_pickled_bytes_are_checked_too():
    value = Opaque()
    assert not holds_secret(value, REDACT)  # nothing of it is read out as text
    assert holds_secret(value, REDACT, pickle.dumps(value))
