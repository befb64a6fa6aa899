"""core/policy/approval_text.py: the question the user sees and the refusal the agent reads."""

from __future__ import annotations

from deepagent_magics.core.policy.approval import Decision, Proposal
from deepagent_magics.core.policy.approval_text import (
    ACTION_PROMPT,
    BLOCK_PROMPT,
    NO_STDIN,
    label,
    no_stdin_line,
    prompt,
    question,
    refusal,
    short,
)
from deepagent_magics.core.policy.risk import Risk
from deepagent_magics.core.run.run import Run

BLOCK = Proposal("import os\nos.remove('x')", [Risk("removes_files", "os.remove")], "r1", 2, "the agent")
ACTION = Proposal("", [Risk("writes_outside_workspace", "write /etc/x?")], "r1", 3, "the agent",
                  action="write /etc/x? outside the workspace")


def test_a_block_question_shows_the_code_and_why_it_asks():
    text = question(BLOCK)
    assert "the agent asks to run step 2" in text and "os" in text and "remove" in text
    assert "Why it asks:\n  • removes_files: os.remove" in text
    assert prompt(BLOCK) == BLOCK_PROMPT


def test_an_action_question_names_the_action():
    assert "wants to ──\n  • writes_outside_workspace: write /etc/x? outside the workspace" in question(ACTION)
    assert prompt(ACTION) == ACTION_PROMPT


def test_the_refusal_the_agent_reads_says_who_refused_why_and_not_to_retry():
    text = refusal(BLOCK, Decision("refuse", "too risky"), "user")
    assert text == ("Not run: the user refused this block (os.remove). Reason given: too risky. "
                    "Nothing in it ran; do not retry it unchanged.")
    assert refusal(ACTION, Decision("refuse"), "policy").startswith(
        "Not allowed: the user's approval policy refused this action (writes_outside_workspace: write /etc/x?")
    assert NO_STDIN in refusal(BLOCK, Decision("refuse", NO_STDIN), "no stdin")
    assert "there is no stdin to ask on: refused" in no_stdin_line(BLOCK)


def test_who_asks_is_the_agent_or_the_sub_agent_by_id_and_task():
    root = Run("root task")
    child = root.add_child("count the words\nin the file")
    assert label(root) == "the agent" and label(None) == "the agent"
    assert label(child) == f"sub-agent {child.id} (depth 1: count the words)"
    assert short("x" * 200) == repr("x" * 200)[:80]
