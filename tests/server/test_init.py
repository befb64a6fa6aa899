"""server/__init__.py: the run API's routes under the server's base URL, and the extension's entry points (the API
on a real Jupyter Server: tests/server/test_run_api.py)."""

from __future__ import annotations

import re

from deepagent_magics import server
from deepagent_magics.server.handlers import EventsHandler, FilesHandler, NotebookHandler, RunHandler, RunsHandler, StopHandler


def test_every_route_is_under_the_base_url_and_takes_a_run_id_that_names_a_file():
    routes = dict(server.handlers("/base/"))
    assert {RunsHandler, RunHandler, EventsHandler, FilesHandler, NotebookHandler, StopHandler} <= set(routes.values())
    assert all(pattern.startswith("/base/deepagent/api/") for pattern in routes)
    run = next(pattern for pattern, handler in routes.items() if handler is RunHandler)
    assert re.fullmatch(run, "/base/deepagent/api/runs/20260101-000000-abcdef")
    assert not re.fullmatch(run, "/base/deepagent/api/runs/../../etc")
    assert server._jupyter_server_extension_points() == [{"module": "deepagent_magics.server"}]
    assert server._load_jupyter_server_extension is server.load
