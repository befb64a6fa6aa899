"""acp/places.py: where a session's code runs is chosen when it opens: a notebook's live kernel when a Jupyter
Server started the agent and the chat belongs to a notebook of its root, else a kernel of the session's own.

No kernel starts here (a place starts its kernel at the first prompt: tests/acp/test_own_kernel.py,
tests/acp/test_notebook_kernel.py); what is chosen, and what its first reply says, is checked.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("acp")
from deepagent_magics.acp.notebook_kernel import ROOT, TOKEN, URL, NotebookKernel  # noqa: E402
from deepagent_magics.acp.options import Options  # noqa: E402
from deepagent_magics.acp.own_kernel import OwnKernel  # noqa: E402
from deepagent_magics.acp.places import place_for  # noqa: E402

TOKEN_VALUE = "server-token-0123456789"


def chosen(cwd: Path, workspace: Path, environ: dict[str, str], meta=None, setup: str = ""):
    return asyncio.run(place_for(cwd, workspace, Options(lm_setup=setup), meta, environ))


@pytest.fixture
def root(tmp_path):
    """A server's root with a folder holding one notebook and a folder holding none."""
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "sales.ipynb").write_text("{}")
    (tmp_path / "empty").mkdir()
    return tmp_path


def server(root: Path) -> dict[str, str]:
    return {URL: "http://127.0.0.1:8888/base", TOKEN: TOKEN_VALUE, ROOT: str(root)}


def test_outside_a_jupyter_server_a_session_gets_a_kernel_of_its_own_set_up_with_the_model(root):
    place = chosen(root / "analysis", root / "work", {}, setup="configure_the_model()")
    assert isinstance(place, OwnKernel) and place.manager is None  # nothing started yet
    assert (place.cwd, place.workspace, place.setup) == (root / "analysis", root / "work", "configure_the_model()")
    assert "kernel of my own" in place.where() and str(root / "analysis") in place.where()


def test_started_by_a_server_a_chat_beside_one_notebook_runs_in_that_notebooks_kernel(root):
    place = chosen(root / "analysis", root, server(root))
    assert isinstance(place, NotebookKernel) and place.notebook == (root / "analysis" / "sales.ipynb").resolve()
    assert place.server.url == "http://127.0.0.1:8888/base/" and place.server.token == TOKEN_VALUE
    assert "analysis/sales.ipynb" in place.where() and TOKEN_VALUE not in place.where()


def test_the_chats_meta_names_its_notebook(root):
    (root / "empty" / "notes.chat").write_text("{}")
    (root / "empty" / "notes.ipynb").write_text("{}")
    (root / "empty" / "other.ipynb").write_text("{}")
    place = chosen(root / "empty", root, server(root), meta={"chat": "empty/notes.chat"})
    assert isinstance(place, NotebookKernel) and place.relative == "empty/notes.ipynb"


@pytest.mark.parametrize("where, environ", [
    ("empty", "server"),  # a server, but no notebook for the chat
    ("analysis", "no root"),  # a server that did not say its root: not reachable as one
    ("analysis", "another root"),  # the notebook is not under the server's root
])
def test_with_no_notebook_of_the_servers_a_session_gets_a_kernel_of_its_own(root, tmp_path_factory, where, environ):
    env = server(root)
    if environ == "no root":
        env.pop(ROOT)
    elif environ == "another root":
        env[ROOT] = str(tmp_path_factory.mktemp("elsewhere"))
    place = chosen(root / where, root, env)
    assert isinstance(place, OwnKernel) and place.cwd == root / where
