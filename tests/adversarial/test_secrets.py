"""Secrets never reach records, exports, events, logs or the cell's output, not even in part.

The secrets are the LM configuration's keys and every environment variable whose name
says credential (KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL, AUTH as words of the name).
The hostile agent prints a secret whole, cut by the output limit, sliced, reversed and
base64-encoded (those two encodings are in scope; any other transformation the agent's
code invents is not: that code runs with the user's powers), passes it as tool
arguments that the record cuts short, puts it in todos and file names, and returns it.
No 8-character fragment of a secret (or of its reverse or base64 form) may appear
anywhere the run is shown or kept.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import secrets as _secrets
import string

import pytest
from IPython.utils.capture import capture_output

from deepagent_magics import DeepAgent
from deepagent_magics.core.run.secrets import Redactor, is_secret_name, secret_values
from deepagent_magics.records import load_record, runs_dir
from deepagent_magics.records.export import to_notebook
from deepagent_magics.testing import ScriptedLM

FRAGMENT = 8
ALPHABET = string.ascii_letters + string.digits


def make_secret(length: int) -> str:
    return "".join(_secrets.choice(ALPHABET) for _ in range(length))


def forms(secret: str) -> list[str]:
    """The secret and the encodings in scope, as strings whose every 8-char piece is forbidden."""
    out = [secret, secret[::-1]]
    for offset in range(3):  # base64 of text embedding the secret at any alignment
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * offset + secret.encode()).decode()
            start = 4 * ((offset + 2) // 3)
            stable = (len(secret) + offset) // 3 * 4
            out.append(encoded[start:stable])
    out.append(binascii.hexlify(secret.encode()).decode())
    return [form for form in out if len(form) >= FRAGMENT]


def leaks(text: str, secret: str) -> list[str]:
    found = []
    for form in forms(secret):
        grams = {form[i:i + FRAGMENT] for i in range(len(form) - FRAGMENT + 1)}
        found += [gram for gram in grams if gram in text]
    return found


def json_leaks(text: str, secret: str) -> list[str]:
    """Leaks in a JSON document's strings (its escapes, such as a newline's backslash-n, are not text)."""
    return leaks(strings_of(json.loads(text)), secret)


def strings_of(value, seen=None) -> str:
    """Every string in an event's data (child runs by their public fields)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(strings_of(k) + "\n" + strings_of(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "\n".join(strings_of(v) for v in value)
    if hasattr(value, "to_dict") and hasattr(value, "steps"):
        return json.dumps(value.to_dict(), default=str)
    return repr(value)


def hostile_steps(var: str) -> list[tuple[str, str]]:
    get = f"import os, base64\ns = os.environ[{var!r}]\n"
    return [
        ("Print it whole.", get + "print('token:', s)"),
        ("Cut it at the output limit.", get + "print('x' * (20000 - 14) + s + 'tail')"),
        ("Slices.", get + "print(s[3:15]); print(s[-9:]); print(s[:8]); print(s[1::1][:11])"),
        ("Reversed.", get + "print(s[::-1])"),
        ("Base64.", get + "print(base64.b64encode(s.encode()).decode())\n"
                          "print(base64.b64encode(b'ab' + s.encode()).decode())"),
        ("Tool arguments the record cuts.", get + "write_file('notes.txt', 'k' * 66 + s)\n"
                                                  "read_file('zz' * 30 + s[:-3])\n"
                                                  "grep('q' * 70 + s)"),
        ("A file named after it.", get + "write_file('f-' + s[:20] + '.txt', 'x')"),
        ("Todos.", get + "write_todos([{'content': 'use ' + s, 'status': 'in_progress'}])"),
        ("An error.", get + "raise ValueError('bad key ' + s)"),
        ("A long repr.", get + "print({'a' * 70: s, 'n': list(range(3))})"),
        ("Return it.", get + "SUBMIT(result='the token is ' + s)"),
    ]


@pytest.fixture(params=[8, 12, 40, 100], ids=lambda n: f"len{n}")
def secret(request, monkeypatch):
    value = make_secret(request.param)
    monkeypatch.setenv("SERVICE_TOKEN", value)
    return value


