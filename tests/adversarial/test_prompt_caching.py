"""Prompt caching (issue 15, part 3): the stable head of each step's prompt is cached where it can be.

Against the local provider (`testing_provider.FakeProvider`) and DSPy's real client: an
Anthropic model's every step request marks its system block (instructions and tool docs)
with ``cache_control``; no model gets a mark the user turned off or one its client cannot
send; the head of step N+1's request is byte-identical to step N's up to the history,
whatever the agent's code does in between; the cached input tokens a provider reports
reach the run's usage, events, record and (cheaper) cost.
"""

from __future__ import annotations

import json
import os
import re
from itertools import pairwise

import dspy
import pytest
from dspy.lm15 import CacheConfig
from dspy.utils.exceptions import LMUnsupportedFeatureError

from deepagent_magics import DeepAgent
from deepagent_magics.core.model.caching import cached_tokens, prompt_cache_for
from deepagent_magics.core.run.run import LM_USAGE, Run
from deepagent_magics.testing import ScriptedLM
from deepagent_magics.testing_provider import FakeProvider, Reply

KEY = "sk-local"

STEPS = [
    {"reasoning": "Set things up.", "code": "x = [1, 2, 3]\nwrite_todos([{'content': 'sum', 'status': 'in_progress'}])\nprint(x)"},
    {"reasoning": "Change the notebook and the workspace.",
     "code": "import os\nx.append(4)\ny = {'a': 1}\nwrite_file('notes.md', 'hello')\nos.environ['DAG_TEST_FLAG'] = '1'\nprint(sum(x))"},
    {"reasoning": "Print a lot.", "code": "print('z' * 3000)"},
    {"reasoning": "Done.", "code": "SUBMIT(result=str(sum(x)))"},
]


def provider_lm(provider: FakeProvider, model: str = "openai/fake-model", **kwargs) -> dspy.LM:
    return dspy.LM(model, api_base=provider.url, api_key=KEY, cache=False, num_retries=0, **kwargs)


def run_agent(lm, tmp_path, namespace=None, task="sum the list"):
    agent = DeepAgent(lm=lm, workspace=tmp_path, max_iters=8, max_depth=0)
    agent.record_runs = True
    return agent.run(task, namespace if namespace is not None else {})


def replies(usage=None):
    return [Reply.fields(**step) if usage is None else Reply(content=Reply.fields(**step).content, usage=dict(usage))
            for step in STEPS]


def system_blocks(request):
    system = request["body"].get("system")
    return system if isinstance(system, list) else [{"type": "text", "text": system}]


@pytest.fixture(autouse=True)
def _no_leftover_flag():
    yield
    os.environ.pop("DAG_TEST_FLAG", None)


# ---------------------------------------------------------------- the marks
def test_every_step_of_an_anthropic_model_marks_its_system_block_and_keeps_it_byte_identical(tmp_path):
    with FakeProvider(replies()) as provider:
        run = run_agent(provider_lm(provider, "anthropic/claude-sonnet-4-5"), tmp_path)
    assert run.status == "finished", run.error
    assert len(provider.requests) == len(STEPS)
    assert all(request["path"].endswith("/messages") for request in provider.requests)
    systems = []
    for request in provider.requests:
        blocks = system_blocks(request)
        assert blocks[-1].get("cache_control") == {"type": "ephemeral"}, blocks[-1]
        systems.append(json.dumps(blocks))
        assert "write_todos" in blocks[-1]["text"]  # the tool docs are inside the cached block
    assert len(set(systems)) == 1  # byte-identical from step to step


def test_a_users_own_prompt_cache_setting_wins_over_the_agents(tmp_path):
    with FakeProvider(replies()) as provider:
        run = run_agent(provider_lm(provider, "anthropic/claude-sonnet-4-5", prompt_cache=CacheConfig(mode="off")),
                        tmp_path)
    assert run.status == "finished", run.error
    assert not any("cache_control" in json.dumps(request["body"]) for request in provider.requests)


def test_an_openai_compatible_model_gets_no_marks_and_runs_as_before(tmp_path):
    with FakeProvider(replies()) as provider:
        run = run_agent(provider_lm(provider), tmp_path)
    assert run.status == "finished" and run.result == "10", run.error
    assert not any("cache_control" in json.dumps(request["body"]) for request in provider.requests)


@pytest.mark.parametrize("lm", [
    ScriptedLM([(step["reasoning"], step["code"]) for step in STEPS], model="anthropic/claude-sonnet-4-5"),
    dspy.LM("anthropic/claude-sonnet-4-5", engine="litellm"),
    dspy.LM("anthropic/claude-sonnet-4-5", model_type="text"),
    dspy.utils.DummyLM([{"answer": "x"}]),
], ids=["scripted-engine-named-anthropic", "litellm-engine", "text-model", "dummy"])
def test_clients_that_cannot_carry_a_mark_are_never_asked_to(lm):
    assert prompt_cache_for(lm) is None


