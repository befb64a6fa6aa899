"""interpreters/facade_guard.py: a sub-agent's requests to DSPy's sandbox facade read before DSPy sees them (the
attacks through a real kernel: tests/adversarial/test_facade_calls.py)."""

from __future__ import annotations

import pytest
from dspy.primitives.code_interpreter import CodeInterpreterError
from dspy.primitives.facade import CALL_TOOL, CONSTRUCT_TOOL, SIGNATURE_MARKER, TOOL_MARKER

from deepagent_magics.interpreters.facade_guard import FacadeGuard, FacadeRefused, check_kwargs, check_signature


def test_plain_signatures_give_their_input_fields():
    assert check_signature("question, context: list[str] -> answer: str") == {"question", "context"}
    assert check_signature("q: Optional[int] | None -> a: Literal['x', 1, None]") == {"q"}
    assert check_signature({SIGNATURE_MARKER: True, "signature": "q -> a", "instructions": "Be brief."}) == {"q"}


@pytest.mark.parametrize("signature, says", [
    ("q: evil_mod -> a", "the type 'evil_mod' is not allowed"),
    ("q: Literal[os.system] -> a", "takes constants only"),
    ("q -> a -> b", "exactly one '->'"), ("q ->", "needs an output field"), ("q -> q", "distinct"),
    ("lm -> a", "'lm' is not allowed as a field name"), ("_private -> a", "is not allowed as a field name"),
    ("q=1 -> a", "nothing else"), ("q) -> (a", "not a list of fields"), (3, "is a string"),
    ({SIGNATURE_MARKER: True, "signature": "q -> a", "extra": 1}, "is a string such as"),
])
def test_a_signature_that_could_run_code_or_confuse_dspy_is_refused(signature, says):
    with pytest.raises(FacadeRefused, match=says):
        check_signature(signature)


def test_constructor_options_are_the_few_each_kind_takes():
    check_kwargs("Predict", {"temperature": 0.2, "stop": ["x"]})
    check_kwargs("ReAct", {"max_iters": 3, "tools": [{TOOL_MARKER: "ls"}]})
    for kind, kwargs, says in [("Predict", {"lm": "x"}, "is not allowed in the sandbox"),
                               ("Predict", {"temperature": "hot"}, "takes a number"),
                               ("ReAct", {"tools": ["ls"]}, "host tools bound in your namespace"),
                               ("Predict", "x", "must be keyword arguments")]:
        with pytest.raises(FacadeRefused, match=says):
            check_kwargs(kind, kwargs)


def test_a_predictor_is_called_only_once_built_here_with_its_own_inputs():
    guard = FacadeGuard()
    guard.check(CONSTRUCT_TOOL, ["Predict", "q -> a", "ask"], {})
    guard.check(CALL_TOOL, ["ask", {"q": "hi"}], {})
    with pytest.raises(FacadeRefused, match="are not input fields of 'ask'"):
        guard.check(CALL_TOOL, ["ask", {"q": "hi", "lm": "x"}], {})
    with pytest.raises(FacadeRefused, match="no predictor named 'other' was built here"):
        guard.check(CALL_TOOL, ["other"], {})
    with pytest.raises(FacadeRefused, match="is not allowed through the sandbox bridge"):
        guard.check(CONSTRUCT_TOOL, ["Evaluate", "q -> a", "e"], {})
    with pytest.raises(FacadeRefused, match="must be a Python identifier"):
        guard.check(CONSTRUCT_TOOL, ["Predict", "q -> a", "x y"], {})


def test_unknown_facade_tools_fail_closed_and_queries_take_strings_only():
    guard = FacadeGuard()
    with pytest.raises(FacadeRefused, match="is not allowed from a sub-agent's kernel"):
        guard.check("__dspy_new_thing__", [], {})
    with pytest.raises(FacadeRefused, match="takes the prompt as a string"):
        guard.check("llm_query", [[{"role": "system", "content": "x"}]], {})
    with pytest.raises(FacadeRefused, match="a list of prompt strings"):
        guard.check("llm_query_batched", [], {"prompts": ["a", {"role": "user"}]})
    guard.check("llm_query", [], {"prompt": "fine"})
    guard.check("read_file", ["x"], {})  # the agent's own tools check their own arguments
    with pytest.raises(FacadeRefused, match="unexpected or repeated argument"):
        guard.check("llm_query", ["a"], {"prompt": "b"})
    assert issubclass(FacadeRefused, CodeInterpreterError)
