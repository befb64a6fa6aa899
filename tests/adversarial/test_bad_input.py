"""Every user mistake is one line: exactly a UsageError, and nothing ran or stuck that should not have.

IPython prints one line only for an exception whose type is exactly ``UsageError``; any
other exception (a subclass included) is a full traceback. Each case goes through the
real shell (``ip.run_cell``), as a user types it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from deepagent_magics.magics.inputs.interpolation import MAX_INTERPOLATED_CHARS, interpolate
from deepagent_magics.records import runs_dir
from deepagent_magics.testing import ScriptedLM

DONE = [("Done.", "SUBMIT(result='ran')")]


def one_line_error(result) -> str:
    """The cell's error, which must be exactly a UsageError with a one-line message."""
    error = result.error_in_exec or result.error_before_exec
    assert error is not None, "the cell did not fail"
    assert type(error) is UsageError, f"{type(error).__name__} (a traceback): {error}"
    message = str(error)
    assert message.strip() and "\n" not in message.strip(), message
    assert len(message) < 600, message
    return message


@pytest.fixture
def lm(ip):
    ip.user_ns["lm"] = model = ScriptedLM(DONE)
    return model


def run_cell(ip, line: str, body: str = "do it"):
    return ip.run_cell(f"%%deepagent {line}\n{body}")


# ---------------------------------------------------------------- the provider fails

class Provider(ScriptedLM):
    """A provider that fails the way DSPy and LiteLLM do: long, multi-line, with a 'To fix'."""

    message = ("litellm.AuthenticationError: OpenAIException - The api_key client option must be set\n"
               "To fix, set the OPENAI_API_KEY environment variable,\nor pass api_key=... to dspy.LM\n" + "x" * 3000)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(self.message)


@pytest.mark.parametrize("error", [
    Provider.message,
    "",
    "\n\n   \n",
    "a" * 5000,
    "first line\r\nsecond line",
])
def test_a_provider_failure_is_one_line(ip, error):
    lm = Provider(DONE)
    lm.message = error
    ip.user_ns["lm"] = lm
    ip.user_ns["kept"] = "yes"
    message = one_line_error(run_cell(ip, "--lm lm"))
    assert message.startswith("the agent failed") and "_deepagent_run" in message
    assert ip.user_ns["_deepagent_run"].status == "failed" and ip.user_ns["kept"] == "yes"


def test_a_failure_message_carries_no_secret(ip, monkeypatch):
    token = "tok-" + "Zq8x" * 10
    monkeypatch.setenv("SERVICE_TOKEN", token)
    lm = Provider(DONE)
    lm.message = f"401: bad token {token[:20]} (full {token})"
    ip.user_ns["lm"] = lm
    message = one_line_error(run_cell(ip, "--lm lm"))
    assert token[:8] not in message and token[-8:] not in message and "401" in message


# ---------------------------------------------------------------- the workspace

@pytest.mark.parametrize("make", ["file", "under_file", "nul"])
def test_a_workspace_that_cannot_be_a_folder(ip, lm, tmp_path, make):
    (tmp_path / "notes.txt").write_text("a file")
    value = {"file": tmp_path / "notes.txt", "under_file": tmp_path / "notes.txt" / "ws"}.get(make)
    flag = f"--workspace {value}" if value else "--workspace 'a\0b'"
    message = one_line_error(run_cell(ip, f"--lm lm {flag}"))
    assert "workspace" in message
    assert lm.requests == []  # nothing ran
    before = ip.find_line_magic("deepagent_config").__self__.workspace
    one_line_error(ip.run_cell(f"%deepagent_config {flag}"))
    assert ip.find_line_magic("deepagent_config").__self__.workspace == before  # nothing stuck
    assert run_cell(ip, "--lm lm").error_in_exec is None  # the next cell still runs


