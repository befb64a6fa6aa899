"""magics/checkpoint.py: ``%deepagent_checkpoint`` and ``%deepagent_resume`` over this kernel's runs."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from deepagent_magics.magics.checkpoint import _size, _thread, ask_to_replay
from deepagent_magics.testing import ScriptedLM


def test_sizes_read_as_a_person_reads_them():
    assert _size(12) == "12 B" and _size(2048) == "2.0 KB" and _size(3 * 1024 ** 3) == "3.0 GB"


def test_a_thread_entry_that_is_not_one_is_none():
    assert _thread({"id": "t1", "turns": [{"run": "r", "task": "a", "result": "b"}]}).id == "t1"
    assert _thread({"id": "t1", "turns": [{"nope": 1}]}) is None
    assert _thread({"id": 3, "turns": []}) is None and _thread("t1") is None


def test_without_stdin_recorded_code_is_never_run_again(monkeypatch):
    import deepagent_magics.magics.checkpoint as checkpoint

    monkeypatch.setattr(checkpoint, "stdin_asker", lambda: None)
    assert ask_to_replay(["model"], "model = fit()") == (False, "there is no stdin to ask you (run %deepagent_resume "
                                                                 "in a notebook or a terminal)")


def test_nothing_to_checkpoint_before_a_run_is_one_line(ip):
    ip.magics_manager.registry["DeepAgentMagics"].runs.clear()
    with pytest.raises(UsageError, match="nothing to checkpoint yet: run a %%deepagent cell first"):
        ip.run_line_magic("deepagent_checkpoint", "")


def test_what_a_run_made_is_saved_and_resumed_in_a_fresh_namespace(ip, capsys):
    ip.magics_manager.registry["DeepAgentMagics"].runs.clear()
    ip.user_ns["lm"] = ScriptedLM([("Make it.", "table = {'a': 1}\nSUBMIT(result='made')")])
    ip.run_cell("%%deepagent --lm lm --out answer\nMake a table.")
    ip.run_line_magic("deepagent_checkpoint", "mine")
    assert "Checkpoint 'mine': 2 variable(s) (2 pickled)" in capsys.readouterr().out
    del ip.user_ns["table"], ip.user_ns["answer"]
    ip.run_line_magic("deepagent_resume", "mine")
    assert ip.user_ns["table"] == {"a": 1} and ip.user_ns["answer"] == "made"
    assert capsys.readouterr().out.startswith("Resumed 'mine': 2 variable(s) restored")
    with pytest.raises(UsageError):
        ip.run_line_magic("deepagent_resume", "never-saved")
