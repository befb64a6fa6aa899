"""interpreters/pool/gateway_channels.py: a kernel's channels over one websocket, each a pollable zmq socket.

Against a real Kernel Gateway see ``tests/interpreters/pool/test_gateway.py``; here the websocket is a stand-in.
"""

from __future__ import annotations

import json
import queue
import time

import pytest
import zmq

from deepagent_magics.interpreters.pool import gateway_channels
from deepagent_magics.interpreters.pool.gateway_channels import CHANNELS, WebsocketKernelClient


class Socket:
    """A websocket: ``incoming`` is what the gateway sends; what the client sends is kept in ``sent``."""

    def __init__(self, url, header, timeout, enable_multithread):
        self.url, self.header, self.timeout, self.multithread = url, header, timeout, enable_multithread
        self.incoming: queue.Queue = queue.Queue()
        self.sent: list[dict] = []
        self.closed = False

    def settimeout(self, timeout):
        self.timeout_after_connect = timeout

    def recv(self):
        item = self.incoming.get()
        if isinstance(item, BaseException):
            raise item
        return item

    def send(self, text):
        self.sent.append(json.loads(text))

    def close(self, timeout=None):
        self.closed = True
        self.incoming.put(ConnectionError("socket closed"))


@pytest.fixture
def client(monkeypatch):
    made = []
    monkeypatch.setattr(gateway_channels.websocket, "create_connection",
                        lambda *args, **kwargs: made.append(Socket(*args, **kwargs)) or made[-1])
    context = zmq.Context()
    client = WebsocketKernelClient("ws://gw/api/kernels/k1/channels", {"Authorization": "token t"}, context,
                                   timeout=12)
    client.start_channels()
    client.ws = made[0]
    yield client
    client.stop_channels()
    context.term()


def arrive(client, msg: dict) -> None:
    client.ws.incoming.put(json.dumps(msg))


def test_the_websocket_is_opened_with_the_headers_and_then_waits_without_a_timeout(client):
    ws = client.ws
    assert ws.url == "ws://gw/api/kernels/k1/channels" and ws.header == ["Authorization: token t"]
    assert ws.timeout == 12 and ws.multithread and ws.timeout_after_connect is None
    assert client.connected


def test_each_message_goes_to_its_channels_pollable_socket(client):
    arrive(client, {"channel": "iopub", "header": {"msg_type": "stream"}, "content": {"text": "hi"}})
    arrive(client, {"channel": "nowhere", "content": {}})
    arrive(client, {"channel": "shell", "header": {"msg_type": "execute_reply"}, "content": {"status": "ok"}})
    poller = zmq.Poller()
    poller.register(client.shell_channel.socket, zmq.POLLIN)
    assert dict(poller.poll(5000))  # the interpreter polls the channel's socket as it polls a real kernel's
    assert client.shell_channel.get_msg(timeout=5)["content"] == {"status": "ok"}
    assert client.iopub_channel.get_msg(timeout=5)["content"] == {"text": "hi"}
    assert not client.stdin_channel.msg_ready() and not client.control_channel.msg_ready()


def test_a_channel_with_nothing_waiting_says_so():
    context = zmq.Context()
    try:
        client = WebsocketKernelClient("ws://x", {}, context)
        assert set(client.channels) == set(CHANNELS)
        assert not client.iopub_channel.msg_ready()
        with pytest.raises(queue.Empty):
            client.iopub_channel.get_msg(block=False)
        with pytest.raises(queue.Empty):
            client.iopub_channel.get_msg(timeout=0.2)
        client.stop_channels()
    finally:
        context.term()


def test_an_execute_request_goes_out_on_shell_with_its_channel_tag(client):
    msg_id = client.execute("print(1)", allow_stdin=True)
    sent = client.ws.sent[-1]
    assert sent["channel"] == "shell" and sent["buffers"] == []
    assert sent["header"]["msg_id"] == msg_id and sent["header"]["msg_type"] == "execute_request"
    assert sent["content"] == {"code": "print(1)", "silent": False, "store_history": True, "user_expressions": {},
                               "allow_stdin": True, "stop_on_error": True}
    assert isinstance(sent["header"]["date"], str)  # a datetime, sent as JSON


def test_an_input_reply_is_tagged_stdin_so_the_gateway_does_not_route_it_to_shell(client):
    client.input("42")
    sent = client.ws.sent[-1]
    assert sent["channel"] == "stdin" and sent["header"]["msg_type"] == "input_reply"
    assert sent["content"] == {"value": "42"}
    client.stdin_channel.send({"header": {}, "content": {}})
    assert client.ws.sent[-1]["channel"] == "stdin"
    client.kernel_info()
    assert client.ws.sent[-1]["header"]["msg_type"] == "kernel_info_request"


def wait_closed(client) -> None:
    deadline = time.monotonic() + 5
    while client.connected and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_gateway_that_closes_the_websocket_is_said(client):
    client.ws.incoming.put("")
    wait_closed(client)
    assert not client.connected and client.closed_reason == "the gateway closed the kernel's websocket"


def test_a_dropped_connection_is_said_with_its_error(client):
    client.ws.incoming.put(ConnectionResetError("reset by peer"))
    wait_closed(client)
    assert client.closed_reason == "the kernel's websocket closed: reset by peer"


def test_stopping_closes_the_websocket_ends_the_reader_and_closes_the_channels(client):
    reader = client._reader
    client.stop_channels()
    assert client.ws.closed and not reader.is_alive()
    assert all(channel.socket.closed for channel in client.channels.values())
