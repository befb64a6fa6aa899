"""tuning/suites/suite.py: a suite's tasks from its local files (downloaded when missing), selected and bounded."""

from __future__ import annotations

import pytest

from deepagent_magics.tuning.suites.hub import SuiteUnavailable
from deepagent_magics.tuning.suites.suite import Suite, Task


class Tiny(Suite):
    name, splits, default_split = "tiny", ("dev",), "dev"

    def __init__(self, tasks=None, makes=True):
        self.made, self._tasks, self.makes = [], tasks, makes

    def present(self, root, split):
        return (root / "ok").exists()

    def download(self, root, split):
        self.made.append(split)
        if self.makes:
            root.mkdir(parents=True)
            (root / "ok").write_text("x")

    def tasks(self, root, split):
        if self._tasks is None:
            raise KeyError("column 'question'")
        return self._tasks

    def score(self, task, answer):
        return float(answer == task.gold)


def tasks():
    return [Task("1", "a", "x", meta={"level": "easy"}), Task("2", "b", "y", meta={"level": "hard"}),
            Task("3", "c", "z", meta={"level": "hard"})]


def test_missing_files_are_downloaded_once_then_tasks_selected_and_bounded(tmp_path):
    suite = Tiny(tasks())
    assert [task.id for task in suite.load(tmp_path, where={"level": "hard"}, limit=1)] == ["2"]
    assert [task.id for task in suite.load(tmp_path)] == ["1", "2", "3"] and suite.made == ["dev"]


@pytest.mark.parametrize("suite, kwargs, says", [
    (Tiny(tasks()), {"split": "test"}, "tiny has no split 'test'"),
    (Tiny(tasks(), makes=False), {}, "the download did not produce the expected files"),
    (Tiny(None), {}, "cannot read the files in"),
    (Tiny([]), {}, "no tasks in the dev split"),
    (Tiny(tasks()), {"where": {"color": "red"}}, "have no 'color' to select on; they have: level"),
    (Tiny(tasks()), {"where": {"level": "medium"}}, "no tiny task in the dev split has level=medium"),
])
def test_what_cannot_be_had_is_one_line(tmp_path, suite, kwargs, says):
    with pytest.raises(SuiteUnavailable, match=says):
        suite.load(tmp_path, **kwargs)


def test_a_task_copies_its_files_so_the_cache_stays_as_it_was(tmp_path):
    source = tmp_path / "cache" / "data.csv"
    source.parent.mkdir()
    source.write_text("a\n1\n")
    task = Task("1", "p", None, [source], variables=lambda workspace: {"data": (workspace / "data.csv").read_text()})
    assert task.prepare(tmp_path / "ws") == {"data": "a\n1\n"}
    (tmp_path / "ws" / "data.csv").write_text("changed by an agent")
    assert source.read_text() == "a\n1\n"
    assert Tiny().score_prediction(Task("1", "p", "x"), {"result": "x"}) == 1.0
