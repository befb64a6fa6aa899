"""core/run/event_payloads.py: every event kind's data typed, a real run's events holding exactly those keys, and
every emit call of the package passing exactly its payload's keys (read statically)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import get_type_hints

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.run import event_kinds, event_payloads
from deepagent_magics.core.run.event_payloads import PAYLOADS, StepStarted, keys

PACKAGE = Path(event_kinds.__file__).resolve().parents[2]


def test_every_kind_has_its_payload():
    declared = {value for name, value in vars(event_kinds).items() if name.isupper() and isinstance(value, str)}
    assert set(PAYLOADS) == declared
    required, allowed = keys(event_kinds.STEP_STARTED)
    assert required == {"index", "reasoning", "code"} == allowed
    assert get_type_hints(StepStarted)["index"] is int


def test_a_real_runs_events_hold_the_keys_their_payload_says(tmp_path):
    seen = []
    lm = ScriptedLM([("Plan.", "write_todos([{'content': 'a'}])\nwrite_file('a.txt', 'x')\nprint(read_todos())"),
                     ("Done.", "SUBMIT(result='ok')")])
    agent = DeepAgent(lm=lm, workspace=tmp_path)
    from deepagent_magics.core.run.run import Run

    run = Run("Plan and write")
    run.subscribe(lambda event: seen.append(event))
    agent.run("Plan and write", namespace={}, run=run)
    assert {event.kind for event in seen} >= {"run_started", "step_started", "step_finished", "todos", "file_written",
                                              "tool_call", "lm_usage", "status", "run_finished"}
    for event in seen:
        required, allowed = keys(event.kind)
        assert required <= set(event.data) <= allowed, (event.kind, sorted(event.data))


def emits() -> list[tuple[str, str, set[str] | None]]:
    """(where, kind, the keyword names it passes; None when it passes **a dict) of each emit in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = None
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "emit" and node.args
                    and isinstance(node.args[0], ast.Name)):
                continue
            module = module or importlib.import_module(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
            kind = getattr(module, node.args[0].id, None)
            if isinstance(kind, str):
                names = {k.arg for k in node.keywords}
                found.append((f"{path.name}:{node.lineno}", kind, None if None in names else names))
    return found


def test_every_emit_passes_exactly_its_payloads_keys():
    found = emits()
    assert len(found) >= 19  # the walker sees the package's emits
    wrong = []
    for where, kind, names in found:
        required, allowed = event_payloads.keys(kind)
        if names is not None and not (required <= names <= allowed):
            wrong.append(f"{where}: {kind} passes {sorted(names)}, its payload holds {sorted(allowed)}")
    assert not wrong, "\n".join(wrong)


def test_an_approval_records_only_what_its_payload_declares(tmp_path):
    """The one kind emitted from a dict (``emit(APPROVAL, **entry)``): a real decision's entry, read back."""
    from deepagent_magics.core.policy import approval
    from deepagent_magics.core.run.run import Run

    run = Run("t")
    seen = []
    run.subscribe(lambda event: seen.append(event) if event.kind == event_kinds.APPROVAL else None)
    approver = approval.Approver("always", None, ask=lambda question: "y", workspace=str(tmp_path))
    approval.attach(run, approver)
    assert approver.review(run, "x = 1") is None
    [event] = seen
    required, allowed = event_payloads.keys(event_kinds.APPROVAL)
    assert required <= set(event.data) <= allowed and event.data["decision"] == "approved"