def test_a_workspace_that_cannot_be_created(ip, lm, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        target = locked / "ws"
        if os.access(locked, os.W_OK):  # root writes anywhere; nobody can make a folder in /proc
            if not Path("/proc/self").is_dir():
                pytest.skip("no unwritable folder to try")
            target = Path("/proc/deepagent-cannot-be-made")
        assert "cannot create" in one_line_error(run_cell(ip, f"--lm lm --workspace {target}"))
        assert lm.requests == []
    finally:
        locked.chmod(0o700)


def test_quoted_workspace_values_lose_their_quotes_and_tilde_expands(ip, lm, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_cell(ip, '--lm lm --workspace "my ws"').error_in_exec is None
    assert (tmp_path / "my ws").is_dir() and not list(tmp_path.glob('"*'))
    assert run_cell(ip, "--lm lm --workspace 'other ws'").error_in_exec is None
    assert (tmp_path / "other ws").is_dir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert run_cell(ip, "--lm lm --workspace ~/tilde-ws").error_in_exec is None
    assert (tmp_path / "home" / "tilde-ws").is_dir() and not (tmp_path / "~").exists()
    ip.run_line_magic("deepagent_config", "--workspace '~/configured ws'")
    assert run_cell(ip, "--lm lm").error_in_exec is None
    assert (tmp_path / "home" / "configured ws").is_dir()


@pytest.mark.parametrize("line", ['--lm "lm', "--lm lm --workspace 'open", '--out "x'])
def test_an_unbalanced_quote_is_one_line(ip, lm, line):
    message = one_line_error(run_cell(ip, line))
    assert "quot" in message
    assert lm.requests == []


@pytest.mark.parametrize("magic", ["deepagent_config --workspace 'x", "deepagent_runs --workspace \"x",
                                   "deepagent_trace 'x", "deepagent_export 'x.ipynb",
                                   "deepagent_prompt --save 'x.json"])
def test_an_unbalanced_quote_in_any_magic_is_one_line(ip, magic):
    one_line_error(ip.run_cell(f"%{magic}"))


# ---------------------------------------------------------------- numbers

@pytest.mark.parametrize("flag", ["--timeout inf", "--timeout nan", "--timeout 1e300", "--timeout -1",
                                  "--timeout 0", "--subagent-timeout nan", "--subagent-timeout inf",
                                  "--subagent-timeout 1e300", "--timeout -inf"])
def test_a_timeout_must_be_a_usable_number_of_seconds(ip, lm, flag):
    message = one_line_error(run_cell(ip, f"--lm lm {flag}"))
    assert flag.split()[0] in message
    assert lm.requests == []
    magics = ip.find_line_magic("deepagent_config").__self__
    before = (magics.timeout, magics.subagent_timeout)
    one_line_error(ip.run_cell(f"%deepagent_config {flag}"))
    assert (magics.timeout, magics.subagent_timeout) == before
    one_line_error(ip.run_cell(f"%deepagent_config --reset {flag}"))
    assert (magics.timeout, magics.subagent_timeout) == before  # --reset did not happen either


def test_a_timeout_set_through_config_traits_is_checked_at_the_cell(ip, lm):
    ip.run_cell("%config DeepAgentMagics.timeout = float('nan')")
    try:
        one_line_error(run_cell(ip, "--lm lm"))
        assert lm.requests == []
    finally:
        ip.run_line_magic("deepagent_config", "--reset")


# ---------------------------------------------------------------- --out

@pytest.mark.parametrize("name", ["__builtins__", "class", "None", "__name__", "1x", "a-b", "print", "len",
                                  "_deepagent_run", "match x"])
def test_out_must_be_a_plain_new_variable_name(ip, lm, name):
    print_before = ip.user_ns.get("print")
    message = one_line_error(run_cell(ip, f"--lm lm --out '{name}'"))
    assert "--out" in message
    assert lm.requests == []
    assert ip.user_ns.get("print") is print_before
    assert ip.run_cell("print('still works')").error_in_exec is None


def test_a_good_out_name_still_works(ip, lm):
    assert run_cell(ip, "--lm lm --out answer").error_in_exec is None
    assert ip.user_ns["answer"] == "ran"


# ---------------------------------------------------------------- {name} interpolation

class BadStr:
    def __str__(self):
        raise RuntimeError("no str for you\nsecond line")


class NotAString:
    def __str__(self):
        return 42


class Counted:
    calls = 0

    def __repr__(self):
        Counted.calls += 1
        return "c"


@pytest.mark.parametrize("value", [BadStr(), NotAString()])
def test_a_value_whose_str_fails_is_one_line(ip, lm, value):
    ip.user_ns["x"] = value
    message = one_line_error(run_cell(ip, "--lm lm", "look at {x}"))
    assert "{x}" in message
    assert lm.requests == []


def test_an_unknown_name_is_one_line(ip, lm):
    assert "{nope}" in one_line_error(run_cell(ip, "--lm lm", "use {nope}"))


def test_a_huge_value_is_rendered_bounded_not_built_whole():
    Counted.calls = 0
    big = [Counted()] * 2_000_000
    text = interpolate("{big}", {"big": big})
    assert Counted.calls < 20_000, f"rendered {Counted.calls} items of 2,000,000"
    assert len(text) <= MAX_INTERPOLATED_CHARS + 200 and "big" in text
    nested = {"k": [list(range(10))] * 1_000_000, "s": {1, 2}}
    assert len(interpolate("{nested}", {"nested": nested})) <= MAX_INTERPOLATED_CHARS + 200
    long = "y" * 50_000_000
    assert len(interpolate("{long}", {"long": long})) <= MAX_INTERPOLATED_CHARS + 200


@pytest.mark.parametrize("value", [[1, 2, 3], (1,), (), {"a": [1, {"b": 2}]}, {1, 2}, set(), frozenset({3}),
                                   "plain text", 3.5, None, [["x"], ("y", "z")]])
def test_small_values_read_as_str_would(value):
    assert interpolate("{v}", {"v": value}) == str(value)


# ---------------------------------------------------------------- records the agent planted

PLANTED = {
    "not_json.json": "{not json",
    "a_list.json": "[1, 2, 3]",
    "steps_text.json": json.dumps({"id": "steps-text", "steps": "oops"}),
    "bad_fields.json": json.dumps({"id": "bad-fields", "status": ["x"], "task": {"a": 1}, "started_at": "yesterday",
                                   "usage": [1], "usage_total": {"input_tokens": "many", "cost": "free"},
                                   "steps": [7, {"index": "one", "children": 5, "output": {"o": 1}},
                                             {"children": [{"id": 3, "steps": [None]}, "junk"]}],
                                   "todos": "none", "tool_calls": {"a": 1}, "config": "cfg",
                                   "files_written": 5, "orphans": {"x": 1}, "result": {"r": [1]}}),
    "huge_numbers.json": json.dumps({"id": "huge", "status": "finished", "started_at": 1e300, "ended_at": -5,
                                     "usage_total": {"input_tokens": 10**40, "cost": 1e308}, "steps": []}),
    "weird_status.json": json.dumps({"id": "weird-status", "status": "exploded", "steps": [{}]}),
    "deep.json": '{"id": "deep", "steps": [' + '[' * 100_000 + ']' * 100_000 + ']}',
    "nested_children.json": json.dumps({"id": "nest", "steps": [{"children": [
        {"id": "c1", "steps": [{"children": [{"id": "c2", "steps": []}]}]}]}]}),
    "tool_names.json": json.dumps({"id": "tools", "status": "finished", "steps": [],
                                   "tool_calls": [{"name": "class"}, {"name": "import os"}, {"name": "__import__"}]}),
}


@pytest.fixture
def planted(ip, tmp_path):
    folder = runs_dir(tmp_path)
    folder.mkdir(parents=True)
    for name, text in PLANTED.items():
        (folder / name).write_text(text)
    os.mkfifo(folder / "fifo.json")
    (folder / "dir.json").mkdir()
    (folder / "link.json").symlink_to("/dev/zero")
    return folder


def test_runs_lists_around_planted_records(ip, planted):
    with capture_output() as shown:
        result = ip.run_cell("%deepagent_runs")
    assert result.error_in_exec is None, result.error_in_exec
    assert "bad-fields" in shown.stdout and "steps-text" not in shown.stdout


@pytest.mark.parametrize("run_id", ["bad-fields", "huge", "weird-status", "nest", "tools", "steps-text", "not_json",
                                    "a_list", "deep", "fifo", "dir", "link"])
def test_trace_and_export_of_a_planted_record(ip, planted, tmp_path, run_id):
    for line in (f"%deepagent_trace {run_id} --display text", f"%deepagent_trace {run_id} --step 1",
                 f"%deepagent_export {run_id} {tmp_path / 'x.ipynb'}"):
        with capture_output():
            result = ip.run_cell(line)
        if result.error_in_exec is not None:
            one_line_error(result)


def test_the_agent_can_plant_a_record_and_the_magics_survive(ip, tmp_path):
    bad = json.dumps({"id": "planted-by-agent", "steps": [{"children": "x", "index": []}], "usage_total": "lots"})
    target = tmp_path / ".deepagent" / "runs" / "zz.json"  # the tools refuse .deepagent/; the agent's own code can
    ip.user_ns["lm"] = ScriptedLM([("Plant.", f"import os\nos.makedirs({str(target.parent)!r}, exist_ok=True)\n"
                                              f"open({str(target)!r}, 'w').write({bad!r})"), *DONE])
    assert run_cell(ip, "--lm lm").error_in_exec is None
    with capture_output():
        for line in ("%deepagent_runs", "%deepagent_trace zz --display text", "%deepagent_trace zz --step 1",
                     "%deepagent_trace", f"%deepagent_export zz {tmp_path / 'p.ipynb'}"):
            result = ip.run_cell(line)
            assert result.error_in_exec is None, (line, result.error_in_exec)


# ---------------------------------------------------------------- other magics' paths

def test_saving_a_prompt_into_a_missing_folder_or_under_a_file(ip, tmp_path):
    (tmp_path / "file").write_text("x")
    with capture_output():
        assert ip.run_cell(f"%deepagent_prompt --save {tmp_path / 'new' / 'p.json'}").error_in_exec is None
    assert (tmp_path / "new" / "p.json").is_file()
    one_line_error(ip.run_cell(f"%deepagent_prompt --save {tmp_path / 'file' / 'p.json'}"))


def test_export_under_a_file_is_one_line(ip, lm, tmp_path):
    (tmp_path / "file").write_text("x")
    assert run_cell(ip, "--lm lm").error_in_exec is None
    one_line_error(ip.run_cell(f"%deepagent_export {tmp_path / 'file' / 'x.ipynb'}"))


def test_unknown_flags_and_bad_numbers_stay_one_line(ip, lm):
    for line in ("--bogus", "--max-iters x", "--max-iters 0", "--lm nowhere", "--profile ../../etc/passwd"):
        one_line_error(run_cell(ip, line))
    assert lm.requests == []


@pytest.mark.parametrize("flag", ["--pool-size -1", "--pool-size 100000"])
def test_a_pool_size_that_would_start_thousands_of_kernels_is_one_line(ip, lm, flag):
    """A typo'd --pool-size must not start 100000 kernels before anything can stop it."""
    from deepagent_magics.interpreters.pool import pool as pool_module

    made = []
    real = pool_module.KernelPool.__init__

    def recording_init(self, size=pool_module.DEFAULT_SIZE, *args, **kwargs):
        made.append(size)
        real(self, size, *args, **kwargs)

    pool_module.KernelPool.__init__ = recording_init
    try:
        message = one_line_error(ip.run_cell(f"%deepagent_config {flag}"))
        assert "--pool-size" in message and "64" in message, message
        ip.run_cell(f"%config DeepAgentMagics.pool_size = {flag.split()[1]}")  # the traitlet: checked at the cell
        message = one_line_error(run_cell(ip, "--lm lm"))
        assert "--pool-size" in message and "64" in message, message
    finally:
        pool_module.KernelPool.__init__ = real
        ip.run_line_magic("deepagent_config", "--reset")
    assert [size for size in made if size > pool_module.MAX_SIZE] == [] and lm.requests == []


def test_the_python_api_refuses_a_pool_size_beyond_the_bound():
    from deepagent_magics.interpreters.pool.pool import MAX_SIZE, KernelPool

    for size in (-1, MAX_SIZE + 1):
        with pytest.raises(ValueError, match=f"between 0 and {MAX_SIZE}"):
            KernelPool(size=size)
