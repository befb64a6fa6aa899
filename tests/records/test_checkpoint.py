"""Checkpoint and resume: the agent's variables (pickled, or replayed from their recorded code), the
threads and todos survive a real kernel restart; bad checkpoints and secrets are handled."""

from __future__ import annotations

import json
import sys

import pytest
from IPython.core.error import UsageError
from tests.kernels import execute, started_kernel

from deepagent_magics import ScriptedLM
from deepagent_magics.core.run import conversations as threads

SECRET = "sk-" + "abcdefghijklmnopqrstuvwx"  # a provider-shaped key, made up (and not written whole here)
STEPS = [
    ("Load and clean", "sales_clean = [r for r in sales if r]\nprint(sales_clean)"),
    ("A lock cannot be pickled", "import threading\nguard = threading.Lock()\nguard_label = 'made by step 2'"),
    ("Keep a key", f"api_token = '{SECRET}'\nnote = 'key {SECRET}'\ndb_password = 'hunter2hunter2'"),
    ("Plan", "write_todos([{'content': 'plot by month', 'status': 'pending'}])"),
    ("Done", "SUBMIT(result='cleaned')"),
]


@pytest.fixture(autouse=True)
def fresh_threads(monkeypatch, _shell):
    monkeypatch.setattr(_shell.magics_manager.registry["DeepAgentMagics"], "runs", [])  # earlier tests' runs
    monkeypatch.setattr(threads, "_threads", {})
    monkeypatch.setattr(threads, "_thread_of_run", {})
    yield
    _shell.magics_manager.registry["DeepAgentMagics"].__dict__.pop("resumed", None)  # no resumed state leaks out


def _restart(ip, monkeypatch):
    """What a kernel restart loses: the namespace, this kernel's runs and threads."""
    core = ip.magics_manager.registry["DeepAgentMagics"]
    monkeypatch.setattr(core, "runs", [])
    monkeypatch.setattr(threads, "_threads", {})
    monkeypatch.setattr(threads, "_thread_of_run", {})
    for name in ("sales_clean", "guard", "guard_label", "api_token", "note", "_deepagent_run"):
        ip.user_ns.pop(name, None)


def test_checkpoint_then_resume_restores_values_replays_the_rest_and_writes_no_secret(ip, tmp_path, monkeypatch, capsys):
    ip.user_ns.update(sales=[1, 0, 2], lm=ScriptedLM(STEPS))
    ip.run_cell_magic("deepagent", "--lm lm --max-depth 0", "load and clean the sales")
    ip.run_line_magic("deepagent_checkpoint", "s1")
    said = capsys.readouterr().out
    assert "Checkpoint 's1'" in said and "to replay" in said and "not saved: api_token" in said
    folder = tmp_path / ".deepagent" / "checkpoints" / "s1"
    for path in folder.iterdir():
        text = path.read_bytes().decode("latin-1")
        assert SECRET not in text and "hunter2hunter2" not in text, path.name
    _restart(ip, monkeypatch)
    asked = []
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or "y")
    ip.run_line_magic("deepagent_resume", "s1")
    said = capsys.readouterr().out
    assert asked == ["Run it to rebuild guard? [y/N] "] and "guard = threading.Lock()" in said
    assert ip.user_ns["sales_clean"] == [1, 2]
    assert type(ip.user_ns["guard"]).__name__ == "lock" and ip.user_ns["guard_label"] == "made by step 2"
    assert "api_token" not in ip.user_ns and "note" not in ip.user_ns
    assert "Resumed 's1'" in said
    ip.user_ns["lm"] = ScriptedLM([("See", "SUBMIT(result=context)")])
    ip.run_cell_magic("deepagent", "--lm lm --max-depth 0 --out seen --continue", "now plot it by month")
    assert "load and clean the sales" in ip.user_ns["seen"] and "sales_clean (list)" in ip.user_ns["seen"]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert list(manifest["todos"]["runs"].values())[0][0]["content"] == "plot by month"