@pytest.mark.parametrize("setting", [{"custom_llm_provider": "anthropic"}, {"extra_body": {"metadata": {}}},
                                     {"frobnicate": 1}], ids=["custom_llm_provider", "extra_body", "unknown-setting"])
def test_a_request_dspy_refuses_to_mark_is_sent_again_without_the_mark_and_the_lm_is_not_marked_again(
        tmp_path, setting):
    with FakeProvider(replies()) as provider:
        lm = provider_lm(provider, "anthropic/claude-sonnet-4-5", **setting)
        with pytest.raises(LMUnsupportedFeatureError):  # what DSPy does with the mark: refuse
            lm("hello", prompt_cache=CacheConfig(prefix="stable"))
        assert provider.requests == []  # refused before anything was sent
        run = run_agent(lm, tmp_path)
    assert prompt_cache_for(lm) is None  # not marked again
    assert len(provider.requests) >= 1  # the unmarked request went out (through LiteLLM)
    assert not any("cache_control" in json.dumps(request["body"]) for request in provider.requests)
    assert run.status == "finished" and run.result == "10", run.error


def test_a_provider_error_is_not_mistaken_for_a_refused_mark(tmp_path):
    script = [Reply.failure(400, "prompt is too long: 300000 tokens > 200000 maximum")]
    with FakeProvider(script) as provider:
        lm = provider_lm(provider, "anthropic/claude-sonnet-4-5")
        run = run_agent(lm, tmp_path)
        assert prompt_cache_for(lm) is not None  # still marked next time
    assert run.status == "failed" and "context window" in run.error  # core/loop/attempts.py: ContextTooLong
    assert len(provider.requests) == 1  # not sent again unmarked


# ---------------------------------------------------------------- the stable prefix
def flat(request) -> str:
    return json.dumps(request["body"]["messages"], ensure_ascii=False)


def test_step_n_plus_ones_request_starts_with_step_ns_up_to_the_history(tmp_path):
    namespace = {"data": [1, 2, 3], "config": {"mode": "fast"}}
    with FakeProvider(replies()) as provider:
        run = run_agent(provider_lm(provider), tmp_path, namespace=namespace)
    assert run.status == "finished", run.error
    texts = [flat(request) for request in provider.requests]
    assert len(texts) == len(STEPS)
    for index, (text, following) in enumerate(pairwise(texts), start=1):
        common = len(os.path.commonprefix([text, following]))
        # Step 1 has no history yet; from step 2 on, step N's whole history is step N+1's too.
        boundary = text.index("[[ ## repl_history ## ]]") if index == 1 else text.rindex("\\n\\n[[ ## iteration ## ]]")  # JSON-escaped
        assert common >= boundary, (index, text[common - 80:common + 80], following[common - 80:common + 80])
        assert common / len(text) > 0.9


HISTORY_HEAD = "[[ ## repl_history ## ]]\n"
TAIL = "\n\n[[ ## iteration ## ]]\n"


def test_each_step_request_is_the_one_before_it_extended_byte_for_byte_but_for_its_documented_tail(tmp_path):
    """What a prefix cache (llama.cpp's slot, OpenAI's) reuses: step N+1's request is step N's, with the newest step
    added, except for the tail after the history (the iteration counter, `caching`) and, at
    step 1, the line saying there is no history yet. An llm_query, an error, a long output, a new variable or
    file in between change nothing before that."""
    steps = [STEPS[0], {"reasoning": "Ask the sub-model.", "code": "word = llm_query('Say ok.')\nprint(word)"},
             {"reasoning": "Fail once.", "code": "print(undefined_name)"}, *STEPS[1:]]
    script = [Reply.fields(**step) for step in steps]
    script.insert(2, Reply(content="ok"))  # the llm_query's answer
    with FakeProvider(script) as provider:
        run = run_agent(provider_lm(provider), tmp_path, namespace={"data": [1, 2, 3]})
    assert run.status == "finished", run.error
    requests = [request["body"]["messages"] for request in provider.requests
                if "[[ ## iteration ## ]]" in json.dumps(request["body"]["messages"])]
    assert len(requests) == len(steps) and all([m["role"] for m in messages] == ["system", "user"] for messages in requests)
    assert len({messages[0]["content"] for messages in requests}) == 1  # the system message: the same bytes
    users = [messages[1]["content"] for messages in requests]
    for index, (user, following) in enumerate(pairwise(users), start=1):
        if index == 1:
            head = user[:user.index(HISTORY_HEAD) + len(HISTORY_HEAD)]
            assert user[len(head):].startswith("No steps yet.")
        else:
            head = user[:user.rindex(TAIL)]
        assert following.startswith(head), (index, user[len(os.path.commonprefix([user, following])) - 80:][:200])
        tail = user[len(head):]  # only the counter
        assert re.fullmatch(r"(No steps yet\.)?\n\n\[\[ ## iteration ## \]\]\n\d+/\d+", tail), tail


