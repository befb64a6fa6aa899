"""Tools never raise at the model: every bad call of every built-in tool comes back as an ``Error:`` string that
says what to fix (a DataFrame or bytes to write_file, a binary file to read_file, a missing path, a wrong
argument), from the agent's own code in the live namespace."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.testing import ScriptedLM

BAD_CALLS = {
    "write_file": ["write_file('a.bin', b'\\x00\\x01')", "write_file('a.csv', df)", "write_file('a.json', {'a': 1})",
                   "write_file(3, 'x')", "write_file('a.txt')", "write_file('a.txt', 'x', mode='w')",
                   "write_file('../out.txt', 'x')", "write_file('a.txt', df['a'])", "write_file('a.npy', df.values)"],
    "read_file": ["read_file('pic.png')", "read_file('data.pkl')", "read_file('missing.txt')",
                  "read_file('notes.txt', offset='x')", "read_file()", "read_file(b'notes.txt')"],
    "edit_file": ["edit_file('missing.txt', 'a', 'b')", "edit_file('notes.txt', '', 'b')",
                  "edit_file('notes.txt', 1, 2)", "edit_file('pic.png', 'a', 'b')"],
    "ls": ["ls('nope')", "ls(42)", "ls('a', 'b', 'c')"],
    "glob": ["glob(None)", "glob('/etc/*')", "glob('../*')", "glob()"],
    "grep": ["grep('(')", "grep('a', path='nope')", "grep(None)", "grep('a', glob=5)"],
    "write_todos": ["write_todos('not json')", "write_todos([{'status': 'pending'}])", "write_todos(5)",
                    "write_todos([{'content': 'x', 'status': 'someday'}])"],
    "read_todos": ["read_todos(1)"],
    "remember": ["remember('')", "remember('x' * 5000)", "remember('x', tags=5)", "remember()"],
    "recall": ["recall('x', k='many')", "recall()"],
    "history": ["history('a')", "history(1, 2, 3)"],
    "list_skills": ["list_skills(1)"],
    "read_skill": ["read_skill('nope')", "read_skill(None)", "read_skill('nope', file=3)"],
    "delegate": ["delegate('')", "delegate('x', agent='nope')", "delegate('x', agent='a', profile='b')"],
    "delegate_batched": ["delegate_batched('nope')", "delegate_batched(5)", "delegate_batched({'task': 1})"],
    "review": ["review('t', 'd', criteria=5)", "review()"],
}


def test_every_built_in_tool_is_exercised_here():
    assert {tool.__name__ for tool in DeepAgent().builtin_tools()} == set(BAD_CALLS)


def test_every_bad_call_of_every_built_in_tool_answers_with_an_error_string(tmp_path):
    (tmp_path / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    (tmp_path / "data.pkl").write_bytes(b"\x80\x04\x95" + b"\x00" * 40)
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    calls = [call for each in BAD_CALLS.values() for call in each]
    code = "answers = []\n" + "\n".join(f"answers.append({call})" for call in calls)
    lm = ScriptedLM([("Try them all.", code), ("Done.", "SUBMIT(result='ok')")])
    ns = {"df": pd.DataFrame({"a": np.arange(3)})}
    pool = KernelPool(size=0)  # delegation refuses every one of these before it would need a kernel
    try:
        run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool).run("try the tools", ns)
    finally:
        pool.stop()
    assert run.status == "finished" and run.steps[0].output == "", run.steps[0].output
    answers = dict(zip(calls, ns["answers"]))
    for call, answer in answers.items():
        assert isinstance(answer, str) and answer.startswith("Error:"), (call, answer)
        assert len(answer) <= 700 and "\n" not in answer.strip(), (call, answer)  # short, one line, no repr dump
    assert "df.to_csv(" in answers["write_file('a.csv', df)"] and str(tmp_path) in answers["write_file('a.csv', df)"]
    assert "decode it" in answers["write_file('a.bin', b'\\x00\\x01')"]
    assert "json.dumps" in answers["write_file('a.json', {'a': 1})"]
    assert "numpy.save" in answers["write_file('a.npy', df.values)"]
    assert "PNG image, not text" in answers["read_file('pic.png')"] and "pickle" in answers["read_file('data.pkl')"]
    assert "does not exist" in answers["read_file('missing.txt')"]
    assert "call it as read_file(path, offset=0, limit=2000)" in answers["read_file()"]
    assert "unexpected keyword argument 'mode'" in answers["write_file('a.txt', 'x', mode='w')"]
    assert not (tmp_path / "a.csv").exists() and not (tmp_path / "a.bin").exists()
    assert not (tmp_path.parent / "out.txt").exists()


@pytest.mark.parametrize("content", [b"bytes", bytearray(b"x"), {"a": 1}, [1], 3.5, None])
def test_write_file_never_writes_what_is_not_text(tmp_path, content):
    lm = ScriptedLM([("Write.", "answer = write_file('x.txt', value)"), ("Done.", "SUBMIT(result='ok')")])
    ns = {"value": content}
    DeepAgent(lm=lm, workspace=tmp_path, max_depth=0).run("write", ns)
    assert ns["answer"].startswith("Error: content is ") and not (tmp_path / "x.txt").exists()


def test_a_very_long_line_is_read_in_part_never_whole(tmp_path):
    (tmp_path / "one_line.json").write_text("[" + "1," * 5_000_000 + "1]")
    lm = ScriptedLM([("Read.", "text = read_file('one_line.json')"), ("Done.", "SUBMIT(result='ok')")])
    ns: dict = {}
    DeepAgent(lm=lm, workspace=tmp_path, max_depth=0).run("read", ns)
    assert len(ns["text"]) < 2200 and ns["text"].endswith("more characters in this line)")