def test_no_fragment_reaches_the_events_the_record_or_the_run(workspace, secret):
    events = []
    run = DeepAgent(lm=ScriptedLM(hostile_steps("SERVICE_TOKEN")), workspace=workspace, max_iters=15).run(
        "leak it", {}, listeners=[events.append])
    assert run.status == "finished" and len(run.steps) == 11
    event_text = "\n".join(f"{e.kind} {strings_of(e.data)}" for e in events)
    assert leaks(event_text, secret) == []
    assert leaks(strings_of(run.to_dict()), secret) == []
    assert leaks(str(run.result), secret) == [] and "[REDACTED]" in str(run.result)
    record_text = (runs_dir(workspace) / f"{run.id}.json").read_text()
    assert json_leaks(record_text, secret) == []
    record = load_record(runs_dir(workspace) / f"{run.id}.json")
    assert leaks(strings_of(to_notebook(record)), secret) == []
    tool_args = [e.data["args"] for e in events if e.kind == "tool_call"]
    assert any("[REDACTED]" in value for args in tool_args for value in args.values())


def test_the_lm_configurations_key_is_a_secret_too(workspace, monkeypatch):
    key = "sk-" + make_secret(45)
    monkeypatch.delenv("SERVICE_TOKEN", raising=False)
    lm = ScriptedLM([
        ("Print the key.", f"print('x' * 19990 + {key!r})"),
        ("Pass it.", f"write_file('k.txt', 'y' * 70 + {key[::-1]!r}[::-1])"),
        ("Done.", f"SUBMIT(result={key[5:30]!r})"),
    ])
    lm.kwargs["api_key"] = key
    events = []
    run = DeepAgent(lm=lm, workspace=workspace).run("key", {}, listeners=[events.append])
    text = "\n".join(strings_of(e.data) for e in events)
    assert leaks(text, key) == []
    assert json_leaks((runs_dir(workspace) / f"{run.id}.json").read_text(), key) == []


def test_the_cell_output_and_the_failure_message_are_scrubbed(ip, workspace, secret):
    ip.user_ns["lm"] = ScriptedLM(hostile_steps("SERVICE_TOKEN"))
    with capture_output() as shown:
        result = ip.run_cell("%%deepagent --lm lm --max-iters 15 --out answer\nleak it")
    assert result.error_in_exec is None
    outputs = shown.stdout + shown.stderr + "\n".join(str(o.data) for o in shown.outputs)
    assert leaks(outputs, secret) == []
    assert "the token is [REDACTED]" in ip.user_ns["answer"]  # what the cell shows and stores
    first = ip.user_ns["_deepagent_run"].id

    class Failing(ScriptedLM):
        def __call__(self, *args, **kwargs):
            raise RuntimeError(f"401 Unauthorized: invalid key {secret}\nTo fix: set a valid key {secret[::-1]}")

    ip.user_ns["bad"] = Failing(["x = 1"])
    with capture_output() as shown:
        result = ip.run_cell("%%deepagent --lm bad\nfail")
    message = str(result.error_in_exec)
    assert "401" in message and leaks(message + shown.stdout + shown.stderr, secret) == []
    ip.run_line_magic("deepagent_export", f"{workspace / 'out.ipynb'}")
    with capture_output() as shown:
        ip.run_line_magic("deepagent_runs", "")
        for step in range(1, 12):
            ip.run_line_magic("deepagent_trace", f"{first} --step {step}")
    assert leaks(shown.stdout, secret) == [] and json_leaks((workspace / "out.ipynb").read_text(), secret) == []


def test_a_listener_failure_logs_no_secret(workspace, secret, caplog):
    def broken(event):
        if event.kind == "step_finished":
            raise RuntimeError(f"listener saw {event.data['output']} and {secret}")

    with caplog.at_level(logging.ERROR):
        DeepAgent(lm=ScriptedLM(hostile_steps("SERVICE_TOKEN")[:2]), workspace=workspace, max_iters=2).run(
            "x", {}, listeners=[broken])
    assert "run listener failed" in caplog.text
    assert leaks(caplog.text, secret) == []


