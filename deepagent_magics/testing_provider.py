"""A local OpenAI-compatible chat-completions server that plays a script: for tests, yours and ours.

A scripted LM (`testing.ScriptedLM`) stands in for the whole LM client. This stands in
only for the provider: DSPy's real client (LiteLLM) sends real HTTP requests to
127.0.0.1 and gets back what a provider might send, including what real providers
send that goes wrong: malformed replies, a reply cut off at the token limit, a 429
with ``Retry-After``, a 500, a stall, a dropped connection, a context-length error.
Replies can stream (server-sent events, in chunks with pauses).

    with FakeProvider([Reply.fields(reasoning="...", code="SUBMIT(result=1)")]) as provider:
        lm = dspy.LM("openai/fake", api_base=provider.url, api_key="sk-local", cache=False)

Like a real provider, it ends a reply at the first of the request's ``stop`` sequences, which
it leaves out (``honours_stop=False`` sends every reply whole). Every request the server
received is kept in ``provider.requests`` (the JSON body, the path and the headers). When the script runs out, the server answers 500 with a message
saying so, so a test that expected fewer calls fails loudly instead of hanging.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterable


def adapter_text(fields: dict[str, Any]) -> str:
    """``fields`` as DSPy's ChatAdapter writes an answer: ``[[ ## name ## ]]`` sections, then completed."""
    return "".join(f"[[ ## {name} ## ]]\n{value}\n\n" for name, value in fields.items()) + "[[ ## completed ## ]]"


@dataclass
class Reply:
    """One scripted response.

    Args:
        content: the assistant message's text.
        finish_reason: ``stop``, or ``length`` for a reply cut off at the token limit.
        status: the HTTP status; not 200 sends ``error`` as an OpenAI error body.
        error: the error body's message (with ``error_type`` and ``error_code``).
        headers: extra response headers (``{"Retry-After": "1"}``).
        delay: seconds to wait before answering (a stall, for client timeouts).
        reset: drop the connection without answering (a connection reset).
        chunk: characters per streamed chunk when the request asks to stream.
        pause: seconds between streamed chunks.
        usage: the usage block (prompt, completion and cached tokens).
        cut_after: when streaming, drop the connection after this many chunks (a stream cut off midway).
        ignore_stream: answer a request to stream with one plain JSON body (as some servers do).
        body: a raw response body sent as it is with ``status`` (an HTML page from a proxy).
    """

    content: str = ""
    finish_reason: str = "stop"
    status: int = 200
    error: str = ""
    error_type: str = "invalid_request_error"
    error_code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    reset: bool = False
    chunk: int = 16
    pause: float = 0.0
    usage: dict[str, Any] = field(default_factory=lambda: {"prompt_tokens": 100, "completion_tokens": 20,
                                                             "total_tokens": 120})
    cut_after: int | None = None
    ignore_stream: bool = False
    body: str | None = None

    @classmethod
    def fields(cls, **fields: Any) -> "Reply":
        """A well-formed answer in DSPy's ChatAdapter format (``Reply.fields(reasoning=..., code=...)``)."""
        return cls(content=adapter_text(fields))

    @classmethod
    def failure(cls, status: int, message: str, **kwargs: Any) -> "Reply":
        return cls(status=status, error=message, **kwargs)


