"""Why a run failed, in one line that names the cause, and answers the harness must not pass off as the model's.

Provider errors arrive as multi-line messages with advice lists; parse errors quote the
whole reply. A failed run's ``error`` (what the status line and the magic's one-line
``UsageError`` show) is `reason`: the kind of failure, the cause and, where there is one,
what to change. Never a traceback.

`made_up` guards the other way to end badly: when RLM runs out of iterations it asks the
model to extract an answer from its trajectory (``dspy.RLM``'s extract fallback). From a
trajectory with real output that is the model's summary of its work; from one where no
step produced anything but errors, it is an answer made up from nothing, and the run
fails instead of finishing with it.
"""

from __future__ import annotations

from typing import Any

from .replies import diagnose, one_line
from .retries import cause

EXTRACTED = "Extract forced final output"  # dspy.RLM's final_reasoning after its extract fallback
NOTHING = ("[Error]", "[Format error]", "[Type Error]", "(no output", "Traceback", "FINAL:")


def reason(exc: BaseException) -> str:
    """A failed run's one-line error: ``Kind: cause[; what to do]``."""
    kind = type(exc).__name__
    if kind in ("UnreadableReply", "ContextTooLong"):
        return f"{kind}: {one_line(exc, 400)}"
    if kind == "ContextWindowExceededError":
        return (f"{kind}: the prompt does not fit the model's context window; raise the limit: a model with a "
                f"longer context, less context in the prompt, or an earlier DeepAgent.compact_at")
    if kind == "AdapterParseError":
        return f"{kind}: the model's reply could not be read ({diagnose(getattr(exc, 'lm_response', ''))})"
    attempts = getattr(exc, "deepagent_attempts", None)
    policy = getattr(exc, "deepagent_policy", None)
    if attempts is not None and policy is not None:
        hint = getattr(exc, "retry_after", None)
        if kind == "LMRateLimitError" and isinstance(hint, (int, float)) and hint > policy.max_wait:
            return (f"{kind}: {cause(exc)}: the provider asks to wait longer than a run waits "
                    f"(RetryPolicy.max_wait={policy.max_wait:g} s); try again later or raise max_wait")
        tries = f"{attempts} attempt" + ("s" if attempts != 1 else "")
        return f"{kind}: {cause(exc)}, gave up after {tries} (RetryPolicy.retries={policy.retries})"
    if kind.startswith("LM"):
        return f"{kind}: {cause(exc)}"
    return f"{kind}: {one_line(exc, 400)}" if str(exc) else kind


def made_up(prediction: Any) -> str | None:
    """Why ``prediction`` is not the model's answer (None when it is)."""
    if getattr(prediction, "final_reasoning", None) != EXTRACTED:
        return None
    steps = getattr(prediction, "trajectory", None) or []
    useful = [step for step in steps if produced_output(step)]
    if useful:
        return None
    return (f"MaxItersExhausted: the agent used all {len(steps)} steps without SUBMIT and no step produced any "
            f"output; its extracted answer would be made up (raise max_iters, or check the model's replies)")


def steps_ran_out(prediction: Any) -> str | None:
    """Why ``prediction``'s answer is RLM's extract after the last step, not the agent's SUBMIT (None when it is)."""
    if getattr(prediction, "final_reasoning", None) != EXTRACTED:
        return None
    return f"the agent used all {len(getattr(prediction, 'trajectory', None) or [])} steps without SUBMIT"


def produced_output(step: Any) -> bool:
    """Whether a step (a trajectory entry or a `Step`) printed something other than an error."""
    output = str((step.get("output") if isinstance(step, dict) else getattr(step, "output", "")) or "").strip()
    return bool(output) and not output.startswith(NOTHING)
