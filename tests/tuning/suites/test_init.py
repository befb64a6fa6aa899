"""tuning/suites/__init__.py: every suite by its name, an unknown one a line naming them."""

from __future__ import annotations

import pytest

from deepagent_magics.errors import UserError
from deepagent_magics.tuning.suites import SUITES, UnknownSuite, get_suite


def test_each_suite_by_its_name_whatever_its_case():
    assert set(SUITES) == {"dabstep", "dabench", "oolong", "sklearn"}
    assert get_suite(" SKLearn ").name == "sklearn"
    with pytest.raises(UnknownSuite, match="unknown suite 'nope'; choose one of: dabstep, dabench, oolong, sklearn"):
        get_suite("nope")
    assert issubclass(UnknownSuite, UserError)
