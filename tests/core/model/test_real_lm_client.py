"""The real LM client path: dspy.LM("openai/...") against a local OpenAI-compatible server.

Only the model is a stand-in: DSPy's own client sends real HTTP requests to a stub
on 127.0.0.1 that answers like an OpenAI chat-completions endpoint.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dspy
import pytest

from deepagent_magics import DeepAgent

STEPS = [
    {"reasoning": "Read the notebook variable.", "code": "doubled = [2 * x for x in numbers]\nprint(doubled)"},
    {"reasoning": "Submit the sum.", "code": "SUBMIT(result=str(sum(doubled)))"},
]


def chat_adapter_text(fields: dict[str, str]) -> str:
    return "".join(f"[[ ## {name} ## ]]\n{value}\n\n" for name, value in fields.items()) + "[[ ## completed ## ]]"


class StubOpenAI(BaseHTTPRequestHandler):
    steps: list[dict[str, str]] = []
    requests: list[dict] = []
    headers_seen: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body})
        type(self).headers_seen.append(self.headers)  # names are case-insensitive (a streamed call sends them lower-case)
        step = type(self).steps.pop(0)
        payload = {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "stub"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": chat_adapter_text(step)}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }
        if body.get("stream"):  # as every OpenAI-compatible server: the answer as server-sent events
            choice = {"index": 0, "delta": payload["choices"][0]["message"], "finish_reason": "stop"}
            events = [dict(payload, object="chat.completion.chunk", choices=[choice]), "[DONE]"]
            data = "".join(f"data: {json.dumps(e) if isinstance(e, dict) else e}\n\n" for e in events).encode()
        else:
            data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if body.get("stream") else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def stub_server():
    StubOpenAI.steps = [dict(step) for step in STEPS]
    StubOpenAI.requests = []
    StubOpenAI.headers_seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), StubOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_an_openai_compatible_server_drives_a_run_to_submit(stub_server, tmp_path):
    lm = dspy.LM("openai/stub-model", api_base=stub_server, api_key="sk-local-test", cache=False, num_retries=0)
    agent = DeepAgent(lm=lm, workspace=tmp_path)
    namespace = {"numbers": [1, 2, 3]}

    run = agent.run("Double the numbers and add them up", namespace)

    assert run.status == "finished", run.error
    assert run.result == "12"
    assert namespace["doubled"] == [2, 4, 6]
    assert len(StubOpenAI.requests) == 2
    assert all(request["path"].endswith("/chat/completions") for request in StubOpenAI.requests)
    first = StubOpenAI.requests[0]["body"]
    assert first["model"] == "stub-model"
    assert "Double the numbers" in json.dumps(first["messages"])
    assert run.usage.lm_calls == 2 and run.usage.input_tokens == 200 and run.usage.output_tokens == 40
    assert "sk-local-test" not in json.dumps(run.to_dict())
