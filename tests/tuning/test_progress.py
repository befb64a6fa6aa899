"""tuning/progress.py: the evaluation's progress: one text line rewritten in place, or widgets in a kernel."""

from __future__ import annotations

import io
from types import SimpleNamespace

from deepagent_magics.tuning.progress import TextProgress, progress_for


def test_the_text_bar_counts_what_is_done_out_of_the_total():
    stream = io.StringIO()
    bar = TextProgress("scoring", stream=stream)
    bar.start(4)
    bar.advance("cot")
    bar.advance("deep agent")
    bar.close()
    frames = stream.getvalue().split("\r")
    assert frames[-1].startswith("scoring: [##########..........] 2/4 (deep agent)") and frames[-1].endswith("\n")
    assert frames[1].startswith("scoring: [....................] 0/4")


def test_widgets_only_in_a_jupyter_kernels_shell():
    assert isinstance(progress_for(None), TextProgress)
    assert isinstance(progress_for(SimpleNamespace()), TextProgress)