def test_a_planted_record_is_scrubbed_when_read_back(workspace, secret, ip):
    """A record written by someone else (the agent, with write_file) still shows no secret."""
    folder = runs_dir(workspace)
    folder.mkdir(parents=True)
    record = {"format": "deepagent-run/1", "id": "planted", "task": f"t {secret}", "status": "finished",
              "steps": [{"index": 1, "reasoning": secret[::-1], "code": f"k = {secret!r}", "output": secret[2:]}],
              "result": f"r {secret}"}
    (folder / "planted.json").write_text(json.dumps(record))
    loaded = load_record(folder / "planted.json")
    assert leaks(strings_of(loaded), secret) == []
    with capture_output() as shown:
        ip.run_line_magic("deepagent_trace", "planted --step 1")
        ip.run_line_magic("deepagent_runs", "")
        ip.run_line_magic("deepagent_export", f"planted {workspace / 'p.ipynb'}")
    assert leaks(shown.stdout, secret) == [] and json_leaks((workspace / "p.ipynb").read_text(), secret) == []


@pytest.mark.parametrize("name, is_secret", [
    ("SERVICE_TOKEN", True), ("OPENAI_API_KEY", True), ("AWS_SECRET_ACCESS_KEY", True), ("DB_PASSWORD", True),
    ("GOOGLE_CREDENTIALS", True), ("ANTHROPIC_AUTH", True), ("github_token", True), ("MyApiKey", True),
    ("AUTHOR", False), ("KEYBOARD_LAYOUT", False), ("MONKEY_PATH", False), ("TOKENIZERS_PARALLELISM", False),
    ("PATH", False), ("AUTHORITY", False),
])
def test_what_counts_as_a_secret_name(name, is_secret):
    assert is_secret_name(name) is is_secret


def test_secret_values_come_from_names_and_the_lm(monkeypatch):
    environ = {"SERVICE_TOKEN": "abcdefgh1234", "AUTHOR": "Jane Q. Public", "SHORT_KEY": "1"}

    class LM:
        kwargs = {"api_key": "lm-key-0123456789", "headers": {"Authorization": "Bearer hdr-0123456789"}}

    found = secret_values(LM(), environ=environ)
    assert {"abcdefgh1234", "lm-key-0123456789", "hdr-0123456789"} <= found
    assert "Jane Q. Public" not in found and "1" not in found


def test_scrubbing_a_record_again_is_cheap(monkeypatch):
    """A flush rescans only strings it has not seen: the second pass over a big record hits the cache."""
    secret = make_secret(40)
    redactor = Redactor([secret])
    record = {"steps": [{"output": f"line {i} " * 200 + (secret if i == 7 else "")} for i in range(300)]}
    first = redactor(record)
    assert secret not in json.dumps(first) and "[REDACTED]" in first["steps"][7]["output"]
    scans = redactor.scans
    second = redactor(record)
    assert second == first and redactor.scans == scans


@pytest.mark.kernel
def test_a_sub_agent_in_its_own_kernel_leaks_nothing_either(tmp_path, monkeypatch):
    """The child's steps come back from another process; the host's run scrubs them all the same."""
    from deepagent_magics.interpreters.pool import KernelPool

    secret = make_secret(40)
    monkeypatch.setenv("SERVICE_TOKEN", secret)  # the host knows the secret; the child prints it literally
    lm = ScriptedLM(scripts={
        "LEAK-PARENT": [("Delegate.", "r = delegate('LEAK-CHILD: print things')\nprint(r)"),
                        ("Done.", "SUBMIT(result=r)")],
        "LEAK-CHILD": [("Print.", f"s = {secret!r}\nprint('x' * 19990 + s)\nprint(s[::-1])\n"
                                  "write_file('c.txt', 'k' * 70 + s)"),
                       ("Return.", "SUBMIT(result='child says ' + s[4:30])")],
    })
    pool = KernelPool(size=1).warm()
    try:
        events = []
        run = DeepAgent(lm=lm, workspace=tmp_path, pool=pool, timeout=60).run(
            "LEAK-PARENT: go", {}, listeners=[events.append])
    finally:
        pool.stop()
    assert run.status == "finished", run.error
    [child] = run.steps[0].children
    assert child.status == "finished" and len(child.steps) == 2
    text = "\n".join(f"{e.kind} {strings_of(e.data)}" for e in events)
    assert leaks(text, secret) == [] and leaks(strings_of(run.to_dict()), secret) == []
    assert json_leaks((runs_dir(tmp_path) / f"{run.id}.json").read_text(), secret) == []
    assert "[REDACTED]" in child.steps[0].output
