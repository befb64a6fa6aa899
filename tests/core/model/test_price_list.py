"""core/model/price_list.py: LiteLLM's bundled price list while a run works, the environment as it was after."""

from __future__ import annotations

import os
import threading

import pytest

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.model.price_list import VARIABLE, bundled_price_list


@pytest.fixture(autouse=True)
def _unset(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)  # the tests' conftest sets it for the whole session


def test_within_the_bundled_list_after_the_environment_as_it_was():
    with bundled_price_list():
        assert os.environ[VARIABLE] == "True"
    assert VARIABLE not in os.environ


def test_the_users_own_value_is_never_changed(monkeypatch):
    for value in ("False", "True", "false"):
        monkeypatch.setenv(VARIABLE, value)
        with bundled_price_list():
            assert os.environ[VARIABLE] == value
        assert os.environ[VARIABLE] == value


def test_a_block_that_raises_puts_the_environment_back():
    with pytest.raises(KeyboardInterrupt):
        with bundled_price_list():
            raise KeyboardInterrupt
    assert VARIABLE not in os.environ


def test_a_value_set_meanwhile_by_someone_else_is_left():
    with bundled_price_list():
        os.environ[VARIABLE] = "False"
    assert os.environ[VARIABLE] == "False"


def test_runs_in_several_threads_share_it_until_the_last_one_ends():
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with bundled_price_list():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second():
        first_in.wait(10)
        with bundled_price_list():
            second_in.set()
            first_out.wait(10)
            seen["after the first ended"] = os.environ.get(VARIABLE)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert seen == {"after the first ended": "True"}
    assert VARIABLE not in os.environ


def test_a_deep_agent_run_works_with_it_and_leaves_the_environment_as_it_was(tmp_path):
    lm = ScriptedLM([("Look.", f"import os\nseen = os.environ.get({VARIABLE!r})\nSUBMIT(result=seen)")])
    run = DeepAgent(lm=lm, workspace=tmp_path).run("Which price list?", namespace={})
    assert run.status == "finished" and run.result == "True"
    assert VARIABLE not in os.environ


def test_a_run_that_fails_leaves_the_environment_as_it_was(tmp_path):
    lm = ScriptedLM(lambda request: (_ for _ in ()).throw(RuntimeError("the provider is down")))
    run = DeepAgent(lm=lm, workspace=tmp_path).run("Anything.", namespace={})
    assert run.status == "failed"
    assert VARIABLE not in os.environ
