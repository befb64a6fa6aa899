"""What the browser-caller attacks need: a real Jupyter Server with the run API (logging at DEBUG), a user's
login cookie on it, and raw HTTP requests whose headers a test sets as a hostile page's browser would."""

from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlparse

from tests.servers import answers, free_port, serving

REPO = Path(__file__).resolve().parents[2]
SHIPPED_CONFIG = REPO / "jupyter-config" / "jupyter_server_config.d" / "deepagent_magics.json"
EVIL = "http://evil.example"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    text: str

    def json(self):
        try:
            return json.loads(self.text)
        except ValueError:
            return None


def request(url: str, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> Reply:
    """One request with exactly these headers (``Host`` too, when given): nothing added, nothing followed."""
    parts = urlparse(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    headers = dict(headers or {})
    try:
        connection.putrequest(method, path, skip_host="Host" in headers, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()},
                     response.read().decode("utf-8", "replace"))
    finally:
        connection.close()


@dataclass
class JupyterServer:
    url: str
    token: str
    root: Path
    log: Path
    cookies: dict[str, str] = field(default_factory=dict)

    @property
    def host(self) -> str:
        return urlparse(self.url).netloc

    def with_token(self, method: str, path: str, body=None, **headers: str) -> Reply:
        return request(self.url, method, path, None if body is None else json.dumps(body).encode(),
                       {"Authorization": f"token {self.token}", "Content-Type": "application/json", **headers})

    def log_in(self) -> None:
        """What a user does in a browser: the login page (its ``_xsrf`` cookie), then the token typed into it."""
        page = request(self.url, "GET", "/login")
        self._keep(page)
        form = urlencode({"password": self.token, "_xsrf": self.cookies["_xsrf"]}).encode()
        reply = request(self.url, "POST", "/login", form, {
            "Content-Type": "application/x-www-form-urlencoded", "Cookie": self.cookie_header(),
            "Origin": self.url})
        assert reply.status == 302, (reply.status, reply.text[:500])
        self._keep(reply)
        assert any(name.startswith("username-") for name in self.cookies), self.cookies

    def _keep(self, reply: Reply) -> None:
        for cookie in reply.headers.get("set-cookie", "").split(", "):
            match = re.match(r"([^=;\s]+)=([^;]*)", cookie)
            if match and match.group(2):
                self.cookies[match.group(1)] = match.group(2)

    def cookie_header(self) -> str:
        return "; ".join(f"{name}={value}" for name, value in self.cookies.items())

    def as_the_users_browser(self, method: str, path: str, body: bytes | None = None, **headers: str) -> Reply:
        """A request carrying the user's login cookie (as the browser adds it), and the headers given."""
        return request(self.url, method, path, body, {"Cookie": self.cookie_header(), **headers})

    def runs_and_kernels(self) -> tuple[list, list]:
        runs = self.with_token("GET", "/deepagent/api/runs").json()["runs"]
        kernels = self.with_token("GET", "/api/kernels").json()
        return runs, kernels

    def log_since(self, offset: int) -> str:
        return self.log.read_text(errors="replace")[offset:]


def jupyter_server(root: Path):
    """A real ``jupyter server`` on 127.0.0.1 with the run API (the shipped config file), logging at DEBUG."""
    config = root / ".config" / "jupyter_server_config.d"
    config.mkdir(parents=True)
    shutil.copy(SHIPPED_CONFIG, config)
    port, token = free_port(), "tok" + secrets.token_hex(20)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(root / ".config"), JUPYTER_RUNTIME_DIR=str(root / ".runtime"),
               JUPYTER_TOKEN=token, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    url = f"http://127.0.0.1:{port}"
    log = root / "server.log"
    argv = [sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}",
            "--allow-root", "--ServerApp.log_level=DEBUG"]
    ready = answers(f"{url}/api")  # the version: answered without a token
    return serving(argv, cwd=root, env=env, log=log, ready=ready), JupyterServer(url, token, root, log)
