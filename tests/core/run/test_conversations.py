"""core/run/conversations.py: a follow-up run receives the earlier turns compactly and becomes the next turn."""

from __future__ import annotations

import pytest

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.run.conversations import (
    CONTEXT_BUDGET,
    HEADER,
    Thread,
    Turn,
    UnknownThread,
    add_loader,
    find,
    remember,
    thread_of,
)


def run_turn(tmp_path, task, code, namespace, thread=None):
    lm = ScriptedLM([("Do it.", code)])
    return DeepAgent(lm=lm, workspace=tmp_path).run(task, namespace=namespace, thread=thread)


def test_a_follow_up_receives_the_earlier_turn_and_joins_the_thread(tmp_path):
    namespace = {}
    first = run_turn(tmp_path, "Load the sales", "sales = [1, 2]\nSUBMIT(result='loaded 2 rows')", namespace)
    assert first.config["names_created"] == ["sales (list)"]
    second = run_turn(tmp_path, "Sum them", "SUBMIT(result=str(sum(sales)))", namespace, thread=first.id)
    assert second.result == "3" and thread_of(second.id) == first.id
    context = find(first.id).context(namespace)
    assert context.startswith(f"{HEADER} (thread {first.id}, 2 earlier turn(s); the names they made are defined)")
    assert "Turn 1 (run" in context and "loaded 2 rows" in context and "names created: sales (list)" in context


def test_the_head_says_truthfully_which_names_are_gone():
    thread = Thread("t", [Turn("r1", "make", names=["a (int)", "b (int)"])])
    assert "none of the names they made is defined now" in thread.context({})
    assert "of the names they made, b is not defined now" in thread.context({"a": 1})
    assert "they left no names" in Thread("t", [Turn("r1", "x")]).context({})


def test_many_turns_stay_within_the_budget_older_ones_shrinking_first():
    turns = [Turn(f"r{i}", f"task {i}", status="finished", result="line\n" * 200, steps=["s"] * 20)
             for i in range(300)]
    text = Thread("t", turns).context({})
    assert len(text) <= CONTEXT_BUDGET
    assert "Turn 300 (run r299, finished): task 299" in text and "older turn(s) left out" in text
    assert "Turn 1 (run r0" not in text


def test_an_unknown_thread_is_one_line_and_a_loader_can_find_it():
    with pytest.raises(UnknownThread, match="there is no run or thread 'nowhere-xyz' to continue"):
        find("nowhere-xyz")
    add_loader(lambda key, root: Thread(key, [Turn("loaded-run", "from disk")]) if key == "on-disk-xyz" else None)
    assert find("on-disk-xyz").turns[0].run == "loaded-run"
    assert thread_of("loaded-run") == "on-disk-xyz"


def test_a_turn_reads_a_run_or_a_record_and_says_what_it_imported_apart():
    turn = Turn.from_run({"id": "r", "task": "t", "status": "failed", "result": None, "error": "boom",
                          "config": {"names_created": ["np (imported)", "x (int)"]},
                          "steps": [{"reasoning": "first\nmore"}, {"code": "print(1)"}]})
    assert turn.result == "boom" and turn.steps == ["first", "print(1)"]
    described = turn.describe(1, full=True)
    assert "names created: x (int)" in described and "imported: np" in described
    assert turn.describe(2, full=False) == "Turn 2 (run r, failed): t -> boom"
    remember(Thread("kept", [turn]))
    assert find("r").id == "kept"
