"""A kernel's channels over a Jupyter gateway's websocket, with the surface of a jupyter_client client.

A gateway (Jupyter Kernel Gateway, Enterprise Gateway, a Jupyter Server) carries every channel of
a kernel over one websocket, ``/api/kernels/<id>/channels``, as JSON messages tagged with their
``channel``. The messages themselves are jupyter_client's (`jupyter_client.session.Session` builds
them); the connection is websocket-client's, as in jupyter_server's own ``GatewayKernelClient``.
That client is not used directly because its stdin channel sends replies without their channel tag
(the server then routes them to shell), and its queues cannot be polled.

`KernelInterpreter` polls a client's ``shell``, ``iopub`` and ``stdin`` channel sockets with a
``zmq.Poller`` and reads them with ``msg_ready()``/``get_msg()``. So a reader thread puts each
message arriving on the websocket into an in-process zmq pair per channel: each channel here has a
real ``socket`` to poll, and the interpreter works unchanged.
"""

from __future__ import annotations

import itertools
import json
import logging
import queue
import threading
from typing import Any

import websocket
import zmq
from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session

log = logging.getLogger(__name__)

CHANNELS = ("shell", "iopub", "stdin", "control")
_ids = itertools.count()


class WebsocketChannel:
    """One channel: messages in through an in-process zmq pair (pollable), out through the websocket."""

    def __init__(self, name: str, client: "WebsocketKernelClient", context: zmq.Context):
        self.name = name
        self.client = client
        address = f"inproc://deepagent-gateway-{id(client)}-{name}-{next(_ids)}"
        self.socket = context.socket(zmq.PAIR)  # read by the thread using the client
        self.socket.bind(address)
        self._feed = context.socket(zmq.PAIR)  # written by the reader thread only
        self._feed.connect(address)

    def put(self, msg: dict[str, Any]) -> None:
        self._feed.send(json.dumps(msg, default=json_default).encode())

    def msg_ready(self) -> bool:
        return bool(self.socket.poll(0))

    def get_msg(self, block: bool = True, timeout: float | None = None) -> dict[str, Any]:
        wait = 0 if not block else (-1 if timeout is None else int(timeout * 1000))
        if not self.socket.poll(wait):
            raise queue.Empty
        return json.loads(self.socket.recv())

    def send(self, msg: dict[str, Any]) -> None:
        self.client.send(self.name, msg)

    def close(self) -> None:
        self._feed.close(linger=0)
        self.socket.close(linger=0)


class WebsocketKernelClient:
    """The parts of a ``BlockingKernelClient`` that `Kernel` and `KernelInterpreter` use, over a websocket."""

    def __init__(self, ws_url: str, headers: dict[str, str], context: zmq.Context, timeout: float = 30.0):
        self.ws_url = ws_url
        self.headers = headers
        self.timeout = timeout
        self.session = Session(username="deepagent")  # the gateway signs what it forwards
        self.channels = {name: WebsocketChannel(name, self, context) for name in CHANNELS}
        self.shell_channel, self.iopub_channel = self.channels["shell"], self.channels["iopub"]
        self.stdin_channel, self.control_channel = self.channels["stdin"], self.channels["control"]
        self.websocket: websocket.WebSocket | None = None
        self.closed_reason: str | None = None
        self._reader: threading.Thread | None = None
        self._stopping = False

    # ------------------------------------------------------------ connection
    def start_channels(self, **_ignored: Any) -> None:
        self.websocket = websocket.create_connection(
            self.ws_url, header=[f"{key}: {value}" for key, value in self.headers.items()],
            timeout=self.timeout, enable_multithread=True,
        )
        self.websocket.settimeout(None)
        self._reader = threading.Thread(target=self._read, name="deepagent-gateway-channels", daemon=True)
        self._reader.start()

    @property
    def connected(self) -> bool:
        return self._reader is not None and self._reader.is_alive() and self.closed_reason is None

    def _read(self) -> None:
        try:
            while not self._stopping:
                raw = self.websocket.recv()
                if not raw:
                    break
                msg = json.loads(raw)
                channel = self.channels.get(msg.get("channel"))
                if channel is not None and not self._stopping:
                    channel.put(msg)
            self.closed_reason = "the gateway closed the kernel's websocket"
        except Exception as exc:  # the connection dropped, or stop_channels closed it
            self.closed_reason = f"the kernel's websocket closed: {exc or type(exc).__name__}"

    def stop_channels(self) -> None:
        self._stopping = True
        if self.websocket is not None:
            try:
                self.websocket.close(timeout=1)
            except Exception:  # a socket already broken cannot be closed cleanly: it is gone either way
                log.debug("closing a gateway websocket failed", exc_info=True)
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=5)
        for channel in self.channels.values():
            channel.close()

    # ------------------------------------------------------------ messages
    def send(self, channel: str, msg: dict[str, Any]) -> None:
        msg = dict(msg, channel=channel, buffers=[])
        self.websocket.send(json.dumps(msg, default=json_default))

    def _request(self, channel: str, msg_type: str, content: dict[str, Any]) -> str:
        msg = self.session.msg(msg_type, content)
        self.send(channel, msg)
        return msg["header"]["msg_id"]

    def execute(self, code: str, silent: bool = False, store_history: bool = True,
                user_expressions: dict | None = None, allow_stdin: bool | None = None,
                stop_on_error: bool = True) -> str:
        return self._request("shell", "execute_request", {
            "code": code, "silent": silent, "store_history": store_history,
            "user_expressions": user_expressions or {}, "allow_stdin": bool(allow_stdin),
            "stop_on_error": stop_on_error,
        })

    def kernel_info(self) -> str:
        return self._request("shell", "kernel_info_request", {})

    def input(self, string: str) -> None:
        self._request("stdin", "input_reply", {"value": string})
