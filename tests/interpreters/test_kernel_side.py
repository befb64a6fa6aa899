"""interpreters/kernel_side.py: the helpers a step runs with in a kernel and on the host: SUBMIT, the trailing
expression's echo, the agent's own traceback, the thread left as it was (the runtime in a real kernel:
tests/interpreters/test_kernel.py)."""

from __future__ import annotations

import ast
import sys

import pytest

from deepagent_magics.interpreters.kernel_side import (
    ECHO_LIMIT,
    Submitted,
    echo,
    exec_step,
    format_traceback,
    make_submit,
    split_trailing_expression,
)


def run(code, namespace, filename="<agent step 1>"):
    body, tail = split_trailing_expression(ast.parse(code))
    return exec_step(body, tail, filename, namespace)


def test_a_step_runs_its_statements_and_returns_its_trailing_expression():
    namespace = {}
    assert run("x = 2\nx * 21", namespace) == 42 and namespace["x"] == 2
    assert run("y = 1", namespace) is None


def test_submit_takes_each_output_once_by_position_or_name():
    submit = make_submit(["answer", "notes"])
    with pytest.raises(Submitted) as caught:
        submit(1, notes="n")
    assert caught.value.output == {"answer": 1, "notes": "n"}
    for args, kwargs, says in [((1, 2, 3), {}, "at most 2 positional"), ((1,), {"answer": 2}, "multiple values"),
                               ((), {"other": 1}, "unexpected fields")]:
        with pytest.raises(TypeError, match=says):
            submit(*args, **kwargs)
    assert not issubclass(Submitted, Exception)  # `except Exception` in agent code cannot eat it


def test_the_traceback_starts_at_the_agents_code_and_keeps_the_last_library_frame():
    namespace = {}
    with pytest.raises(ZeroDivisionError) as caught:
        run("import fractions\ndef f():\n    return fractions.Fraction(1, 0)\nf()", namespace)
    text = format_traceback(caught.value)
    assert text.startswith("Traceback (most recent call last):") and text.endswith("ZeroDivisionError: Fraction(1, 0)")
    assert '"<agent step 1>", line 4' in text and '"<agent step 1>", line 3' in text
    assert "fractions.py" in text and "kernel_side" not in text and "pytest" not in text


def test_afterwards_the_threads_handled_exception_and_trace_are_as_before():
    trace = sys.gettrace()
    code = ("import sys\nclass Swallow:\n    def __enter__(self): return self\n"
            "    def __exit__(self, *exc): return True\n"
            "with Swallow():\n    raise KeyError('agent')\nsys.settrace(lambda *a: None)")
    try:
        raise ValueError("the user's own")
    except ValueError as mine:
        run(code, {})
        assert sys.exc_info()[1] is mine  # a bare raise here still re-raises the user's exception
    assert sys.gettrace() is trace


def test_echo_is_the_string_itself_or_a_bounded_repr():
    class Broken:
        def __repr__(self):
            raise RuntimeError("no")

    assert echo("text") == "text" and echo([1]) == "[1]"
    assert echo(Broken()) == "<Broken object; repr failed: no>"
    assert echo("x" * (ECHO_LIMIT + 10)).endswith("... (10 more chars)")
