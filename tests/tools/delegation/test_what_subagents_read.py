"""Sub-agents and the reviewer in real kernels: what they read, what reaches the parent, what is refused.

A sub-agent reads its own role (no notebook; the workspace is its working directory); what it submits reaches
its parent as data (a dict stays a dict; what JSON cannot carry arrives as text that says so); a failing step keeps
what it printed; its tools answer bad calls with ``Error:``; the reviewer is offered only tools that read, and a
writing call from it is refused with ``Error:``.
"""

from __future__ import annotations

import pytest

from deepagent_magics import DeepAgent
from deepagent_magics.interpreters.pool import KernelPool
from deepagent_magics.testing import ScriptedLM

pytestmark = pytest.mark.kernel

DATA_CHILD = [
    ("Fail once, printing first.", "print('loaded 3 rows')\nprint('z' * 50_000_000)\nrows = [1, 2, 3]\nrows[7]"),
    ("Try the tools badly.", "import pandas as pd\nbad = [write_file('x.bin', b'\\xff'), write_file('t.csv', pd.DataFrame({'a': [1]})), "
                             "read_file('missing.txt'), read_file(), ls(5), edit_file('nope.txt', 'a', 'b')]\n"
                             "print(all(isinstance(b, str) and b.startswith('Error:') for b in bad))"),
    ("Submit data.", "import math, pandas as pd\n"
                     "SUBMIT(result={'mean': 2.5, 'rows': rows, 'tags': {'b', 'a'}, 'score': math.nan, "
                     "'table': pd.DataFrame({'a': [1, 2]}), 'big': {f'k{n}': 'v' * 100 for n in range(100_000)}})"),
]
FRAME_CHILD = [("Submit a frame.", "import pandas as pd\nSUBMIT(result=pd.DataFrame({'x': [1, 2]}))")]
REVIEWER = [
    ("Try to fix the draft myself.", "attempt = write_file('report.md', 'fixed')\nprint(attempt)"),
    ("Verdict.", "SUBMIT(status='low', issues=['Criterion 1: ' + attempt], suggestions=[])"),
]
PARENT = [
    ("Delegate.", "results = delegate_batched(['DATA-CHILD: compute', 'FRAME-CHILD: make a frame'])"),
    ("Review.", "verdict = review('count', 'It is 3.', ['It is right'])"),
    ("Done.", "SUBMIT(result='ok')"),
]


@pytest.fixture(scope="module")
def pool():
    pool = KernelPool(size=2).warm()
    yield pool
    pool.stop()


def test_sub_agents_read_their_role_return_data_keep_their_prints_and_the_reviewer_only_reads(pool, tmp_path):
    (tmp_path / "report.md").write_text("the draft")
    lm = ScriptedLM(scripts={"": PARENT, "DATA-CHILD": DATA_CHILD, "FRAME-CHILD": FRAME_CHILD,
                             "Review a draft": REVIEWER})
    ns: dict = {"secret_frame": [1, 2, 3]}
    run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, timeout=60).run("PARENT: delegate", ns)
    assert run.status == "finished", run.error

    data, frame = ns["results"]
    assert data["mean"] == 2.5 and data["rows"] == [1, 2, 3] and data["tags"] == ["a", "b"]  # a set: sorted list
    assert data["score"] == "<float, sent as text> nan"
    assert data["table"].startswith("<DataFrame, sent as text>") and "a" in data["table"]
    assert isinstance(data["big"], dict) and len(data["big"]) == 100_000 and data["big"]["k7"] == "v" * 100
    assert isinstance(frame, str) and frame.startswith("<DataFrame, sent as text>") and "x" in frame

    child = next(c for c in run.children if c.task.startswith("DATA-CHILD"))
    first = child.steps[0].output
    assert first.index("loaded 3 rows") < first.index("Traceback") and "IndexError" in first
    assert "characters of output left out here" in first and len(first) < 210_000  # 50 MB printed, kept bounded
    assert child.steps[1].output == "True"  # every bad tool call in the kernel was an Error: string

    verdict = ns["verdict"]
    assert verdict["status"] == "low" and "is not available to you: your tools only read" in verdict["issues"][0]
    assert (tmp_path / "report.md").read_text() == "the draft"

    requests = {key: next(r for r in lm.requests if key in r["user"].split("[[ ## repl_history")[0])
                for key in ("DATA-CHILD", "Review a draft")}
    child_request = requests["DATA-CHILD"]
    assert "Variables in scope" not in child_request["user"] and "secret_frame" not in child_request["user"]
    assert "Code runs in a Jupyter kernel of your own, in the shared workspace" in child_request["system"]
    assert "a dict stays a dict" in child_request["system"] and "## You are a sub-agent" in child_request["system"]
    review_system = requests["Review a draft"]["system"]
    tools = review_system.split("## Tools", 1)[1]
    for writer in ("write_file", "edit_file", "write_todos", "remember", "delegate", "review("):
        assert f"`{writer}" not in tools, writer
    assert "`read_file(" in tools and "SUBMIT(status=..., issues=..., suggestions=...)" in tools
    assert len(child_request["system"]) + len(child_request["user"]) < 5000
    assert len(review_system) + len(requests["Review a draft"]["user"]) < 5000
