"""interpreters/output_limit.py: in a kernel, a step's printed output passes on its head, keeps its tail, and says
how much was left out (the gigabyte case end to end: tests/interpreters/test_step_output.py)."""

from __future__ import annotations

import io
import sys

from deepagent_magics.interpreters.output_limit import _Limited, library_path, limited


def test_small_output_passes_whole():
    sink = io.StringIO()
    stream = _Limited(sink, kept=100)
    stream.write("hello\n")
    stream.finish()
    assert sink.getvalue() == "hello\n" and stream.left_out == 0


def test_large_output_is_its_head_a_line_on_what_was_left_out_and_its_tail():
    sink = io.StringIO()
    stream = _Limited(sink, kept=20)
    for i in range(1000):
        stream.write(f"{i:04d}\n")
    stream.finish()
    text = sink.getvalue()
    assert text.startswith("0000\n0001") and text.endswith("0999\n")
    assert "characters of output left out here" in text and len(text) < 120
    assert stream.left_out == 5000 - 20


def test_one_huge_write_keeps_only_its_end():
    sink = io.StringIO()
    stream = _Limited(sink, kept=10)
    stream.write("a" * 5 + "b" * 10_000 + "END")
    stream.finish()
    assert sink.getvalue().startswith("aaaaa") and sink.getvalue().endswith("bbEND")


def test_the_streams_are_put_back_after_the_step():
    before = sys.stdout, sys.stderr
    with limited():
        assert isinstance(sys.stdout, _Limited)
    assert (sys.stdout, sys.stderr) == before


def test_a_library_frame_is_named_by_its_import_path():
    assert library_path("/opt/py/lib/python3.11/site-packages/pandas/io/common.py") == "pandas/io/common.py"
    assert library_path("/usr/lib/python3/dist-packages/x.py") == "x.py"
    assert library_path("/home/me/mine.py") == "/home/me/mine.py"
    import json

    assert library_path(json.__file__) == "json/__init__.py"
