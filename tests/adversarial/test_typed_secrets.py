"""A token typed into a magic is a secret: registered, scrubbed from In, _ih, _i*, the history database
and everything a run writes, even when a hostile step prints the input history or the live setting.

The shell gets a real IPython `HistoryManager` on a temporary SQLite file (with its saving thread),
as a kernel has one; a ScriptedLM plays the hostile agent.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
from IPython.core.history import HistoryManager

from deepagent_magics.testing import ScriptedLM

TOKEN = "gw9Qv7Lm2Xk4Rt8Zp3Nc6Hb1Yd5Ws0Ej"  # no key shape, no secret-looking name: only registration hides it
PIECES = {TOKEN[i:i + 8] for i in range(len(TOKEN) - 7)}


def leaked(text: str) -> set[str]:
    return {piece for piece in PIECES if piece in text}


@pytest.fixture
def history(ip, tmp_path, monkeypatch):
    manager = HistoryManager(shell=ip, hist_file=str(tmp_path / "history.sqlite"))
    monkeypatch.setattr(ip, "history_manager", manager)
    ip.init_user_ns()  # In, _ih, Out are the new manager's lists
    yield manager
    manager.end_session()
    manager._stop_save_thread()
    manager.db.close()


def stored(manager: HistoryManager) -> str:
    """Everything the history database holds, read through a connection of its own."""
    manager.writeout_cache()
    with sqlite3.connect(manager.hist_file) as db:
        rows = db.execute("SELECT source, source_raw FROM history").fetchall()
    return "\n".join(part for row in rows for part in row)


def kept_by_the_shell(ip, manager) -> str:
    inputs = [*ip.user_ns["In"], *ip.user_ns["_ih"], *manager.input_hist_raw, manager._i00, manager._i,
              manager._ii, manager._iii]
    inputs += [value for name, value in ip.user_ns.items() if name.startswith("_i") and isinstance(value, str)]
    return "\n".join(inputs)


def hostile_run(ip, tmp_path):
    ip.user_ns["lm"] = ScriptedLM([
        ("Look at the history.", "print(In)\nprint(_ih)\nprint(_i1, _ii, _iii)\n"
                                 "print(get_ipython().history_manager.input_hist_raw)"),
        ("Look at the setting.", "magics = get_ipython().find_magic('deepagent_config').__self__\n"
                                 "print(magics.gateway_token)\nimport os\nprint(os.environ.get('MY_GW'))"),
        ("Done.", "SUBMIT(result=str(In[-1]))"),
    ])
    result = ip.run_cell("%%deepagent --lm lm\nread the history", store_history=True)
    result.raise_error()
    run = ip.user_ns["_deepagent_run"]
    runs = tmp_path / ".deepagent" / "runs"
    return run, (runs / f"{run.id}.json").read_text() + (runs / f"{run.id}.events.jsonl").read_text()


def test_a_gateway_token_typed_into_config_leaves_no_trace(ip, history, tmp_path, capsys):
    ip.run_cell(f"%deepagent_config --gateway-token {TOKEN}", store_history=True).raise_error()
    ip.run_cell("later = 1", store_history=True)
    assert not leaked(kept_by_the_shell(ip, history))
    assert not leaked(stored(history))  # the kernel's history database
    assert ip.find_magic("deepagent_config").__self__.gateway_token == TOKEN  # the setting itself still works

    run, written = hostile_run(ip, tmp_path)
    assert run.status == "finished"
    assert not leaked(written), leaked(written)  # the record and the event log
    assert not leaked(json.dumps([step.output for step in run.steps]))
    assert not leaked(capsys.readouterr().out)
    assert not leaked(stored(history))


def test_the_token_is_scrubbed_even_when_the_gateway_refuses_it(ip, history):
    with pytest.raises(Exception):
        ip.run_line_magic("deepagent_config", f"--gateway-url http://127.0.0.1:9 --gateway-token {TOKEN}")
    ip.run_cell(f"%deepagent_config --gateway-url http://127.0.0.1:9 --gateway-token {TOKEN}", store_history=True)
    assert not leaked(kept_by_the_shell(ip, history)) and not leaked(stored(history))


def test_a_token_set_through_config_is_scrubbed_too(ip, history, tmp_path):
    ip.run_cell(f"%config DeepAgentMagics.gateway_token = {TOKEN!r}", store_history=True).raise_error()
    assert not leaked(kept_by_the_shell(ip, history)) and not leaked(stored(history))
    _, written = hostile_run(ip, tmp_path)
    assert not leaked(written)


def test_the_token_can_come_from_an_environment_variable_of_any_name(ip, history, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MY_GW", TOKEN)  # a name that does not say secret
    ip.run_cell("%deepagent_config --gateway-token-env MY_GW", store_history=True).raise_error()
    shown = capsys.readouterr().out
    assert "MY_GW" in shown and not leaked(shown)
    magics = ip.find_magic("deepagent_config").__self__
    assert magics.gateway_token_in_effect() == TOKEN
    _, written = hostile_run(ip, tmp_path)
    assert not leaked(written)


def test_a_missing_environment_variable_is_one_line(ip):
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="the environment has no variable NO_SUCH_VARIABLE_HERE"):
        ip.run_line_magic("deepagent_config", "--gateway-token-env NO_SUCH_VARIABLE_HERE")
