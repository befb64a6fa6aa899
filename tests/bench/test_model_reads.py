"""The long real session, replayed (`bench.real_session`): fixed text is at most 35% of all the model reads, the
first request at most 6,000 characters, and no sentence of the instructions is said twice in a request
(issue 28, item 8). The replay drives the real magics, a real sub-agent kernel and the command line's ``main``
with what a capable model wrote; `bench.model_reads` measures (``python -m bench.run --only model_reads``)."""

from __future__ import annotations

import re

import pytest

from bench.model_reads import FIXED, ROOT_GOAL, SHARE_GOAL, fixed_chars
from bench.real_session import requests

pytestmark = pytest.mark.kernel  # the statistician sub-agent runs in a kernel


@pytest.fixture(scope="module")
def session():
    return requests()


def test_the_session_plays_every_recorded_request(session):
    steps = [r for r in session if r["system"]]
    assert len(session) == 26 and len(steps) == 25  # 25 agent steps and one llm_query, as recorded


def test_fixed_text_is_at_most_35_percent_of_all_input_and_the_first_request_fits(session):
    total = sum(len(r["system"]) + len(r["user"]) for r in session)
    fixed = sum(fixed_chars(r["system"], r["user"]) for r in session)
    assert fixed / total <= SHARE_GOAL, f"fixed text is {fixed / total:.1%} of {total:,} characters"
    first = session[0]
    assert len(first["system"]) + len(first["user"]) <= ROOT_GOAL


def test_no_sentence_of_the_fixed_text_is_said_twice_in_a_request(session):
    """Each sentence of the system message, and each line of fixed text the user message adds (its heads, each
    step's labels), appears once in the request: no rule restated, no label repeated per step."""
    for request in (r for r in session if r["system"]):
        text = request["system"] + "\n" + request["user"]
        sentences = {s.strip() for s in re.split(r"(?<=[.;:])\s|\n", request["system"]) if len(s.strip()) >= 25}
        heads = {m.group(0) for pattern in FIXED for m in pattern.finditer(request["user"]) if len(m.group(0)) >= 12}
        twice = [s for s in sentences | heads if text.count(s) > 1]
        assert not twice, twice
        assert "Answer with" not in request["user"] and "=== Step" not in request["user"]  # no per-step restatement
