"""tuning/langchain_baseline.py: LangChain's deepagents as a baseline when it can be had, one line when not (its run
on the same files and variables, where deepagents is installed: tests/adversarial/test_bench_langchain_baseline.py)."""

from __future__ import annotations

import sys

import pytest

from deepagent_magics.errors import UserError
from deepagent_magics.tuning.bench import BenchError, check_arguments
from deepagent_magics.tuning.bench_arguments import available
from deepagent_magics.tuning.langchain_baseline import BaselineUnavailable, chat_model_for


def test_without_deepagents_it_says_why_and_the_bench_refuses_the_baseline_first(monkeypatch):
    monkeypatch.setitem(sys.modules, "deepagents", None)
    assert available().startswith("ImportError") or available().startswith("ModuleNotFoundError")
    with pytest.raises(BenchError, match=r"the deepagents baseline needs LangChain deepagents: pip install"):
        check_arguments("sklearn", baselines="deepagents")


@pytest.mark.parametrize("lm", [object(), 3, "gpt4"])
def test_an_lm_that_is_no_provider_model_id_cannot_be_a_langchain_model(lm):
    with pytest.raises(BaselineUnavailable, match="needs a provider model id like openai/gpt-4o-mini"):
        chat_model_for(lm)
    assert issubclass(BaselineUnavailable, UserError)


def test_a_provider_langchain_cannot_make_is_one_line():
    with pytest.raises(BaselineUnavailable, match="cannot make a LangChain model for nosuchprovider/x"):
        chat_model_for("nosuchprovider/x")
