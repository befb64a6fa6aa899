"""`--lm local`: a llama.cpp server inside this process, and DSPy's own OpenAI-compatible client talking to it.

``--lm local`` serves the bundled model (`local_weights`), ``--lm local:PATH.gguf`` any GGUF file.
The server is `xllamacpp`'s (the ``local`` extra): llama.cpp's own OpenAI-compatible HTTP server,
run on threads of this process and listening on 127.0.0.1 only. One server per model file per
process, started by the first run that asks and reused by every later one; it stops when the
process ends (`stop_all` at exit), so nothing is left running. Each process picks a free port of
its own (``DEEPAGENT_LOCAL_PORT`` pins one) and a random API key, so two notebooks on one machine
share nothing by accident and no other program can use a notebook's model unasked.

The client is ``dspy.LM("openai/<model>", api_base=..., api_key=...)`` at temperature 0 with DSPy's
cache off (each run really asks the model). The server's context size is known to the agent: the
LM carries its input window as ``deepagent_context_window`` (context size less the reply's
`MAX_TOKENS`), which compaction reads instead of LiteLLM's price list.

Each run's prompt is kept. A step's request is the previous step's with the newest step added
(`caching`), and llama.cpp reads only what follows the longest prefix it already holds: in its one
slot, or in its prompt cache in RAM (`PROMPT_CACHE_MIB`), where the slot's prompt is saved whenever
another request (an ``llm_query``, another run's step) takes the slot. llama.cpp's own default keeps
the slot without saving for any request whose prompt shares a tenth of the slot's; two runs share
their instructions, so one run's step overwrote the other's prompt, whose next step then read its
task and history again (`slot_params` turns that off). DSPy's client cannot send llama.cpp's
``id_slot``, so runs are not pinned to slots; the prompt cache keeps each one (``bench/local_model.py``
measures it).

Threads: on the 2-core machines this was measured on, 1 thread generating and 2 reading the
prompt were fastest (2 generating threads were 4 times slower); in general, half the CPUs
generate and all of them read.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import socket
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .local_weights import INSTALL_HINT, MODEL_NAME, LocalModelError, bundled_model, check_gguf

LOCAL = "local"
CONTEXT = 16_384  # tokens the server holds (the model was trained on 32,768); DEEPAGENT_LOCAL_CONTEXT changes it
MAX_TOKENS = 2_000  # tokens of one reply
PORT_ENV = "DEEPAGENT_LOCAL_PORT"
CONTEXT_ENV = "DEEPAGENT_LOCAL_CONTEXT"
KV_BYTES_PER_TOKEN = 32 << 10  # a generous KV-cache estimate for small models (the bundled one needs 28 KiB)
OVERHEAD = 256 << 20  # compute buffers, the HTTP server, the prompt cache's first entries
PROMPT_CACHE_MIB = 1024  # llama.cpp keeps earlier prompts for reuse; its default (8 GiB) is a lot on a laptop


def is_local(spec: Any) -> bool:
    """Whether an LM spec names the local server (``local`` or ``local:PATH.gguf``)."""
    return isinstance(spec, str) and (spec.strip() == LOCAL or spec.strip().startswith(LOCAL + ":"))


def local_lm(spec: str = LOCAL) -> dspy.LM:
    """The LM for ``spec``: DSPy's OpenAI client on this process's server for that model (started if need be)."""
    return serve(model_file(spec)).lm


def model_file(spec: str) -> Path:
    """The GGUF file ``spec`` names: the bundled model (joined and verified) or the user's file (checked)."""
    spec = spec.strip()
    if spec == LOCAL:
        return bundled_model()
    path = spec[len(LOCAL) + 1:].strip()
    if not path:
        raise LocalModelError("--lm local: needs a file after the colon, e.g. local:model.gguf (or plain local)")
    return check_gguf(path)


@dataclass
class LocalServer:
    """One llama.cpp server of this process: its model file, address, context size and API key."""

    path: Path
    url: str  # http://127.0.0.1:PORT
    context: int
    key: str
    seconds: float  # how long the model took to load
    handle: Any = field(repr=False, default=None)  # the xllamacpp.Server; dropping it stops the server
    _lm: Any = field(repr=False, default=None)

    @property
    def name(self) -> str:
        return MODEL_NAME if self.path.name.startswith(MODEL_NAME) else self.path.stem

    @property
    def lm(self) -> dspy.LM:
        if self._lm is None:
            import dspy  # here: naming the local model (`is_local`) loads no model library

            lm = dspy.LM(f"openai/{self.name}", api_base=f"{self.url}/v1", api_key=self.key,
                         temperature=0.0, max_tokens=MAX_TOKENS, cache=False)
            lm.deepagent_context_window = max(1, self.context - MAX_TOKENS)
            self._lm = lm
        return self._lm

    def stop(self) -> None:
        """Stop the server (llama.cpp's destructor ends its loop and joins its threads)."""
        self.handle = None


_servers: dict[Path, LocalServer] = {}
_lock = threading.Lock()


