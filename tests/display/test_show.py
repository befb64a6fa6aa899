"""display/show.py: the dashboard where the frontend renders widgets, text elsewhere; a past run shown again from its
record (the dashboard in a real kernel and browser: tests/display/test_dashboard_in_*.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.display.show import choose_mode, has_widget_frontend, show_record, show_run
from deepagent_magics.display.text import TextProgress
from deepagent_magics.records.store import list_records


def test_widgets_only_with_a_kernels_comm_manager_and_a_forced_mode_wins():
    terminal = SimpleNamespace()
    kernel = SimpleNamespace(kernel=SimpleNamespace(comm_manager=object()))
    assert not has_widget_frontend(terminal) and has_widget_frontend(kernel)
    assert choose_mode(terminal) == "text" and choose_mode(kernel) == "widgets"
    assert choose_mode(kernel, "text") == "text"
    with pytest.raises(ValueError, match="display mode must be one of auto, widgets, text"):
        choose_mode(kernel, "fancy")


def test_quiet_shows_nothing_and_text_follows_the_run(tmp_path, capsys):
    lm = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
    agent = DeepAgent(lm=lm, workspace=tmp_path)
    quiet = show_run(agent_run := __import__("deepagent_magics").Run("t"), quiet=True)
    assert quiet.shows_result is False
    quiet.close()
    view = show_run(agent_run, mode="text")
    assert isinstance(view, TextProgress)
    agent.run("t", namespace={}, run=agent_run)
    view.close()
    assert "finished: 1 steps" in capsys.readouterr().out


def test_a_past_run_is_shown_again_from_its_record(tmp_path, capsys):
    lm = ScriptedLM([("Write it.", "write_file('a.txt', 'x')\nSUBMIT(result='written')")])
    DeepAgent(lm=lm, workspace=tmp_path).run("Write a file", namespace={})
    view = show_record(list_records([tmp_path])[0], mode="text")
    out = capsys.readouterr().out
    assert "step 1/" in out and "finished: 1 steps" in out and "wrote a.txt" in out and out.rstrip().endswith("written")
    assert view.run.status == "finished"
