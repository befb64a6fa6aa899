"""The run API: a Jupyter Server extension serving ``/deepagent/api/`` (runs, their events, files, notebooks).

Other clients start, watch and read runs through the server they already trust: its
tokens and authorizer, its kernels. Installing the package enables it (the
``jupyter_server_config.d/deepagent_magics.json`` file it ships); by hand:
``jupyter server extension enable deepagent_magics``. See docs/api.md.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.utils import url_path_join

from .handlers import (
    RUN_ID,
    AnswerHandler,
    EventsHandler,
    FilesHandler,
    NotebookHandler,
    RunHandler,
    RunsHandler,
    StopHandler,
)
from .launch import Launcher

API = "/deepagent/api"


def handlers(base_url: str) -> list[tuple[str, Any]]:
    def url(tail: str) -> str:
        return url_path_join(base_url, API, tail)

    run = f"runs/(?P<run_id>{RUN_ID})"
    return [
        (url("runs/?"), RunsHandler),
        (url(f"{run}/?"), RunHandler),
        (url(f"{run}/events/?"), EventsHandler),
        (url(f"{run}/files/?"), FilesHandler),
        (url(f"{run}/notebook/?"), NotebookHandler),
        (url(f"{run}/stop/?"), StopHandler),
        (url(f"{run}/answer/?"), AnswerHandler),
    ]


def load(serverapp: Any) -> None:
    web_app = serverapp.web_app
    web_app.settings["deepagent_launcher"] = Launcher(serverapp.kernel_manager)
    web_app.add_handlers(".*$", handlers(web_app.settings["base_url"]))
    serverapp.log.info("deepagent_magics: run API at %s", url_path_join(web_app.settings["base_url"], API))


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    return [{"module": "deepagent_magics.server"}]


_load_jupyter_server_extension = load
