"""Ordinary risky code whose paths or hosts exist only at run time: what approval's preview cannot see.

Issue 22 found 33 of 33 such snippets ran unasked under ``--approve risky``: paths built with
``os.path.join``/``Path.home()``, ``Path(...).open('w')``, a path or a function kept from an earlier
step, ``%%writefile`` through ``run_cell_magic``, an s3 read, ``Path.rename``, processes and sockets
reached through a name the preview does not know. Each `Case` is one step (after an optional set-up
step) in which the static preview (`core/policy/risk.py`) finds no risk of the case's rule, so only
the runtime checks can ask. The paths come from the environment (`Places.environ`): ``OUTSIDE`` (a
folder outside the workspace, with ``home`` in it as ``HOME``), ``WS`` (the workspace), ``VICTIM``
(a file outside) and ``PORT`` (a local HTTP server that counts its connections).
"""

from __future__ import annotations

import http.server
import os
import socketserver
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass
class Case:
    name: str
    code: str
    asks: str  # what the runtime question names: formatted with OUT, HOME, VICTIM, WS, PORT
    setup: str = ""  # an earlier step (kept variables); the preview may ask about it
    rule: str = "writes_outside_workspace"
    starts_process: bool = False  # make test-fast leaves it out (pytest's `subprocess` mark)

    def param(self) -> Any:
        return pytest.param(self, id=self.name, marks=[pytest.mark.subprocess] if self.starts_process else [])


