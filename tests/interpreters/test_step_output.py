"""A step's output keeps what its code printed, then its error: stdout and stderr up to the exception, then the
traceback trimmed to the agent's own frames and the last library frame; and a step printing a gigabyte is kept
bounded (its head and tail), in bounded memory."""

from __future__ import annotations

import json

import pytest
from dspy.primitives.code_interpreter import CodeExecutionError

from deepagent_magics import DeepAgent, ShellInterpreter
from deepagent_magics.interpreters.capture import KEPT
from deepagent_magics.testing import ScriptedLM

FAILING = "import sys, json\nprint('first line')\nprint('to stderr', file=sys.stderr)\nrows = [1, 2]\njson.loads('{bad')"


def test_what_a_failing_step_printed_comes_before_its_traceback(tmp_path):
    lm = ScriptedLM([("Try.", FAILING), ("Done.", "SUBMIT(result=str(rows))")])
    run = DeepAgent(lm=lm, workspace=tmp_path, max_depth=0).run("parse", {})
    output = run.steps[0].output
    assert output.index("first line") < output.index("to stderr") < output.index("Traceback")
    assert "Expecting property name enclosed in double quotes" in output
    assert run.result == "[1, 2]"  # what it assigned before the error stays
    second_request = lm.requests[1]["user"]
    assert "first line" in second_request and "to stderr" in second_request  # the model reads it too


def test_the_traceback_keeps_the_agents_frames_and_only_the_last_library_frame():
    interpreter = ShellInterpreter({})
    with pytest.raises(CodeExecutionError) as caught:
        interpreter.execute("import json\ndef parse(text):\n    return json.loads(text)\nparse('{bad')")
    text = str(caught.value)
    frames = [line for line in text.splitlines() if line.startswith('  File "')]
    assert [f.split('"')[1] for f in frames[:2]] == ["<agent step 1>", "<agent step 1>"]
    assert len(frames) == 3 and frames[2].split('"')[1].endswith("json/decoder.py")  # where it failed
    assert "json/__init__.py" not in text  # the library frames in between are left out


def test_a_library_frame_is_named_by_its_import_path_not_where_python_is_installed():
    """The same error reads the same on every machine (and costs fewer characters): ``pandas/io/common.py``,
    ``json/decoder.py``, not the virtualenv's or the interpreter's folder."""
    interpreter = ShellInterpreter({})
    with pytest.raises(CodeExecutionError) as caught:
        interpreter.execute("import json\njson.loads('{bad')")
    with pytest.raises(CodeExecutionError) as missing:
        interpreter.execute("import pandas as pd\npd.read_csv('no-such-file.csv')")
    library = [line.split('"')[1] for text in (str(caught.value), str(missing.value))
               for line in text.splitlines() if line.startswith('  File "') and "<agent step" not in line]
    assert library and all(not name.startswith("/") for name in library), library
    assert library[0] == "json/decoder.py" and library[1].startswith("pandas/"), library


def test_a_step_printing_a_gigabyte_is_kept_as_its_head_and_tail():
    interpreter = ShellInterpreter({})
    output = interpreter.execute("for n in range(200_000):\n    print(f'{n:09d}' + 'x' * 4990)")
    assert len(output) < KEPT + 200
    assert output.startswith("000000000xxx") and output.rstrip().endswith("000199999" + "x" * 4990)
    assert "characters of output left out here" in output
    with pytest.raises(CodeExecutionError) as caught:
        interpreter.execute("print('y' * 300_000_000)\nraise ValueError('after the flood')")
    assert len(str(caught.value)) < KEPT + 2000 and "ValueError: after the flood" in str(caught.value)