def serve(path: Path) -> LocalServer:
    """This process's server for ``path``, started on first use."""
    with _lock:
        server = _servers.get(path)
        if server is None or server.handle is None:
            server = _servers[path] = start(path)
        return server


def running() -> list[LocalServer]:
    with _lock:
        return [server for server in _servers.values() if server.handle is not None]


def stop_all() -> None:
    """Stop every server of this process (registered to run at exit)."""
    with _lock:
        servers, _ = list(_servers.values()), _servers.clear()
    for server in servers:
        server.stop()


atexit.register(stop_all)


def start(path: Path, port: int | None = None, context: int | None = None) -> LocalServer:
    """Start a server for ``path``: each problem (no extra, a port in use, too little memory, a file
    llama.cpp refuses) is a `LocalModelError` of one line."""
    xllamacpp = _xllamacpp()
    port = _port() if port is None else port
    context = _context() if context is None else context
    check_memory(path, context)
    key = secrets.token_hex(16)
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.model_alias = {MODEL_NAME if path.name.startswith(MODEL_NAME) else path.stem}
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = context
    params.api_keys = [key]
    params.ui = False
    params.verbosity = 0
    slot_params(params)
    params.cpuparams.n_threads, params.cpuparams_batch.n_threads = threads()
    print(f"deepagent: starting the local model {path.name} ({path.stat().st_size / 1e9:.1f} GB) …",
          file=sys.stderr, flush=True)
    began = time.monotonic()
    try:
        handle = xllamacpp.Server(params)
    except Exception as exc:  # llama.cpp says only "Failed to init server"
        if port and not port_free(port):
            raise LocalModelError(f"port {port} on 127.0.0.1 is in use: unset {PORT_ENV} or pick another") from None
        raise LocalModelError(f"llama.cpp could not load {path} (a damaged or unsupported GGUF file?): "
                              f"{str(exc).strip() or type(exc).__name__}") from None
    url = handle.listening_address.rstrip("/")
    seconds = time.monotonic() - began
    server = LocalServer(path, url, served_context(url, key) or context, key, seconds, handle)
    print(f"deepagent: the local model is ready on {url} ({server.context:,} tokens of context, "
          f"loaded in {seconds:.1f} s)", file=sys.stderr, flush=True)
    return server


def slot_params(params: Any) -> None:
    """One slot, and a prefix for every request from the prompt cache (see the module docstring)."""
    params.n_parallel = 1  # one request at a time, as before
    params.cache_prompt = True  # a request reads only what follows the longest prefix already read
    params.cache_ram_mib = PROMPT_CACHE_MIB  # prompts the slot moved on from, for their runs' next steps
    params.slot_prompt_similarity = 0.0  # no guessing: the slot's prompt is saved, the best cached prefix loaded


def threads() -> tuple[int, int]:
    """Threads generating and threads reading the prompt: half the CPUs this process may use, and all."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, cpus // 2), max(1, cpus)


def served_context(url: str, key: str) -> int | None:
    """The context size the server really holds (llama.cpp may fit it to memory), from ``/v1/models``."""
    request = urllib.request.Request(f"{url}/v1/models", headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            models = json.loads(response.read())
        value = models["data"][0]["meta"]["n_ctx"]
        return int(value) if value else None
    except Exception:  # an older server without the field: the requested size stands
        return None


def check_memory(path: Path, context: int) -> None:
    """Refuse to start when the model, its KV cache and some room plainly do not fit in free memory."""
    available = available_memory()
    need = path.stat().st_size + context * KV_BYTES_PER_TOKEN + OVERHEAD
    if available is not None and available < need:
        raise LocalModelError(f"not enough memory for the local model: it needs about {need / 1e9:.1f} GB, "
                              f"{available / 1e9:.1f} GB is available (close something, or lower "
                              f"{CONTEXT_ENV}, now {context:,})")


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux's MemAvailable), or None when unknown."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _port() -> int:
    """0 (a free port of the system's choosing), or the one ``DEEPAGENT_LOCAL_PORT`` pins, if it is free."""
    value = os.environ.get(PORT_ENV, "").strip()
    if not value:
        return 0
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise LocalModelError(f"{PORT_ENV}={value!r} is not a port number (1-65535)")
    if not port_free(int(value)):
        raise LocalModelError(f"port {value} on 127.0.0.1 is in use: unset {PORT_ENV} or pick another")
    return int(value)


def _context() -> int:
    value = os.environ.get(CONTEXT_ENV, "").strip()
    if not value:
        return CONTEXT
    if not value.isdigit() or int(value) <= MAX_TOKENS:
        raise LocalModelError(f"{CONTEXT_ENV}={value!r} must be a number of tokens above {MAX_TOKENS:,}")
    return int(value)


def _xllamacpp() -> Any:
    try:
        import xllamacpp
    except ImportError:
        raise LocalModelError(f"--lm local needs llama.cpp's server (xllamacpp): {INSTALL_HINT}") from None
    return xllamacpp