ENV = "import os\nOUT, WS = os.environ['OUTSIDE'], os.environ['WS']\n"
CASES = [
    # -------------------------------------------------------------- writes outside the workspace
    Case("join_expanduser", "import os\nopen(os.path.join(os.path.expanduser('~'), 'notes.md'), 'w').write('x')",
         "write {HOME}/notes.md? outside the workspace"),
    Case("home_write_text", "from pathlib import Path\n(Path.home() / 'notes.md').write_text('x')", "write {HOME}/notes.md?"),
    Case("path_open_w", ENV + "from pathlib import Path\nwith Path(OUT, 'a.txt').open('w') as f:\n    f.write('x')",
         "write {OUT}/a.txt?"),
    Case("open_append_fstring", ENV + "folder = OUT\nwith open(f'{folder}/log.txt', 'a') as f:\n    f.write('x')",
         "write {OUT}/log.txt?"),
    Case("kept_path", "open(target, 'w').write('x')", "write {OUT}/kept.txt?",
         setup=ENV + "target = os.path.join(OUT, 'kept.txt')"),
    Case("writefile_magic", "get_ipython().run_cell_magic('writefile', '{OUT}/x.py', 'print(1)\\n')", "write {OUT}/x.py?"),
    Case("json_dump", ENV + "import json\njson.dump({'a': 1}, open(os.path.join(OUT, 'a.json'), 'w'))", "write {OUT}/a.json?"),
    Case("pandas_to_csv", ENV + "import pandas as pd\npd.DataFrame({'a': [1]}).to_csv(os.path.join(OUT, 'out.csv'))",
         "write {OUT}/out.csv?"),
    Case("numpy_save", ENV + "import numpy as np\nnp.save(os.path.join(OUT, 'a.npy'), np.zeros(3))", "write {OUT}/a.npy?"),
    Case("shutil_copy", ENV + "import shutil\nshutil.copy(os.path.join(WS, 'src.txt'), OUT)", "to {OUT}/src.txt?"),
    Case("makedirs", ENV + "os.makedirs(os.path.join(OUT, 'new', 'deeper'))", "create the folder {OUT}/new?"),
    Case("touch", ENV + "from pathlib import Path\nPath(OUT, 't.txt').touch()", "write {OUT}/t.txt?"),
    Case("symlink", ENV + "os.symlink(WS, os.path.join(OUT, 'link'))", "create the link {OUT}/link?"),
    Case("logging_file", ENV + "import logging\nlogging.FileHandler(os.path.join(OUT, 'x.log'))", "write {OUT}/x.log?"),
    Case("thread_write", ENV + "import threading\ndef write():\n    try:\n        open(os.path.join(OUT, 'th.txt'), 'w').write('x')\n"
         "    except OSError as e:\n        print(e)\nt = threading.Thread(target=write)\nt.start()\nt.join()",
         "write {OUT}/th.txt?"),
    Case("pool_write", ENV + "from concurrent.futures import ThreadPoolExecutor\nfrom pathlib import Path\n"
         "with ThreadPoolExecutor(2) as ex:\n    ex.submit(Path(OUT, 'pool.txt').write_text, 'x').result()",
         "write {OUT}/pool.txt?"),
    Case("chmod", "import os\nos.chmod(os.environ['VICTIM'], 0o600)", "change the permissions of {VICTIM}?"),
    Case("open_r_plus", "import os\nopen(os.environ['VICTIM'], 'r+').truncate(0)", "write {VICTIM}?"),
    Case("pickle_dump", ENV + "import pickle\npickle.dump([1], open(os.path.join(OUT, 'a.pkl'), 'wb'))", "write {OUT}/a.pkl?"),
    Case("mkstemp", ENV + "import tempfile\ntempfile.mkstemp(dir=OUT)", "write {OUT}/tmp"),
    # -------------------------------------------------------------- removes or moves files
    Case("path_rename", "import os\nfrom pathlib import Path\np = Path(os.environ['VICTIM'])\np.rename(p.with_suffix('.bak'))",
         "move {VICTIM} to {OUT}/victim.bak?", rule="removes_files"),
    Case("path_replace", ENV + "from pathlib import Path\nPath(os.environ['VICTIM']).replace(Path(OUT, 'moved.txt'))",
         "move {VICTIM} to {OUT}/moved.txt?", rule="removes_files"),
    Case("kept_replace", "mv(os.environ['VICTIM'], os.path.join(OUT, 'm2.txt'))", "move {VICTIM} to {OUT}/m2.txt?",
         setup=ENV + "mv = os.replace", rule="removes_files"),
    Case("kept_rmtree", "wipe(os.path.join(OUT, 'tree'))", "remove the folder {OUT}/tree and everything in it?",
         setup=ENV + "import shutil\nwipe = shutil.rmtree", rule="removes_files"),
    Case("rename_all", ENV + "from pathlib import Path\nfor p in sorted(Path(OUT).glob('*.txt')):\n"
         "    p.rename(p.with_suffix('.old'))", "move {VICTIM} to {OUT}/victim.old?", rule="removes_files"),
    # -------------------------------------------------------------- starts processes
    Case("kept_subprocess_run", "run(['touch', os.path.join(OUT, 'proc.txt')])", "run touch {OUT}/proc.txt?",
         setup=ENV + "import subprocess\nrun = subprocess.run", rule="starts_process", starts_process=True),
    Case("kept_os_system", "shell('touch ' + os.path.join(OUT, 'sys.txt'))", "run touch {OUT}/sys.txt?",
         setup=ENV + "shell = os.system", rule="starts_process"),
    Case("kept_asyncio_subprocess", "import asyncio\nasync def go():\n    await (await spawn('touch', os.path.join(OUT, 'aio.txt'))).wait()\n"
         "asyncio.run(go())",
         "run touch {OUT}/aio.txt?", setup=ENV + "import asyncio\nspawn = asyncio.create_subprocess_exec",
         rule="starts_process", starts_process=True),
    Case("kept_popen_in_thread", "import threading\ndef go():\n    try:\n        start(['touch', os.path.join(OUT, 'thp.txt')]).wait()\n"
         "    except OSError as e:\n        print(e)\nt = threading.Thread(target=go)\nt.start()\nt.join()",
         "run touch {OUT}/thp.txt?", setup=ENV + "import subprocess\nstart = subprocess.Popen", rule="starts_process",
         starts_process=True),
    # -------------------------------------------------------------- network
    Case("kept_connect", "connect(('127.0.0.1', int(os.environ['PORT']))).close()", "connect to 127.0.0.1:{PORT}?",
         setup=ENV + "import socket\nconnect = socket.create_connection", rule="network"),
    Case("pandas_url_kept", "import pandas as pd\npd.read_csv(url)", "open http://127.0.0.1:{PORT}/data.csv?",
         setup="import os\nurl = 'http://127.0.0.1:' + os.environ['PORT'] + '/data.csv'", rule="network"),
    Case("boto3_s3_read", "import os, boto3\ns3 = boto3.client('s3', endpoint_url='http://127.0.0.1:' + os.environ['PORT'], "
         "aws_access_key_id='x', aws_secret_access_key='y', region_name='us-east-1')\n"
         "s3.get_object(Bucket='bucket', Key='data.csv')", "connect to 127.0.0.1:{PORT}?", rule="network"),
    Case("httpx_client_kept", "client.get('http://127.0.0.1:' + os.environ['PORT'] + '/data.csv')",
         "connect to 127.0.0.1:{PORT}?", setup="import os, httpx\nclient = httpx.Client()", rule="network"),
]
assert len(CASES) == 33


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    connections = 0

    def get_request(self):
        request = super().get_request()
        type(self).connections += 1
        return request


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the stdlib's name
        body = b"a,b\n1,2\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/csv")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Places:
    """The folders, the victim file and the local server every case refers to."""

    def __init__(self, workspace: Path, outside: Path):
        self.workspace, self.outside = workspace.resolve(), outside.resolve()
        self.home = self.outside / "home"
        self.home.mkdir(exist_ok=True)
        self.victim = self.outside / "victim.txt"
        self.victim.write_text("keep me")
        (self.outside / "tree").mkdir(exist_ok=True)
        (self.outside / "tree" / "leaf.txt").write_text("leaf")
        (self.workspace / "src.txt").write_text("source")
        self.server = _Server(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.port = self.server.server_address[1]

    def environ(self) -> dict[str, str]:
        return {"OUTSIDE": str(self.outside), "WS": str(self.workspace), "VICTIM": str(self.victim),
                "PORT": str(self.port), "HOME": str(self.home)}

    def fill(self, text: str) -> str:
        return text.replace("{OUT}", str(self.outside)).replace("{HOME}", str(self.home)).replace(
            "{VICTIM}", str(self.victim)).replace("{WS}", str(self.workspace)).replace("{PORT}", str(self.port))

    def state(self) -> tuple:
        """Everything a case could change: the files outside (names, sizes, modes; not what a kernel started with
        this HOME keeps in ``~/.ipython``) and the server's connections."""
        files = sorted((str(p.relative_to(self.outside)), p.is_symlink() or p.stat().st_size, p.lstat().st_mode)
                       for p in self.outside.rglob("*")
                       if not any(part.startswith(".") for part in p.relative_to(self.outside).parts))
        return files, self.server.connections

    def changed_from(self, before: tuple, within: float = 10.0) -> tuple:
        """The state once it differs from ``before``, or as it is after ``within`` seconds: the server counts a
        connection when its own thread accepts it, which can come after the client's connect has returned."""
        deadline = time.monotonic() + within
        while (now := self.state()) == before and time.monotonic() < deadline:
            time.sleep(0.05)
        return now

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def make_places(workspace: Path, outside: Path, monkeypatch) -> Places:
    places = Places(workspace, outside)
    for name, value in places.environ().items():
        monkeypatch.setenv(name, value)
    return places