class FakeProvider:
    """Serve ``script`` (Replies, or dicts of fields) on 127.0.0.1; ``url`` is the ``api_base``."""

    def __init__(self, script: Iterable[Reply | dict[str, Any] | str] = (), honours_stop: bool = True):
        self.script: list[Reply] = [_as_reply(item) for item in script]
        self.honours_stop = honours_stop
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def add(self, *items: Reply | dict[str, Any] | str) -> None:
        with self._lock:
            self.script.extend(_as_reply(item) for item in items)

    def start(self) -> "FakeProvider":
        if self._thread is None:
            self._thread = threading.Thread(target=self._server.serve_forever, name="fake-provider", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "FakeProvider":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _next(self, request: dict[str, Any]) -> Reply | None:
        with self._lock:
            self.requests.append(request)
            reply = self.script.pop(0) if self.script else None
        return _stopped(reply, request["body"]) if reply is not None and self.honours_stop else reply


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (its timeout) while a stalled reply was pending is no error of the server's."""
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def _as_reply(item: Reply | dict[str, Any] | str) -> Reply:
    if isinstance(item, Reply):
        return item
    if isinstance(item, dict):
        return Reply.fields(**item)
    return Reply(content=str(item))


def _stopped(reply: Reply, body: dict[str, Any]) -> Reply:
    """``reply`` ended where a provider ends it: before the first of the request's stop sequences (OpenAI's
    ``stop``, Anthropic's ``stop_sequences``), which is not sent."""
    stops = body.get("stop") or body.get("stop_sequences") or []
    stops = [stops] if isinstance(stops, str) else [stop for stop in stops if stop]
    found = [at for at in (reply.content.find(stop) for stop in stops) if at >= 0]
    if not found or reply.status != 200:
        return reply
    return replace(reply, content=reply.content[:min(found)], finish_reason="stop")


def _handler(provider: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            reply = provider._next({"path": self.path, "body": body, "headers": dict(self.headers)})
            if reply is None:
                reply = Reply.failure(500, "the fake provider's script has no more replies", error_type="server_error")
            if reply.delay:
                time.sleep(reply.delay)
            if reply.reset:
                self._reset()
                return
            anthropic = self.path.rstrip("/").endswith("/messages")  # Anthropic's Messages API
            if reply.body is not None:
                self._send_raw(reply.status, reply.body.encode(), reply.headers)
            elif reply.status != 200:
                error = {"message": reply.error, "type": reply.error_type, "code": reply.error_code}
                payload = {"type": "error", "error": error} if anthropic else {"error": error}
                self._send_json(reply.status, payload, reply.headers)
            elif anthropic and body.get("stream") and not reply.ignore_stream:
                self._stream_events(reply, _anthropic_events(body, reply))
            elif anthropic:
                self._send_json(200, _anthropic_message(body, reply), reply.headers)
            elif body.get("stream") and not reply.ignore_stream:
                self._stream(body, reply)
            else:
                self._send_json(200, _completion(body, reply), reply.headers)

        def _reset(self) -> None:
            # RST instead of FIN: the client sees "connection reset by peer".
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True

        def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
            self._send_raw(status, json.dumps(payload).encode(), {"Content-Type": "application/json", **headers})

        def _send_raw(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            headers = {"Content-Type": "text/html", **headers}
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _open_event_stream(self, reply: Reply) -> None:
            """The headers of a server-sent-events answer (OpenAI's and Anthropic's streams alike)."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.close_connection = True

        def _stream(self, body: dict[str, Any], reply: Reply) -> None:
            self._open_event_stream(reply)
            text, size = reply.content, max(1, reply.chunk)
            pieces = [text[i:i + size] for i in range(0, len(text), size)] or [""]
            for index, piece in enumerate(pieces):
                if reply.cut_after is not None and index >= reply.cut_after:
                    self._reset()
                    return
                delta = {"role": "assistant", "content": piece} if index == 0 else {"content": piece}
                self._event(_chunk(body, delta, None))
                if reply.pause:
                    time.sleep(reply.pause)
            last = _chunk(body, {}, reply.finish_reason)
            if (body.get("stream_options") or {}).get("include_usage"):
                last["usage"] = reply.usage
            self._event(last)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def _stream_events(self, reply: Reply, events: Iterable[tuple[str, dict[str, Any], bool]]) -> None:
            self._open_event_stream(reply)
            for name, payload, pause in events:
                self.wfile.write(f"event: {name}\ndata: ".encode() + json.dumps(payload).encode() + b"\n\n")
                self.wfile.flush()
                if pause and reply.pause:
                    time.sleep(reply.pause)

        def _event(self, payload: dict[str, Any]) -> None:
            self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
            self.wfile.flush()

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                     "message": {"role": "assistant", "content": reply.content}}],
        "usage": reply.usage,
    }


def _chunk(body: dict[str, Any], delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


# ---------------------------------------------------------------- Anthropic's Messages API
# A request to ``.../messages`` (``dspy.LM("anthropic/...", api_base=provider.url)``) is
# answered in Anthropic's format; ``Reply.usage`` may give OpenAI's names (mapped) or
# Anthropic's own (``cache_read_input_tokens``, ``cache_creation_input_tokens``).
def anthropic_usage(usage: dict[str, Any]) -> dict[str, Any]:
    if "input_tokens" in usage:
        return dict(usage)
    cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    return {"input_tokens": int(usage.get("prompt_tokens") or 0) - cached,
            "output_tokens": int(usage.get("completion_tokens") or 0),
            "cache_read_input_tokens": cached, "cache_creation_input_tokens": 0}


def _stop_reason(reply: Reply) -> str:
    return {"length": "max_tokens", "stop": "end_turn"}.get(reply.finish_reason, reply.finish_reason)


def _anthropic_message(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model", "fake"),
            "content": [{"type": "text", "text": reply.content}], "stop_reason": _stop_reason(reply),
            "stop_sequence": None, "usage": anthropic_usage(reply.usage)}


def _anthropic_events(body: dict[str, Any], reply: Reply) -> Iterable[tuple[str, dict[str, Any], bool]]:
    """Anthropic's stream: (event name, data, pause after it)."""
    usage = anthropic_usage(reply.usage)
    start = {"id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model", "fake"),
             "content": [], "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 0}}
    yield "message_start", {"type": "message_start", "message": start}, False
    yield "content_block_start", {"type": "content_block_start", "index": 0,
                                  "content_block": {"type": "text", "text": ""}}, False
    text, size = reply.content, max(1, reply.chunk)
    for at in range(0, len(text), size):
        yield "content_block_delta", {"type": "content_block_delta", "index": 0,
                                      "delta": {"type": "text_delta", "text": text[at:at + size]}}, True
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}, False
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None},
                            "usage": usage}, False  # cumulative, as Anthropic's stream ends
    yield "message_stop", {"type": "message_stop"}, False
