"""What a benchmark suite is: tasks loaded from a local copy of the suite's files, scored by its own rule.

A suite keeps its files in ``<cache>/<suite name>/`` in the layout the suite publishes
(the Hugging Face dataset repository's own paths), downloads them when they are missing
(`hub`), and turns them into `Task`s. A task's ``prepare(workspace)`` copies the task's
files into a fresh workspace and returns the notebook variables a user would have made
from them, so every system starts from the same data.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .hub import SuiteUnavailable, cache_dir


@dataclass
class Task:
    id: str
    prompt: str  # what every system is asked
    gold: Any  # what the suite's scorer compares with; None when the suite withholds the answer
    files: list[Path] = field(default_factory=list)  # copied into the workspace, by name
    variables: Callable[[Path], dict[str, Any]] | None = None  # the workspace -> the starting variables
    inline: str = ""  # text only the tool-less baseline reads in its prompt (a long context)
    meta: dict[str, Any] = field(default_factory=dict)

    def prepare(self, workspace: Path) -> dict[str, Any]:
        """Copy the task's files into ``workspace``; the variables made from them."""
        workspace = Path(workspace)
        workspace.mkdir(parents=True, exist_ok=True)
        for path in self.files:
            shutil.copyfile(path, workspace / path.name)  # a copy: an agent writing to it leaves the cache alone
        return dict(self.variables(workspace)) if self.variables else {}


class Suite:
    """One benchmark: where its files come from, how they become tasks, how an answer is scored."""

    name = ""
    title = ""
    repo = ""  # the Hugging Face dataset repository
    splits: tuple[str, ...] = ()
    default_split = ""
    metric = "accuracy"

    def root(self, cache: str | Path | None = None) -> Path:
        return cache_dir(cache) / self.name

    def present(self, root: Path, split: str) -> bool:  # pragma: no cover - every suite overrides
        raise NotImplementedError

    def download(self, root: Path, split: str) -> None:  # pragma: no cover - every suite overrides
        raise NotImplementedError

    def tasks(self, root: Path, split: str) -> list[Task]:  # pragma: no cover - every suite overrides
        raise NotImplementedError

    def score(self, task: Task, answer: Any) -> float:  # pragma: no cover - every suite overrides
        raise NotImplementedError

    def score_prediction(self, task: Task, prediction: Any) -> float:
        """A system's whole prediction scored (its ``result``, and whatever else a suite checks, e.g. files written)."""
        return self.score(task, prediction.get("result") if hasattr(prediction, "get") else prediction)

    def load(self, cache: str | Path | None = None, split: str | None = None, limit: int | None = None,
             where: dict[str, str] | None = None) -> list[Task]:
        """The split's tasks (those whose ``meta`` matches ``where``, the first ``limit`` of them), downloading the
        suite's files first when they are missing."""
        split = split or self.default_split
        if split not in self.splits:
            raise SuiteUnavailable(f"{self.name} has no split {split!r}; choose one of: {', '.join(self.splits)}")
        root = self.root(cache)
        if not self.present(root, split):
            self.download(root, split)
            if not self.present(root, split):
                raise SuiteUnavailable(f"{self.name}: the download did not produce the expected files in {root}")
        try:
            tasks = self.tasks(root, split)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SuiteUnavailable(f"{self.name}: cannot read the files in {root}: "
                                   f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
        if not tasks:
            raise SuiteUnavailable(f"{self.name}: no tasks in the {split} split at {root}")
        for key, value in (where or {}).items():
            known = sorted({name for task in tasks for name in task.meta})
            if key not in known:
                raise SuiteUnavailable(f"{self.name} tasks have no {key!r} to select on; they have: {', '.join(known)}")
            tasks = [task for task in tasks if str(task.meta.get(key)) == value]
            if not tasks:
                raise SuiteUnavailable(f"no {self.name} task in the {split} split has {key}={value}")
        return tasks[:limit] if limit else tasks
