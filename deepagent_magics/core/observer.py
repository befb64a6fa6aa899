"""Turn DSPy's callbacks into `Run` events: a step begins when the LM has proposed
its reasoning and code; every LM call's usage is added to the run."""

from __future__ import annotations

from typing import Any

from dspy.utils.callback import BaseCallback

from .run import Run


class RunObserver(BaseCallback):
    def __init__(self, run: Run, action_predictor: Any):
        self.run = run
        self.action_predictor = action_predictor
        self._modules: dict[str, Any] = {}
        self._lms: dict[str, Any] = {}
        self._seen: set[str] = set()

    def on_module_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        if instance is self.action_predictor:
            self._modules[call_id] = instance

    def on_module_end(self, call_id: str, outputs: Any, exception: Exception | None = None) -> None:
        if self._modules.pop(call_id, None) is None or exception is not None or outputs is None:
            return
        self.run.begin_step(getattr(outputs, "reasoning", "") or "", getattr(outputs, "code", "") or "")

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        self._lms[call_id] = instance

    def on_lm_end(self, call_id: str, outputs: Any, exception: Exception | None = None) -> None:
        lm = self._lms.pop(call_id, None)
        if lm is None:
            return
        entry = self._latest_unseen(lm)
        if entry is None:
            self.run.record_usage(str(getattr(lm, "model", "lm")), 0, 0, None)
            return
        usage = entry.get("usage") or {}
        self.run.record_usage(
            str(entry.get("model") or getattr(lm, "model", "lm")),
            int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0),
            int(usage.get("completion_tokens") or usage.get("output_tokens") or 0),
            entry.get("cost"),
        )

    def _latest_unseen(self, lm: Any) -> dict[str, Any] | None:
        history = getattr(lm, "history", None) or []
        for entry in reversed(history[-8:]):
            key = entry.get("uuid") or str(id(entry))
            if key not in self._seen:
                self._seen.add(key)
                return entry
        return None
