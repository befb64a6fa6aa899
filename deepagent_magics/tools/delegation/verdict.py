"""The reviewer's verdict: its own typed output, {"status": "pass" | "low" | "fail", "issues": [...], "suggestions": [...]}.

A verdict found by searching the reviewer's text can be one it quoted (the draft's own
``{"status": "pass"}``). So the reviewer sub-agent's signature has typed output fields
(`verdict_signature`): RLM checks them when the reviewer calls
``SUBMIT(status=..., issues=..., suggestions=...)`` and tells it what is wrong otherwise.
`VerdictRLM` writes those fields, and only those, as the run's JSON result, and
`parse_verdict` reads a verdict only from exactly one such JSON object. Anything else is
``fail``: never a silent pass.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import dspy

from ...core.loop.agent import INPUT_FIELDS
from ...core.loop.rlm_seam import AgentRLM

REVIEWER_PROFILE = "reviewer"
VERDICTS = ("pass", "low", "fail")
FIELDS = ("status", "issues", "suggestions")
OUTPUTS = {
    "status": (Literal["pass", "low", "fail"], '"pass": every criterion met; "low": met, with minor problems; '
                                               '"fail": a criterion not met or unchecked, or an error in the draft'),
    "issues": (list[str], "Each problem: the criterion it breaks and the evidence; empty when there is none"),
    "suggestions": (list[str], "How to fix each problem; empty when there is nothing to fix"),
}


def verdict_signature(instructions: str) -> type[dspy.Signature]:
    """The reviewer's signature: the agents' inputs, and the verdict as typed outputs."""
    fields: dict[str, Any] = {name: (str, dspy.InputField(desc=desc)) for name, desc in INPUT_FIELDS.items()}
    fields.update({name: (kind, dspy.OutputField(desc=desc)) for name, (kind, desc) in OUTPUTS.items()})
    return dspy.Signature(fields, instructions)


class VerdictRLM(AgentRLM):
    """An RLM over `verdict_signature` whose prediction's ``result`` is the verdict as JSON (the run's result)."""

    def forward(self, **kwargs: Any) -> dspy.Prediction:
        return _with_result(super().forward(**kwargs))

    async def aforward(self, **kwargs: Any) -> dspy.Prediction:
        return _with_result(await super().aforward(**kwargs))


def _with_result(prediction: dspy.Prediction) -> dspy.Prediction:
    prediction.result = json.dumps({name: prediction.get(name) for name in FIELDS})
    return prediction


def parse_verdict(value: Any) -> dict[str, Any]:
    """The verdict in ``value``: exactly one JSON object (or dict) with a status of pass, low or fail and
    lists of strings for issues and suggestions. Anything else fails the review, saying why."""
    found = value
    if isinstance(value, str):
        try:
            found = json.loads(value)
        except (ValueError, RecursionError):
            found = None
    if not isinstance(found, dict):
        return _unreadable("The reviewer's verdict is not one JSON object.", value)
    status = found.get("status")
    if status not in VERDICTS:
        return _unreadable(f"The reviewer gave no valid status ({status!r}); treated as fail.", value)
    lists = {name: [] if found.get(name) is None else found.get(name) for name in ("issues", "suggestions")}
    if not all(isinstance(items, list) and all(isinstance(item, str) for item in items) for items in lists.values()):
        return _unreadable("The reviewer's issues and suggestions are not lists of strings.", value)
    return {"status": status, **lists}


def _unreadable(reason: str, value: Any) -> dict[str, Any]:
    return {"status": "fail", "issues": [reason], "suggestions": [], "raw": str(value)[:2000]}
