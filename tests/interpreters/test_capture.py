"""interpreters/capture.py: what agent code prints, per thread, bounded; display() output as text."""

from __future__ import annotations

import sys
import threading
import time

from deepagent_magics.interpreters.capture import BoundedBuffer, bundle_to_text, capture_displays, capture_streams


def test_each_threads_capture_gets_its_own_prints():
    results, ready, go = {}, threading.Barrier(2), threading.Event()

    def agent(name):
        with capture_streams() as buffer:
            ready.wait()
            for _ in range(50):
                print(name)
                time.sleep(0.001)  # the two threads' prints interleave
            print(name, file=sys.stderr)
        results[name] = buffer.getvalue()

    threads = [threading.Thread(target=agent, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert results == {"a": "a\n" * 51, "b": "b\n" * 51}


def test_a_thread_the_agent_started_writes_into_the_newest_capture():
    with capture_streams() as buffer:
        thread = threading.Thread(target=lambda: print("from a helper"))
        thread.start()
        thread.join()
    assert buffer.getvalue() == "from a helper\n"


def test_what_the_main_thread_prints_while_an_agent_runs_in_a_worker_goes_to_the_real_stream(capsys):
    """A benchmark's agents run in worker threads; the host's main thread prints its progress and, on ^C, the
    table: none of it may land in the output of the step that happens to be running (the model would read it,
    and the user would never see the table)."""
    inside, leave = threading.Event(), threading.Event()
    outputs = []

    def agent():
        with capture_streams() as buffer:
            print("the agent's own")
            inside.set()
            leave.wait(10)
        outputs.append(buffer.getvalue())

    worker = threading.Thread(target=agent)
    worker.start()
    assert inside.wait(10)
    print("the host's table")
    print("the host's progress", file=sys.stderr)
    leave.set()
    worker.join(10)
    assert outputs == ["the agent's own\n"]
    seen = capsys.readouterr()
    assert "the host's table" in seen.out and "the host's progress" in seen.err


def test_a_huge_output_keeps_its_head_and_tail_and_counts_the_rest():
    buffer = BoundedBuffer(kept=10)
    for i in range(1000):
        buffer.write(f"{i:03d}\n")
    text = buffer.getvalue()
    assert text.startswith("000\n0") and text.endswith("999\n")
    assert "(3,990 characters of output left out here)" in text and buffer.written == 4000
    small = BoundedBuffer(kept=100)
    small.write("whole")
    assert small.getvalue() == "whole"


def test_rich_output_becomes_the_text_a_model_reads(ip):
    assert bundle_to_text({"text/plain": "p", "text/markdown": "**m**"}) == "**m**"
    assert bundle_to_text({"text/plain": ["a", "b"]}) == "ab"
    assert bundle_to_text({"image/png": "...", "text/html": "x"}) == "[rich output: image/png, text/html]"
    from IPython.display import display

    buffer = BoundedBuffer()
    with capture_displays(ip, buffer):
        display({"text/markdown": "# shown", "text/plain": "shown"}, raw=True)
    assert buffer.getvalue() == "# shown\n"
    assert ip.display_pub.__class__.__name__ != "TextPublisher"  # put back