def test_resume_never_overwrites_what_is_in_the_kernel(ip, tmp_path, monkeypatch, capsys):
    ip.user_ns.update(sales=[1, 0, 2], lm=ScriptedLM(STEPS))
    ip.run_cell_magic("deepagent", "--lm lm --max-depth 0", "load and clean the sales")
    ip.run_line_magic("deepagent_checkpoint", "")
    _restart(ip, monkeypatch)
    ip.user_ns["sales_clean"] = "the user's newer value"
    ip.run_line_magic("deepagent_resume", "")
    assert ip.user_ns["sales_clean"] == "the user's newer value"
    assert "not restored: sales_clean: kept the value already in the kernel" in capsys.readouterr().out


def test_saving_again_replaces_the_checkpoint_whole(ip, tmp_path):
    ip.user_ns.update(sales=[1, 0, 2], lm=ScriptedLM(STEPS))
    ip.run_cell_magic("deepagent", "--lm lm --max-depth 0", "load and clean the sales")
    ip.run_line_magic("deepagent_checkpoint", "again")
    ip.user_ns["sales_clean"] = [9]
    ip.run_line_magic("deepagent_checkpoint", "again")
    leftovers = [p.name for p in (tmp_path / ".deepagent" / "checkpoints").iterdir() if p.name != "again"]
    assert leftovers == []
    ip.user_ns.pop("sales_clean")
    ip.run_line_magic("deepagent_resume", "again")
    assert ip.user_ns["sales_clean"] == [9]


def _checkpoint(ip):
    ip.user_ns.update(sales=[1, 0, 2], lm=ScriptedLM(STEPS))
    ip.run_cell_magic("deepagent", "--lm lm --max-depth 0", "load and clean the sales")
    ip.run_line_magic("deepagent_checkpoint", "bad")
    return ip.magics_manager.registry["DeepAgentMagics"].workspace


def _sign(folder, text):
    """A manifest this host signed whatever it says (as a bug, or another version, might write)."""
    from deepagent_magics.records.checkpoint import PURPOSE, place
    from deepagent_magics.records.host_key import mac

    body = text.encode()
    signature = mac(PURPOSE, b"{" + body[1:], place(folder.name)).encode()
    (folder / "manifest.json").write_bytes(b'{"host_mac": "' + signature + b'",' + body[1:])


@pytest.mark.parametrize("damage, message", [
    (lambda folder: (folder / "manifest.json").unlink(), "partial"),
    (lambda folder: (folder / "manifest.json").write_text("{not json"), "signature"),
    (lambda folder: (folder / "manifest.json").write_text(json.dumps({"format": 2})), "signature"),
    (lambda folder: (folder / "manifest.json").write_text(json.dumps([1, 2])), "signature"),
    (lambda folder: (folder / "manifest.json").write_text(json.dumps({"format": 2, "complete": True})), "signature"),
    (lambda folder: _sign(folder, "{not json"), "corrupt"),
    (lambda folder: _sign(folder, json.dumps({"format": 2})), "partial"),
    (lambda folder: _sign(folder, json.dumps({"format": 2, "complete": True})), "corrupt"),
])
def test_a_partial_or_corrupt_checkpoint_is_one_line_and_changes_nothing(ip, monkeypatch, damage, message):
    workspace = _checkpoint(ip)
    from pathlib import Path

    damage(Path(workspace) / ".deepagent" / "checkpoints" / "bad")
    _restart(ip, monkeypatch)
    ip.user_ns["mine"] = 1
    before = dict(ip.user_ns)
    with pytest.raises(UsageError, match=message) as caught:
        ip.run_line_magic("deepagent_resume", "bad")
    assert "\n" not in str(caught.value) and ip.user_ns.keys() == before.keys()


def test_a_damaged_variable_file_is_one_line_and_the_rest_restores(ip, monkeypatch, capsys):
    from pathlib import Path

    workspace = _checkpoint(ip)
    (Path(workspace) / ".deepagent" / "checkpoints" / "bad" / "sales_clean.pkl").write_bytes(b"\x80garbage")
    _restart(ip, monkeypatch)
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    ip.run_line_magic("deepagent_resume", "bad")
    out = capsys.readouterr().out
    assert "not restored: sales_clean: its file changed since this host saved the checkpoint" in out
    assert ip.user_ns["guard_label"] == "made by step 2"


