"""The offline suite: questions over datasets that ship inside scikit-learn, nothing to download.

``deepagent bench sklearn`` (docs/quality.md). The tables are scikit-learn's ``load_iris``,
``load_wine``, ``load_diabetes`` and ``load_breast_cancer`` (as DataFrames, ``target`` the
last column), written once to ``<cache>/sklearn/*.csv`` and read back from there, so the
systems and the reference code see the same numbers. Two short text lists (wine comments in
four languages, tasting notes) are made here from fixed sentences with a fixed seed: what
each item is (its language, its character) is known to the code that made it, and only a
language model can tell it from the text.

Each question (`sklearn_questions`) is answered by its reference code; answers are scored by
DABstep's rule (`dabstep.question_scorer`: numbers to the shorter answer's decimals, lists in
any order, names without case or punctuation). A question that asks for a file also needs the
file among those the system wrote through its tools.

The questions are in two halves (`halves`, ``--where half=dev`` or ``half=held-out``): whoever changes the
harness or the prompt reads the failures of the development half only and reports both, so that what
was fitted to the questions shows as a gap between the halves.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from .dabstep import question_scorer
from .hub import SuiteUnavailable
from .reading import read_table
from .sklearn_questions import QUESTIONS, Question, describe
from .suite import Suite, Task

TABLES = ("iris", "wine", "diabetes", "breast_cancer")
TEXTS = ("comments", "tasting_notes")
SENTENCES = {  # (label, text): what the text lists are made from
    "comments": [
        ("fr", "Ce vin rouge est vraiment excellent, je le recommande."), ("fr", "Livraison rapide mais la bouteille était tiède."),
        ("fr", "Un peu trop boisé à mon goût."), ("en", "Lovely wine, we finished the bottle in one evening."),
        ("en", "The cork crumbled and the wine tasted flat."), ("en", "Good value for the price."),
        ("de", "Der Wein war leider zu süß für uns."), ("de", "Sehr schöner Rotwein, gerne wieder."),
        ("es", "Un vino muy equilibrado, perfecto con la cena."), ("es", "El envío tardó dos semanas."),
    ],
    "tasting_notes": [
        ("fruity", "Bursting with ripe cherries and a hint of plum."), ("fruity", "Think blackcurrant jam spread on warm toast."),
        ("fruity", "Fresh strawberries straight from the garden."), ("fruity", "Juicy peach and apricot on the nose."),
        ("woody", "Like walking through a cedar forest after rain."), ("woody", "Notes of an old oak barrel and a cigar box."),
        ("woody", "Sawdust and pencil shavings linger on the finish."),
        ("spicy", "A peppery kick with cloves and cinnamon."), ("spicy", "Nutmeg and a warm touch of black pepper."),
        ("spicy", "Star anise and ginger tingle on the tongue."),
    ],
}
TEXT_COUNTS = {"comments": 12, "tasting_notes": 10}
HALVES = ("dev", "held-out")
LOOKED_AT = ("agg-1", "group-1", "corr-1")  # their runs were read before the halves existed (docs/quality.md)


def texts(name: str) -> list[tuple[str, str]]:
    """The labelled list ``name``: the same every time (a fixed seed)."""
    picks = random.Random(f"deepagent-{name}")
    pool = SENTENCES[name]
    chosen = picks.sample(pool, len(pool))
    while len(chosen) < TEXT_COUNTS[name]:
        chosen.append(picks.choice(pool))
    return chosen[:TEXT_COUNTS[name]]


def _frames() -> dict[str, Any]:
    try:
        from sklearn import datasets
    except ImportError:
        raise SuiteUnavailable("the sklearn suite needs scikit-learn: pip install 'deepagent-magics[quality]'") from None
    loaders = {"iris": datasets.load_iris, "wine": datasets.load_wine, "diabetes": datasets.load_diabetes,
               "breast_cancer": datasets.load_breast_cancer}
    return {name: loader(as_frame=True).frame for name, loader in loaders.items()}


def _file(name: str) -> str:
    return f"{name}.csv" if name in TABLES else f"{name}.json"


def read_data(root: Path) -> dict[str, Any]:
    """Every table and text list from the suite's folder, and the labelled lists the references count."""
    data: dict[str, Any] = {name: read_table(root / _file(name)) for name in TABLES}
    for name in TEXTS:
        labelled = json.loads((root / _file(name)).read_text(encoding="utf-8"))
        data[name] = [text for _, text in labelled["items"]]
        data[f"_{name}"] = [tuple(item) for item in labelled["items"]]
    return data


