"""core/model/calls.py: what a model call is, what a layer is, and how a list of layers wraps a call."""

from __future__ import annotations

import asyncio
import contextlib

from deepagent_magics.core.model.calls import (FACADE, QUERY, STEP, Layer, ModelCall, before, compose, plain,
                                               with_inputs, within)


def a_call(kind: str = STEP, is_async: bool = False) -> ModelCall:
    return ModelCall(None, None, {}, "lm", is_async, kind)


def tagging(name: str, kinds=frozenset({STEP, QUERY}), applies=lambda call: True) -> Layer:
    def wrap(call, next_call):
        return lambda **inputs: next_call(**{**inputs, "path": inputs.get("path", "") + name})
    return Layer(name, "tags the path", applies, wrap, frozenset(kinds))


def test_a_layer_wraps_only_the_kinds_it_names_and_only_when_it_applies():
    layers = [tagging("a"), tagging("b", kinds={STEP}), tagging("c", applies=lambda call: False), tagging("d")]
    assert compose(a_call(STEP), lambda **inputs: inputs["path"], layers)(path="") == "abd"
    assert compose(a_call(QUERY), lambda **inputs: inputs["path"], layers)(path="") == "ad"
    assert compose(a_call(FACADE), lambda **inputs: inputs["path"], layers)(path="") == ""
    assert plain(a_call(), len)("four") == 4


def test_the_shapes_work_on_the_sync_and_the_async_path():
    seen = []

    @contextlib.contextmanager
    def held(call):
        seen.append("in")
        yield
        seen.append("out")

    layers = [Layer("before", "first", lambda call: True, before(lambda call: seen.append("before"))),
              Layer("within", "held", lambda call: True, within(held)),
              Layer("inputs", "changed", lambda call: True, with_inputs(lambda call, inputs: {**inputs, "x": 2}))]
    assert compose(a_call(), lambda **inputs: inputs["x"], layers)(x=1) == 2
    assert seen == ["before", "in", "out"]

    async def leaf(**inputs):
        seen.append("leaf")
        return inputs["x"]

    assert asyncio.run(compose(a_call(is_async=True), leaf, layers)(x=1)) == 2
    assert seen[3:] == ["before", "in", "leaf", "out"]  # the context is held while the coroutine runs


def test_a_call_counts_for_its_session_s_run_unless_it_names_its_own():
    class Session:
        run = "the session's run"

    assert ModelCall(None, Session(), {}, None, False).run == "the session's run"
    assert ModelCall(None, Session(), {}, None, False, FACADE, "its own").run == "its own"
    assert ModelCall(None, None, {}, None, False).run is None
