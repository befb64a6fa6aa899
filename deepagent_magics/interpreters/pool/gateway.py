"""Sub-agent kernels on a Jupyter gateway (Kernel Gateway, Enterprise Gateway, a Jupyter Server).

A `Gateway` is where kernels come from when the pool is given one (``KernelPool(gateway=...)``):
its settings are jupyter_server's `GatewayClient` (URL, token, headers, TLS, timeouts, and the
``JUPYTER_GATEWAY_URL``/``JUPYTER_GATEWAY_AUTH_TOKEN`` conventions); kernels are started, interrupted
and shut down through the gateway's REST API (``/api/kernels``) with tornado's HTTP client, and
their channels run over the gateway's websocket (`gateway_channels`). A `GatewayKernel` has the
surface of a local `Kernel`, so the pool, the interpreter, the tool bridge, delegation and the
time limit (interrupt, then shut down through the API) work as they do locally.

No kernel is left on the gateway: every kernel is shut down after its sub-agent, when the pool
stops, and at the host's exit. A host killed with SIGKILL cannot do that; the gateway's own culling
of idle kernels removes them (docs/scale-out.md), and `Gateway.cleanup` removes those a previous
host left where the gateway reports them.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import ssl
import threading
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlparse

from ...errors import UserError
from ...settings import SETTINGS
from .gateway_channels import WebsocketKernelClient
from .gateway_leftovers import forget, remember, sweep
from .kernel_limits import KernelLimits
from .limits import ResourceLimits
from .pooled_kernel import INSTALL, STARTUP_TIMEOUT, Kernel, KernelStartError, shipped_sources, zmq_context

log = logging.getLogger(__name__)

REMOTE_INSTRUCTIONS = (
    "Your kernel runs on a Jupyter gateway, possibly on another machine: its current directory and disk "
    "are not the workspace. Reach the workspace only through the file tools (ls, read_file, write_file, "
    "edit_file, glob, grep), which run on the host."
)
LOCAL_WORKSPACE_SENTENCE = "The current directory is the shared workspace. "
KERNEL_ENV_TAG = "KERNEL_DEEPAGENT_HOST"  # sent with each start: which host started the kernel
_live: set["GatewayKernel"] = set()  # started on a gateway and not yet shut down
_live_lock = threading.Condition()
_starting = 0  # start requests in flight (a pool filler's, at exit)
_exiting = False


class GatewayError(UserError, KernelStartError):
    """The gateway cannot be used (a wrong URL, a refused token, an unknown kernel spec); one line."""


class Gateway:
    """A Jupyter gateway reached at ``url`` with ``token`` (defaults: ``JUPYTER_GATEWAY_URL``,
    ``JUPYTER_GATEWAY_AUTH_TOKEN``); further `GatewayClient` settings as keyword arguments."""

    def __init__(self, url: str | None = None, token: str | None = None, **settings: Any):
        try:
            from jupyter_server.gateway.gateway_client import GatewayClient
        except ImportError:
            raise GatewayError("sub-agents on a gateway need jupyter_server and websocket-client: "
                               "pip install 'deepagent-magics[gateway]'") from None

        url = SETTINGS["gateway_url"].or_env(url)
        if not url:
            raise GatewayError(f"no gateway URL: pass one or set {SETTINGS['gateway_url'].env}")
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise GatewayError(f"gateway URL {url!r} is not an http(s)://host:port URL")
        if token is not None:
            settings["auth_token"] = token
        self.client = GatewayClient(url=url.rstrip("/"), **settings)
        self.url = self.client.url
        self.host_id = f"{os.uname().nodename}:{os.getpid()}"

    # ------------------------------------------------------------ REST
    def request(self, path: str, method: str = "GET", body: Any = None, timeout: float | None = None) -> Any:
        """One REST call with the `GatewayClient`'s headers, TLS and timeouts; the decoded JSON (or None).

        urllib rather than tornado's client: it also works at the host's exit, when asyncio's
        executor (tornado's resolver) is gone. Errors are one-line `GatewayError`s."""
        args = self.client.load_connection_args()
        headers = dict(args.get("headers") or {})
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout or args.get("request_timeout") or 60,
                                        context=self._ssl_context(args)) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 401:
                raise GatewayError(f"the gateway at {self.url} refused the token (HTTP 401); "
                                   "check --gateway-token / JUPYTER_GATEWAY_AUTH_TOKEN") from None
            raise GatewayError(f"the gateway at {self.url} answered {method} {path} with HTTP {exc.code}"
                               f"{_reason(exc)}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise GatewayError(f"cannot reach the gateway at {self.url}: {getattr(reason, 'strerror', None) or reason}") from None
        return json.loads(payload) if payload else None

    def _ssl_context(self, args: dict[str, Any]) -> ssl.SSLContext | None:
        if not self.url.startswith("https"):
            return None
        context = ssl.create_default_context(cafile=args.get("ca_certs"))
        if not args.get("validate_cert", True):
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        if args.get("client_cert"):
            context.load_cert_chain(args["client_cert"], args.get("client_key"))
        return context

    def check(self) -> list[str]:
        """The gateway's kernel spec names; raises `GatewayError` when it cannot be used."""
        specs = self.request(self.client.kernelspecs_endpoint, timeout=10)
        if not isinstance(specs, dict) or "kernelspecs" not in specs:
            raise GatewayError(f"{self.url} does not answer like a Jupyter gateway (no kernelspecs at "
                               f"{self.client.kernelspecs_endpoint})")
        return sorted(specs["kernelspecs"])

    def list_kernels(self) -> list[dict[str, Any]]:
        return self.request(self.client.kernels_endpoint) or []

    def start_kernel(self, kernel_name: str | None, timeout: float) -> str:
        body: dict[str, Any] = {"env": {KERNEL_ENV_TAG: self.host_id}}
        if kernel_name:
            body["name"] = kernel_name
        model = self.request(self.client.kernels_endpoint, "POST", body, timeout=timeout)
        return model["id"]

    def interrupt_kernel(self, kernel_id: str) -> None:
        self.request(f"{self.client.kernels_endpoint}/{kernel_id}/interrupt", "POST", {}, timeout=10)

    def shutdown_kernel(self, kernel_id: str) -> None:
        try:
            self.request(f"{self.client.kernels_endpoint}/{kernel_id}", "DELETE", timeout=10)
        except GatewayError as exc:
            if "HTTP 404" not in str(exc):
                raise

    def ws_url(self, kernel_id: str) -> str:
        base = self.client.ws_url or self.url.replace("http", "ws", 1)
        return f"{base.rstrip('/')}{self.client.kernels_endpoint}/{kernel_id}/channels"

    def headers(self) -> dict[str, str]:
        return dict(self.client.load_connection_args().get("headers") or {})

    def execution_instructions(self, local: str) -> str:
        """What a sub-agent is told about its REPL when its kernel is on this gateway."""
        return local.replace(LOCAL_WORKSPACE_SENTENCE, "") + " " + REMOTE_INSTRUCTIONS

    def kernel(self, kernel_name: str | None = None, limits: ResourceLimits | None = None) -> "GatewayKernel":
        """A kernel not yet started (what the pool starts and hands out), with the ``limits`` that apply there."""
        self.cleanup()
        return GatewayKernel(self, kernel_name, limits)

    def cleanup(self) -> list[str]:
        """Shut down the kernels that hosts killed earlier left on this gateway (once per process)."""
        try:
            return sweep(self)
        except Exception:  # a gateway that cannot be swept now: its own culling removes them (docs/scale-out.md)
            log.debug("sweeping leftover gateway kernels failed", exc_info=True)
            return []

    def __repr__(self) -> str:
        return f"<Gateway {self.url}>"


class GatewayKernel(Kernel):
    """A kernel on a gateway with the surface of a local `Kernel` (``start``, ``client``, ``alive``,
    ``interrupt``, ``kill``, ``close``); ``pid`` is None: the process is the gateway's."""

    remote = True

    def __init__(self, gateway: Gateway, kernel_name: str | None = None,  # noqa: D107 - no local manager
                 limits: ResourceLimits | None = None):
        self.gateway = gateway
        self.kernel_name = kernel_name
        self.kernel_id: str | None = None
        self.client: WebsocketKernelClient | None = None
        self.pid = self.pgid = self.signal_group = None
        self.workspace = None
        self.isolation = {"sandbox": "gateway"}  # confined by the gateway's containers, not by this machine
        self.killed = self.closed = False
        self.started_at: float | None = None
        self.preinstalled: frozenset[str] = frozenset()
        self.dir = None
        self.limits = KernelLimits(limits, "", remote=True) if limits is not None else None  # the rlimits it sets
        self._lock = threading.Lock()

    def start(self, cwd: str | None = None, timeout: float = STARTUP_TIMEOUT) -> "GatewayKernel":
        global _starting
        with _live_lock:
            if _exiting:
                raise GatewayError("the process is exiting")
            _starting += 1
        try:
            self.kernel_id = self.gateway.start_kernel(self.kernel_name, timeout)
        finally:
            with _live_lock:
                _starting -= 1
                if self.kernel_id is not None:
                    _live.add(self)
                    remember(self.gateway, self.kernel_id)
                _live_lock.notify_all()
        if _exiting:  # the exit handler has run: it will not see this one
            self.kill()
            raise GatewayError("the process is exiting")
        self.started_at = time.time()
        try:
            self.client = WebsocketKernelClient(self.gateway.ws_url(self.kernel_id), self.gateway.headers(),
                                                zmq_context(), timeout=timeout)
            self.client.start_channels()
            self._wait_ready(timeout)
            self.run_setup(INSTALL.format(sources=shipped_sources(), host_pid=None, lifeline_fd=None, kernel_dir=None),
                           timeout)
            if self.limits is not None:
                self.run_setup(self.limits.remote_setup(), timeout)
            self._preinstall_dspy_shim(timeout)
        except Exception as exc:
            self.close()
            raise GatewayError(f"kernel {self.kernel_id} on {self.gateway.url} did not start: "
                               f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc
        return self

    def alive(self) -> bool:
        return not self.killed and self.client is not None and self.client.connected

    def exit_code(self) -> int | None:
        return None

    def interrupt(self) -> None:
        """Interrupt the running code through the gateway's API."""
        if self.alive():
            try:
                self.gateway.interrupt_kernel(self.kernel_id)
            except GatewayError:
                log.debug("interrupting gateway kernel %s failed", self.kernel_id, exc_info=True)

    def kill(self) -> None:
        """Shut the kernel down through the gateway's API; safe from any thread."""
        with self._lock:
            first, self.killed = not self.killed, True
        if first and self.kernel_id is not None:
            try:
                self.gateway.shutdown_kernel(self.kernel_id)
            except GatewayError:
                log.warning("could not shut down kernel %s on %s", self.kernel_id, self.gateway.url, exc_info=True)
            with _live_lock:
                _live.discard(self)
                forget(self.kernel_id)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.kill()
        if self.client is not None:
            self.client.stop_channels()

    def log_tail(self, lines: int = 15) -> str:
        reason = self.client.closed_reason if self.client is not None else None
        return reason or ""

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("killed" if self.killed else ("alive" if self.alive() else "dead"))
        return f"<GatewayKernel {self.kernel_id} on {self.gateway.url} {state}>"


def as_gateway(gateway: Any) -> Gateway | None:
    """A `Gateway` from a `Gateway`, a URL, or None (None stays None)."""
    if gateway is None or isinstance(gateway, Gateway):
        return gateway
    if isinstance(gateway, str):
        return Gateway(gateway)
    raise TypeError(f"gateway must be a Gateway or a URL, not {type(gateway).__name__}")


def _reason(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read() or b"{}")
        message = str(body.get("message") or body.get("reason") or "")
    except (ValueError, OSError, AttributeError):
        message = ""
    return f": {message.splitlines()[0]}" if message else ""


@atexit.register
def _shutdown_all() -> None:
    """At the host's exit: shut down every kernel still running on a gateway, including those
    whose start request is in flight (a pool filler's)."""
    global _exiting
    with _live_lock:
        _exiting = True
        _live_lock.wait_for(lambda: _starting == 0, timeout=STARTUP_TIMEOUT)
        kernels = list(_live)
    for kernel in kernels:
        kernel.kill()
