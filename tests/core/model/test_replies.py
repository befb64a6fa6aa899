"""core/model/replies.py: a reply whose intent is plain is read as meant; one that is not is named (the corpus of
what real models send: tests/adversarial/test_what_models_send.py)."""

from __future__ import annotations

import pytest

from deepagent_magics.core.model.replies import clean, diagnose, join_blocks, relocate, repair, sections

NAMES = ["reasoning", "code"]


@pytest.mark.parametrize("reply", [
    "## Reasoning\nSum it.\n## Code\n```python\nprint(1)\n```",
    "Reasoning: Sum it.\nCode:\n```python\nprint(1)\n```",
    "**Reasoning:** Sum it.\n**Code:**\n```python\nprint(1)\n```",
    "[[ ## reasoning\u200b ## ]]\nSum it.\n[[ ## code ## ]]\n```python\nprint(1)\n```",
    "<think>draft</think>Sum it.\n```python\nprint(1)\n```",
])
def test_a_reply_in_a_shape_models_use_is_read_as_meant(reply):
    fields = repair(reply, NAMES)
    assert "print(1)" in fields["code"] and "Sum it." in fields["reasoning"]


def test_code_in_the_reasoning_field_moves_and_several_blocks_become_one():
    fields = {"reasoning": "Plan.\n```python\na = 1\n```\n```python\nb = 2\n```", "code": ""}
    relocate(fields)
    assert fields["reasoning"] == "Plan." and "a = 1" in fields["code"] and "b = 2" in fields["code"]
    assert join_blocks("```python\nx\n```\n```py\ny\n```") == "```python\nx\n\ny\n```"


@pytest.mark.parametrize("reply, finish, says", [
    ("", None, "the reply was empty"), ("<think>hm</think>", None, "the reply was empty (only a <think> block)"),
    ("I'm sorry, I can't help with that.", None, "the model refused"),
    ("```bash\nls\n```", None, "has a bash block but no Python code"),
    ("[[ ## repl_history ## ]] ...", None, "repeats the prompt"),
    ("partial", "length", "cut off at the token limit"), ("x", "content_filter", "content filter"),
    ("Just prose.", None, "no [[ ## code ## ]] section and no Python code block"),
])
def test_what_no_repair_can_read_is_named(reply, finish, says):
    assert repair(reply, NAMES) is None or finish
    assert says in diagnose(reply, finish)


def test_sections_split_at_each_marker_and_clean_drops_think_blocks():
    assert sections("Reasoning: a\nCode: b\n[[ ## completed ## ]]\ntrailing", NAMES) == {"reasoning": "a", "code": "b"}
    assert clean("x\u200b<thinking>plan</thinking>y") == ("xy", "plan")
    assert repair("{\"reasoning\": 1}", NAMES) is None and repair("x", ["answer"]) is None
