"""Provenance and undo through a real Jupyter kernel: the cell's summary, %deepagent_why, %deepagent_undo."""

from __future__ import annotations

import pytest
from tests.kernels import started_kernel
from tests.adversarial.test_approval_kernel import facts, run_cell

pytestmark = pytest.mark.kernel

SETUP = """
%load_ext deepagent_magics
import json
import numpy as np
from deepagent_magics.testing import ScriptedLM
%deepagent_config --workspace ws --quiet on
rows = [1, 2, 3]
grid = np.zeros(4)
view = rows
lm = ScriptedLM([
    ("Make a total.", "total = sum(rows)"),
    ("Grow the data.", "rows.append(total)\\ngrid[1] = 7"),
    ("Done.", "SUBMIT(result=str(total))"),
])
"""


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with started_kernel(tmp_path_factory.mktemp("provenance-kernel")) as (_, client):
        status, out, _ = run_cell(client, SETUP, [])
        assert status == "ok", out
        yield client


def test_why_and_undo_in_a_kernel(client):
    status, out, _ = run_cell(client, "%%deepagent --lm lm\nadd the total to the rows", [])
    assert status == "ok", out
    assert "created total" in out and "changed in place grid, rows" in out
    status, out, _ = run_cell(client, "%deepagent_why rows", [])
    assert status == "ok" and "rows was changed in place by run" in out and "step 2" in out and "rows.append(total)" in out
    status, out, _ = run_cell(client, "%deepagent_undo", [])
    assert status == "ok" and "removed the names it created: total" in out and "restored in place: grid, rows" in out
    assert facts(client, "[rows, view is rows, grid.tolist(), 'total' in globals()]") == [[1, 2, 3], True,
                                                                                          [0, 0, 0, 0], False]
    status, out, _ = run_cell(client, "%deepagent_undo", [])
    assert status == "error" and "was already undone" in out
    status, out, _ = run_cell(client, "%deepagent_why nobody_made_this", [])
    assert status == "error" and "no agent run in this kernel session made or changed 'nobody_made_this'" in out