def test_missing_unknown_and_badly_named_checkpoints(ip, monkeypatch):
    core = ip.magics_manager.registry["DeepAgentMagics"]
    monkeypatch.setattr(core, "runs", [])  # a fresh kernel
    core.__dict__.pop("resumed", None)
    with pytest.raises(UsageError, match="nothing to checkpoint yet"):
        ip.run_line_magic("deepagent_checkpoint", "early")
    for line, message in (("nope", "no checkpoint 'nope'"), ("../../etc", "not a checkpoint name"),
                          ("a/b", "not a checkpoint name")):
        with pytest.raises(UsageError, match=message) as caught:
            ip.run_line_magic("deepagent_resume", line)
        assert "\n" not in str(caught.value)


def test_a_variable_whose_package_is_missing_is_named_with_what_to_do(ip, tmp_path, monkeypatch, capsys):
    package = tmp_path / "pkgs"
    package.mkdir()
    (package / "vanishing_pkg_f.py").write_text("class Thing:\n    def __init__(self):\n        self.v = 7\n")
    monkeypatch.syspath_prepend(str(package))
    steps = [("Make", "import vanishing_pkg_f\nthing = vanishing_pkg_f.Thing()\nplain = 5"), ("Done", "SUBMIT(result='ok')")]
    ip.user_ns["lm"] = ScriptedLM(steps)
    ip.run_cell_magic("deepagent", "--lm lm --max-depth 0", "make a thing")
    ip.run_line_magic("deepagent_checkpoint", "pkg")
    _restart(ip, monkeypatch)
    for name in ("thing", "plain"):
        ip.user_ns.pop(name)
    monkeypatch.delitem(sys.modules, "vanishing_pkg_f")
    sys.path.remove(str(package))
    ip.run_line_magic("deepagent_resume", "pkg")
    out = capsys.readouterr().out
    assert "not restored: thing: needs the package 'vanishing_pkg_f'" in out and "pip install vanishing_pkg_f" in out
    assert ip.user_ns["plain"] == 5 and "thing" not in ip.user_ns


# ------------------------------------------------------------------ a real kernel restart
def _execute(client, code, timeout=90):
    cell = execute(client, code, timeout)
    assert cell.error is None, f"{cell.error}: {cell.evalue}" + cell.streams
    return cell.streams


SETUP = """
%load_ext deepagent_magics
from deepagent_magics.testing import ScriptedLM
%deepagent_config --workspace ws --quiet on --max-depth 0
"""


@pytest.mark.kernel
def test_checkpoint_survives_a_real_kernel_restart_and_continue_works(tmp_path):
    with started_kernel(tmp_path) as (manager, client):
        _execute(client, SETUP + f"sales = [1, 0, 2]\nlm = ScriptedLM({STEPS!r})")
        _execute(client, "%%deepagent --lm lm\nload and clean the sales")
        said = _execute(client, "%deepagent_checkpoint s1")
        assert "Checkpoint 's1'" in said
        manager.restart_kernel(now=True)
        client.wait_for_ready(timeout=60)
        assert "gone" in _execute(client, "print('gone' if 'sales_clean' not in dir() else 'still there')")
        cell = execute(client, SETUP + "%deepagent_resume s1", 90, allow_stdin=True, on_input=lambda prompt, cell: "y")
        assert cell.error is None and "Resumed 's1'" in cell.streams, cell.streams
        assert "[1, 2] lock made by step 2 False" in _execute(
            client, "print(sales_clean, type(guard).__name__, guard_label, 'api_token' in dir())")
        _execute(client, "lm = ScriptedLM([('See', 'SUBMIT(result=context)')])")
        _execute(client, "%%deepagent --lm lm --continue --out seen\nnow plot it by month")
        assert "True True" in _execute(client, "print('load and clean the sales' in seen, 'sales_clean (list)' in seen)")