def test_the_prefix_survives_a_second_run_of_the_same_agent(tmp_path):
    """Two runs with the same task and notebook: the first request of each is the same bytes."""
    with FakeProvider(replies() + replies()) as provider:
        lm = provider_lm(provider)
        agent = DeepAgent(lm=lm, workspace=tmp_path, max_iters=8, max_depth=0)
        first = agent.run("sum the list", {})
        second = agent.run("sum the list", {})
    assert first.status == second.status == "finished"
    assert flat(provider.requests[0]) == flat(provider.requests[len(STEPS)])


# ---------------------------------------------------------------- cached tokens in usage and cost
CACHED_USAGE = {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020,
                "prompt_tokens_details": {"cached_tokens": 800}}
PLAIN_USAGE = {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020}


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"])
def test_cached_tokens_the_provider_reports_reach_usage_events_record_and_a_cheaper_cost(tmp_path, model):
    runs = {}
    for label, usage in (("cached", CACHED_USAGE), ("plain", PLAIN_USAGE)):
        events = []
        with FakeProvider(replies(usage)) as provider:
            agent = DeepAgent(lm=provider_lm(provider, model), workspace=tmp_path / label, max_iters=8, max_depth=0)
            run = agent.run("sum the list", {}, listeners=[events.append])
        assert run.status == "finished", run.error
        runs[label] = (run, events)
    cached, events = runs["cached"]
    plain, _ = runs["plain"]
    assert cached.usage.cached_input_tokens == 800 * len(STEPS)
    assert plain.usage.cached_input_tokens == 0
    assert cached.usage.input_tokens == plain.usage.input_tokens == 1000 * len(STEPS)  # cached is part of input
    assert [event.data["cached_tokens"] for event in events if event.kind == LM_USAGE] == [800] * len(STEPS)
    assert cached.to_dict()["usage"]["cached_input_tokens"] == 800 * len(STEPS)
    record = json.loads((tmp_path / "cached" / ".deepagent" / "runs" / f"{cached.id}.json").read_text())
    assert record["usage"]["cached_input_tokens"] == 800 * len(STEPS)
    assert record["usage_total"]["cached_input_tokens"] == 800 * len(STEPS)
    assert 0 < cached.usage.cost < plain.usage.cost  # priced at the cache-read rate


def test_a_sub_agents_cached_tokens_count_in_the_tree():
    root = Run("root")
    root.begin_step("r", "c")
    child = root.add_child("child")
    root.record_usage("m", 100, 10, 0.01, cached_tokens=40)
    child.record_usage("m", 200, 10, 0.01, cached_tokens=150)
    assert root.tree_usage().cached_input_tokens == 190
    assert root.tree_usage().to_dict()["cached_input_tokens"] == 190


@pytest.mark.parametrize("usage, expected", [
    (None, 0), ("lots", 0), ({}, 0),
    ({"prompt_tokens": 10, "prompt_tokens_details": None}, 0),
    ({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": None}}, 0),
    ({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": "seven"}}, 0),
    ({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": -5}}, 0),
    ({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 10_000}}, 10),  # never more than the input
    ({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 7}}, 7),
    ({"input_tokens": 30, "cache_read_input_tokens": 25}, 25),
    ({"prompt_tokens": 10, "prompt_tokens_details": ["cached_tokens", 3]}, 0),
])
def test_whatever_shape_a_providers_usage_has_cached_tokens_is_a_sane_count(usage, expected):
    assert cached_tokens(usage) == expected


def test_a_provider_that_reports_nonsense_cached_tokens_does_not_break_the_run(tmp_path):
    usage = {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105,
             "prompt_tokens_details": {"cached_tokens": 10_000}}
    with FakeProvider(replies(usage)) as provider:
        run = run_agent(provider_lm(provider), tmp_path)
    assert run.status == "finished", run.error
    assert run.usage.cached_input_tokens <= run.usage.input_tokens


def test_the_displays_say_how_many_input_tokens_the_cache_served():
    from deepagent_magics.display.markup import status_line
    from deepagent_magics.display.text import summary

    run = Run("t")
    run.record_usage("m", 1000, 10, 0.01, cached_tokens=800)
    assert "(800 cached)" in summary(run) and "(800 cached)" in status_line(run)
    plain = Run("t")
    plain.record_usage("m", 1000, 10, 0.01)
    assert "cached" not in summary(plain)
