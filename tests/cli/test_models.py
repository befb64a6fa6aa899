"""cli/models.py: naming a model on the command line: a provider model id, ``local``, or ``scripted:FILE``."""

from __future__ import annotations

import json

import dspy
import pytest

from deepagent_magics.cli.models import ModelError, default_model, model_from_spec
from deepagent_magics.testing import ScriptedLM


def test_a_model_id_is_dspys_client_with_the_options_given():
    lm = model_from_spec("openai/gpt-4o-mini", options={"max_tokens": 99})
    assert isinstance(lm, dspy.LM) and lm.model == "openai/gpt-4o-mini" and lm.kwargs["max_tokens"] == 99
    assert model_from_spec(None) is None
    for bad in ("gpt4", "/openai", "openai/"):
        with pytest.raises(ModelError, match="is not a model id"):
            model_from_spec(bad)


def test_a_script_file_plays_its_steps(tmp_path):
    (tmp_path / "steps.json").write_text(json.dumps([["Look.", "print(1)"], {"reasoning": "r", "code": "x"}, "SUBMIT(1)"]))
    lm = model_from_spec(f"scripted:{tmp_path / 'steps.json'}")
    assert isinstance(lm, ScriptedLM) and lm.model == "scripted/steps"
    (tmp_path / "many.json").write_text(json.dumps({"scripts": {"count": ["SUBMIT(3)"]}, "replies": "hi", "latency": 0}))
    assert isinstance(model_from_spec(f"scripted:{tmp_path / 'many.json'}"), ScriptedLM)


@pytest.mark.parametrize("content, says", [(None, "cannot read the script"), ("{oops", "is not JSON"),
                                           ('{"other": 1}', "must be a list of steps"), ("[[1, 2]]", "a step in")])
def test_a_script_that_cannot_play_is_one_line(tmp_path, content, says):
    path = tmp_path / "s.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ModelError, match=says):
        model_from_spec(f"scripted:{path}")
    with pytest.raises(ModelError, match="needs a file"):
        model_from_spec("scripted:")


def test_the_environment_names_a_script_or_the_local_model_only(monkeypatch, tmp_path):
    (tmp_path / "s.json").write_text('["SUBMIT(1)"]')
    monkeypatch.setenv("DEEPAGENT_LM", f"scripted:{tmp_path / 's.json'}")
    assert isinstance(default_model(), ScriptedLM)
    monkeypatch.setenv("DEEPAGENT_LM", "openai/gpt-4o-mini")
    assert default_model() is None  # a model id is the core's to resolve