class SklearnData(Suite):
    name = "sklearn"
    title = "scikit-learn datasets (offline)"
    splits = ("all",)
    default_split = "all"

    def present(self, root: Path, split: str) -> bool:
        return all((root / _file(name)).is_file() for name in TABLES + TEXTS)

    def download(self, root: Path, split: str) -> None:
        """Nothing to download: the tables come out of the installed scikit-learn, the texts out of this module."""
        root.mkdir(parents=True, exist_ok=True)
        for name, frame in _frames().items():
            frame.to_csv(root / _file(name), index=False)
        for name in TEXTS:  # the labels stay in the file (for the references); the systems get the texts only
            (root / _file(name)).write_text(json.dumps({"items": texts(name)}, indent=1), encoding="utf-8")

    def tasks(self, root: Path, split: str) -> list[Task]:
        """The questions taken in turn from each kind, so that ``--limit 8`` is one of every kind."""
        data, half = read_data(root), halves(QUESTIONS)
        return [self._task(question, root, data, half[question.id]) for question in interleaved(QUESTIONS)]

    def _task(self, question: Question, root: Path, data: dict[str, Any], half: str) -> Task:
        tables = [name for name in question.datasets if name in TABLES]
        about = "\n".join(f"- `{name}`: {describe(name)}" + (f" (also the file {name}.csv in the workspace)"
                                                          if name in tables else "") for name in question.datasets)
        prompt = f"{question.text}\n\nThe data:\n{about}\n\nAnswer with {question.answer_format}, nothing else."
        return Task(question.id, prompt, str(question.reference(data)), [root / f"{name}.csv" for name in tables],
                    _loader(question.datasets, data),
                    meta={"kind": question.kind, "level": question.level, "half": half,
                          "writes": list(question.writes)})

    def score(self, task: Task, answer: Any) -> float:
        return float(question_scorer(answer, task.gold))

    def score_prediction(self, task: Task, prediction: Any) -> float:
        """The answer by DABstep's rule; a question that asks for a file also needs the file written."""
        wanted = task.meta.get("writes") or []
        if wanted and not set(wanted) <= files_written(prediction):
            return 0.0
        return self.score(task, prediction.get("result") if hasattr(prediction, "get") else None)


def interleaved(questions: tuple[Question, ...]) -> list[Question]:
    kinds: dict[str, list[Question]] = {}
    for question in questions:
        kinds.setdefault(question.kind, []).append(question)
    rounds = max(len(each) for each in kinds.values())
    return [each[turn] for turn in range(rounds) for each in kinds.values() if turn < len(each)]


def halves(questions: tuple[Question, ...]) -> dict[str, str]:
    """Each question's half, by a fixed rule stratified by kind and level: the strata (kind, level) in the order
    the questions are listed, each stratum's questions by the SHA-256 of their id, and along that sequence
    the questions alternately in the development half and the held-out half (each stratum split evenly,
    the odd one out alternating, so the halves are the same size). A question in `LOOKED_AT` that this puts
    in the held-out half trades places with the next development question of its stratum: the held-out
    half holds only questions nobody has read a run of."""
    strata: dict[tuple[str, str], list[str]] = {}
    for question in questions:
        strata.setdefault((question.kind, question.level), []).append(question.id)
    ordered = [sorted(ids, key=_digest) for ids in strata.values()]
    half = {each: HALVES[place % 2] for place, each in enumerate(each for ids in ordered for each in ids)}
    for ids in ordered:
        for seen in [each for each in ids if each in LOOKED_AT and half[each] == HALVES[1]]:
            other = next(each for each in ids if half[each] == HALVES[0] and each not in LOOKED_AT)
            half[seen], half[other] = HALVES[0], HALVES[1]
    return half


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def files_written(prediction: Any) -> set[str]:
    """The files a system wrote: those it left in its workspace, however it wrote them (``files_left``: a tool or
    its code, ``df.to_csv``), the deep agent's whole run tree's through its tools, ReAct's ``write_file`` calls."""
    written: set[str] = {Path(path).name for path in ((prediction.get("files_left") if hasattr(prediction, "get")
                                                       else None) or [])}
    run = prediction.get("run") if hasattr(prediction, "get") else None
    if run is not None:
        for each in run.walk():
            written.update(Path(path).name for path in each.files_written)
    trajectory = (prediction.get("trajectory") if hasattr(prediction, "get") else None) or {}
    if not isinstance(trajectory, dict):  # bare RLM's is a list of steps: no tool calls to read
        return written
    for key, tool in trajectory.items():
        if key.startswith("tool_name_") and tool == "write_file":
            args = trajectory.get(key.replace("tool_name_", "tool_args_")) or {}
            written.add(Path(str(args.get("path", ""))).name)
    return written


def _loader(names: tuple[str, ...], data: dict[str, Any]):
    """The task's tables read from its workspace copy; its text lists (never a file: theirs hold the labels)."""

    def variables(workspace: Path) -> dict[str, Any]:
        return {name: read_table(workspace / f"{name}.csv") if name in TABLES else list(data[name]) for name in names}

    return variables
