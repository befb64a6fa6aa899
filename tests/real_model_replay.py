"""What a capable model wrote, replayed as scripts: `ScriptedLM` answers each agent with that agent's
recorded replies, in order, and each ``llm_query`` with its recorded answer.

The replies are in tests/data/real_model_runs/replies.json (made from ../shared/real-model-runs by
make_replies.py there; see its README). An agent is told apart by the start of its task (the first 80
characters the recording kept), so the reviewer, whose task quotes the root's, still gets its own
replies. Each reply is given as the model wrote it: the code field with its Markdown fence.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from deepagent_magics.testing import EXHAUSTED, ScriptedLM, ScriptedRequest

REPLIES = Path(__file__).resolve().parent / "data" / "real_model_runs" / "replies.json"


def recorded() -> list[dict[str, Any]]:
    return json.loads(REPLIES.read_text(encoding="utf-8"))


def entry(number: str) -> dict[str, Any]:
    return next(each for each in recorded() if each["id"] == number)


def _squash(text: str) -> str:
    return " ".join(str(text).split())


class Replay:
    """The recorded replies of the requests ``first``..``last`` as one scripted model.

    ``lm`` is the `ScriptedLM`; ``played`` lists the ids answered, in order; ``left()`` the ids
    no agent asked for (a replay that ran as recorded leaves none); ``requests`` what each
    agent was sent, by reply id, to check that an error reached the model.
    """

    def __init__(self, first: str, last: str):
        chosen = [each for each in recorded() if first <= each["id"] <= last]
        self.agents: dict[str, list[dict[str, Any]]] = {}
        for each in chosen:
            if each["agent"] != "llm_query":
                self.agents.setdefault(_squash(each["task"]), []).append(each)
        self.answers = {each["prompt"]: each["reply"] for each in chosen if each["agent"] == "llm_query"}
        self.played: list[str] = []
        self.requests: dict[str, str] = {}  # the request each reply answered: its inputs and history
        self._lock = threading.Lock()
        self.lm = ScriptedLM(self._step, replies=self._answer, model="replay/frontier")

    def _step(self, request: ScriptedRequest) -> dict[str, str]:
        task = _squash(request.task)
        keys = [key for key in self.agents if task.startswith(key)]
        if not keys:
            return {"reasoning": f"No recorded agent has the task {task[:80]!r}.", "code": EXHAUSTED}
        with self._lock:
            queue = self.agents[max(keys, key=len)]
            if not queue:
                return {"reasoning": "The recording has no more replies for this agent.", "code": EXHAUSTED}
            reply = queue.pop(0)
            self.played.append(reply["id"])
            self.requests[reply["id"]] = request.user
        return {"reasoning": reply["reasoning"], "code": reply["code"]}

    def _answer(self, prompt: str) -> str:
        for question, answer in self.answers.items():
            if question in prompt:
                with self._lock:
                    self.played.append(next(each["id"] for each in recorded() if each.get("prompt") == question))
                return answer
        return "(no recorded answer)"

    def left(self) -> list[str]:
        return [each["id"] for queue in self.agents.values() for each in queue]
