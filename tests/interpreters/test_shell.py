"""ShellInterpreter: a CodeInterpreter whose REPL is a given namespace."""

from __future__ import annotations

import threading

import pytest
from dspy.primitives.code_interpreter import CodeExecutionError, FinalOutput

from deepagent_magics.interpreters.shell import ShellInterpreter


def make(namespace=None, **kwargs):
    interpreter = ShellInterpreter(namespace if namespace is not None else {}, **kwargs)
    interpreter.output_fields = [{"name": "result"}]
    return interpreter


def test_a_trailing_expression_is_echoed_like_a_repl():
    interpreter = make()
    assert interpreter.execute("x = 20\nx + 1") == "21"
    assert interpreter.execute("x = 5") is None
    assert interpreter.execute("[x, 'a']") == "[5, 'a']"
    assert interpreter.execute("'text'") == "text"  # strings read as text, not as a quoted repr


def test_stdout_and_stderr_are_captured_not_leaked(capfd):
    interpreter = make()
    out = interpreter.execute("import sys\nprint('hello')\nprint('oops', file=sys.stderr)")
    assert out == "hello\noops"
    assert "hello" not in capfd.readouterr().out


def test_rich_display_output_reaches_the_lm(_shell):
    interpreter = make({}, shell=_shell)
    code = (
        "from IPython.display import display\n"
        "class Table:\n"
        "    def __repr__(self): return 'Table(3 rows)'\n"
        "    def _repr_html_(self): return '<table></table>'\n"
        "print('before')\n"
        "display(Table())\n"
        "print('after')"
    )
    assert interpreter.execute(code) == "before\nTable(3 rows)\nafter"  # in the order it happened


def test_errors_come_back_as_a_traceback_of_the_agents_code():
    interpreter = make()
    interpreter.execute("def helper(n):\n    return 10 / n")
    with pytest.raises(CodeExecutionError) as info:
        interpreter.execute("y = 1\nhelper(0)")
    message = str(info.value)
    assert message.startswith("Traceback (most recent call last):")
    assert "ZeroDivisionError: division by zero" in message
    assert "helper(0)" in message and "return 10 / n" in message
    assert "shell_interpreter.py" not in message  # our own frames are trimmed
    assert interpreter.namespace["y"] == 1  # what ran before the error is kept


def test_syntax_errors_are_raised_for_rlm_to_report():
    with pytest.raises(SyntaxError):
        make().execute("def broken(:\n")


def test_submit_returns_final_output_and_stops_the_block():
    interpreter = make()
    result = interpreter.execute("SUBMIT(result='done')\nafter = 1")
    assert result == FinalOutput({"result": "done"})
    assert "after" not in interpreter.namespace
    assert interpreter.execute("SUBMIT('positional')") == FinalOutput({"result": "positional"})
    with pytest.raises(CodeExecutionError, match="unexpected fields"):
        interpreter.execute("SUBMIT(answer='x')")


def test_submit_is_not_swallowed_by_a_broad_except():
    result = make().execute("try:\n    SUBMIT(result='ok')\nexcept Exception:\n    pass")
    assert result == FinalOutput({"result": "ok"})


def test_tools_take_positional_and_keyword_arguments():
    def read_file(path: str, offset: int = 0, limit: int = 10) -> str:
        return f"{path}:{offset}:{limit}"

    # RLM hands interpreters keyword-only wrappers carrying the tool's signature.
    def invoke(**kwargs):
        return read_file(**kwargs)

    import inspect

    invoke.__signature__ = inspect.signature(read_file)
    interpreter = make(tools={"read_file": invoke})
    assert interpreter.execute("read_file('a.txt', 3)") == "a.txt:3:10"
    assert interpreter.execute("read_file(path='b', limit=2)") == "b:0:2"
    with pytest.raises(CodeExecutionError, match="missing a required argument"):
        interpreter.execute("read_file()")


def test_a_runaway_loop_is_stopped_and_reported_without_killing_the_interpreter():
    interpreter = make(timeout=0.5)
    with pytest.raises(CodeExecutionError, match="ran longer than 0.5 s"):
        interpreter.execute("n = 0\nwhile True:\n    n += 1")
    assert interpreter.namespace["n"] > 0  # state assigned before the stop is kept
    assert interpreter.execute("1 + 1") == "2"


def test_a_runaway_loop_is_stopped_off_the_main_thread_too():
    interpreter = make(timeout=0.5)
    errors = []

    def work():
        try:
            interpreter.execute("while True:\n    pass")
        except CodeExecutionError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(20)
    assert not thread.is_alive()
    assert errors and "ran longer than" in errors[0]


def test_time_spent_in_a_tool_does_not_count_against_the_limit():
    import time

    def slow_tool() -> str:
        time.sleep(0.8)
        return "slow done"

    interpreter = make(tools={"slow_tool": slow_tool}, timeout=0.5)
    assert interpreter.execute("slow_tool()") == "slow done"


def test_shutdown_restores_every_user_binding_and_keeps_new_names():
    import dspy

    def user_ls():
        return "mine"

    namespace = {"dspy": dspy, "ls": user_ls, "data": [1, 2], "__builtins__": __builtins__}
    original = dict(namespace)
    interpreter = make(namespace, tools={"ls": lambda path=".": "tool ls"})
    interpreter.start()
    # What RLM does: install its sandbox dspy shim through execute().
    from dspy.primitives.facade import HOST_TOKEN_VAR, SHIM_SETUP

    interpreter.execute(SHIM_SETUP, variables={HOST_TOKEN_VAR: "token"})
    assert namespace["dspy"] is not dspy  # the shim is bound during the run
    assert interpreter.execute("ls()") == "tool ls"
    interpreter.execute("created = len(data)\ndata = 'rebound by the agent'", variables={"task": "t"})
    interpreter.shutdown()

    for name, value in original.items():
        assert namespace[name] is value, name
    assert namespace["created"] == 2
    assert "SUBMIT" not in namespace and "task" not in namespace
    assert not [name for name in namespace if name.startswith("_dspy")]
    assert interpreter.reverted == {"data": "rebound by the agent"}


def test_an_input_variable_never_shadows_a_user_variable():
    namespace = {"task": "the user's own task variable"}
    interpreter = make(namespace)
    interpreter.execute("x = 1", variables={"task": "the agent's task", "context": ""})
    assert namespace["task"] == "the user's own task variable"
    assert namespace["context"] == ""
    interpreter.shutdown()
    namespace.pop("__builtins__")  # exec() adds it to any dict it runs in
    assert namespace == {"task": "the user's own task variable", "x": 1}
