"""A reply the provider ended at the end marker (core/model/stop_sequences.py) reads exactly as the whole reply.

A stop sequence ends the reply where the marker would begin and leaves the marker out, so the action
adapter (core/model/replies.py) must not need it. Checked on what real models sent
(tests/data/real_model_runs/raw_replies.json: a capable model's steps in two sessions, and the local
1.5B model's, which go on after the marker) and on every recorded step rebuilt in the adapter's form with
what the local model writes after it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.core.model.replies import COMPLETED, ChatAdapter
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.testing_provider import adapter_text

DATA = Path(__file__).resolve().parents[2] / "data" / "real_model_runs"
RAW = json.loads((DATA / "raw_replies.json").read_text(encoding="utf-8"))
STEPS = [each for each in json.loads((DATA / "replies.json").read_text(encoding="utf-8")) if "code" in each]
AFTER = "\n\n[[ ## reasoning ## ]]\nNow I will also print it again.\n\n[[ ## code ## ]]\nprint('again')\n\n" + COMPLETED


@pytest.fixture(scope="module")
def signature():
    """The agent's own action signature, as every step's request is made with it."""
    return DeepAgent(lm=ScriptedLM([]), max_depth=0).rlm.generate_action.signature


def stopped(text: str) -> str:
    """``text`` as a provider sends it when asked to stop at the marker: up to it, without it."""
    return text.split(COMPLETED, 1)[0]


def test_the_recordings_hold_whole_replies_of_both_models():
    assert sum(each["model"] == "capable" for each in RAW) >= 60
    assert sum(each["model"] == "local" for each in RAW) >= 4
    assert all(COMPLETED in each["text"] for each in RAW)
    assert any(each["text"].split(COMPLETED, 1)[1].strip() for each in RAW if each["model"] == "local")  # runs on


@pytest.mark.parametrize("reply", RAW, ids=[each["id"] for each in RAW])
def test_a_recorded_reply_ended_at_the_marker_reads_as_the_whole_reply(signature, reply):
    adapter = ChatAdapter()
    whole = adapter.parse(signature, reply["text"])
    assert adapter.parse(signature, stopped(reply["text"])) == whole
    assert whole["code"].strip()


@pytest.mark.parametrize("step", STEPS, ids=[each["id"] for each in STEPS])
def test_every_recorded_step_reads_the_same_stopped_or_rambling_on(signature, step):
    adapter = ChatAdapter()
    sent = adapter_text({"reasoning": step["reasoning"], "code": step["code"]})
    expected = {"reasoning": step["reasoning"], "code": step["code"]}
    assert adapter.parse(signature, sent) == expected
    assert adapter.parse(signature, stopped(sent)) == expected
    assert adapter.parse(signature, stopped(sent + AFTER)) == expected
