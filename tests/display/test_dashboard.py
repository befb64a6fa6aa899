"""The live display: the widget dashboard's models after a run, sub-agent nesting, append-only updates,
the text rendering without widgets, and the choice between them."""

from __future__ import annotations

import html
import json
import re
import threading
from types import SimpleNamespace

import comm
import ipywidgets
import pytest
from ipywidgets.widgets.widget import _instances

from deepagent_magics import display
from deepagent_magics.display.dashboard import DASHBOARD_CLASS, PAGE_SIZE
from deepagent_magics.core.run.run import Run
from deepagent_magics.testing import ScriptedLM

SCRIPT = [
    ("Plan the report.",
     "write_todos([{'content': 'total the sales', 'status': 'in_progress'},"
     " {'content': 'write the report', 'status': 'pending'}])\nprint(len(sales))"),
    ("Total and write.",
     "total = sum(sales)\nwrite_file('reports/report.md', f'# Report\\nTotal: {total}\\n')"),
    ("Done.",
     "write_todos([{'content': 'total the sales', 'status': 'completed'},"
     " {'content': 'write the report', 'status': 'completed'}])\nSUBMIT(result=f'Total: {total}')"),
]


def descendants(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from descendants(child)


def text_of(widget) -> str:
    """What a reader sees in the widget's HTML and titles (tags stripped)."""
    parts = []
    for each in descendants(widget):
        parts += [getattr(each, "value", "") or ""] if isinstance(each, ipywidgets.HTML) else []
        parts += list(getattr(each, "titles", ()))
    return html.unescape(re.sub(r"<style>.*?</style>|<[^>]+>", "", "\n".join(parts), flags=re.S))


def newest_dashboard():
    boards = [w for w in list(_instances.values()) if DASHBOARD_CLASS in getattr(w, "_dom_classes", ())]
    return boards[-1]


def subagent_entries(step_entry: ipywidgets.Accordion) -> list:
    """The sub-agents nested under a step: the step's [body, sub-agents] once one has started."""
    content = step_entry.children[0]
    return list(content.children[1].children) if isinstance(content, ipywidgets.VBox) else []


def step_entries(trajectory_box) -> list[ipywidgets.Accordion]:
    run_view = trajectory_box.children[1]  # [title, the root run's view]
    orphans, pages = run_view.children
    return [entry for page in pages.children for entry in page.children]


def test_after_a_scripted_run_the_widgets_hold_the_todos_the_tree_the_steps_and_the_result_is_below(ip, workspace,
                                                                                                     capsys):
    (workspace / "notes.txt").write_text("there before the run")
    ip.run_line_magic("deepagent_config", "--quiet off")
    ip.user_ns.update(sales=[10, 32], lm=ScriptedLM(SCRIPT))
    result = ip.run_cell("%%deepagent --lm lm --display widgets\nTotal the sales and write a report")
    assert result.error_in_exec is None

    status, panels, trajectory, result_box = newest_dashboard().children
    todos_box, workspace_box = panels.children
    assert "finished" in status.value and "iteration 3/20" in status.value and "3 LM calls" in status.value
    todos = text_of(todos_box)
    assert "total the sales" in todos and "write the report" in todos and "2/2 completed" in todos
    tree = text_of(workspace_box)
    assert "reports/" in tree and "report.md" in tree and "● written" in tree and "notes.txt" in tree
    assert tree.count("● written") == 1  # notes.txt was there before the run
    dropdown = next(w for w in descendants(workspace_box) if isinstance(w, ipywidgets.Dropdown))
    assert dropdown.value == "reports/report.md" and "Total: 42" in text_of(workspace_box)

    steps = step_entries(trajectory)
    assert len(steps) == 3
    assert [entry.titles[0] for entry in steps] == ["✓ Step 1 · Plan the report.", "✓ Step 2 · Total and write.",
                                                  "✓ Step 3 · Done."]
    assert "total = sum(sales)" in text_of(steps[1])  # the highlighted code
    assert steps[2].selected_index == 0 and steps[0].selected_index is None  # newest open
    # The result is not in a widget (a notebook saved without widget state would lose it): it is the cell's own
    # output below the dashboard (test_notebooks.py reads it from a saved notebook).
    assert result_box.layout.display == "none" and result_box.children[1].outputs == ()
    assert capsys.readouterr().out.rstrip().endswith("Total: 42")


def drive_nested_run(run: Run) -> None:
    """A parent whose step 1 spawns a sub-agent (from a worker thread) that spawns its own."""
    run.start()
    run.begin_step("Delegate the counting.", "delegate('count')")

    def child_work():
        child = run.add_child("count the words")
        child.start()
        child.set_todos([{"content": "count", "status": "in_progress"}])
        child.begin_step("Delegate deeper.", "delegate('split')")
        grandchild = child.add_child("split the text")
        grandchild.start()
        grandchild.begin_step("Split.", "parts = text.split()")
        grandchild.end_step("")
        grandchild.finish("finished", result="split")
        child.child_finished(grandchild)
        child.end_step("split")
        child.finish("finished", result="12 words")
        run.child_finished(child)

    worker = threading.Thread(target=child_work)
    worker.start()
    worker.join()
    run.end_step("12 words")
    run.begin_step("Report.", "SUBMIT(result='12')")
    run.end_step("SUBMIT({'result': '12'})")
    run.finish("finished", result="12")


def test_sub_agents_nest_under_the_step_that_spawned_them_level_by_level(workspace):
    run = Run("parent task", config={"workspace": str(workspace)})
    dashboard = display.show_run(run, mode="widgets")
    drive_nested_run(run)

    steps = step_entries(dashboard.widget.children[2])
    assert len(steps) == 2
    first_subagents = subagent_entries(steps[0])
    assert len(first_subagents) == 1 and subagent_entries(steps[1]) == []
    child_entry = first_subagents[0]
    assert isinstance(child_entry, ipywidgets.Accordion) and child_entry.selected_index is None  # collapsed
    assert "count the words" in child_entry.titles[0] and "finished" in child_entry.titles[0]
    assert "◐ count" in text_of(child_entry)  # the sub-agent's own todos
    status, todos, orphans, pages = child_entry.children[0].children
    child_steps = [entry for page in pages.children for entry in page.children]
    assert [entry.titles[0] for entry in child_steps] == ["✓ Step 1 · Delegate deeper."]
    grandchild_entry = subagent_entries(child_steps[0])[0]
    assert "split the text" in grandchild_entry.titles[0]
    assert "parts = text.split()" in text_of(grandchild_entry)


class Wire:
    """Counts the bytes widgets send (comm opens and state updates)."""

    def __init__(self, monkeypatch):
        self.sent = 0
        original = comm.create_comm

        def create_comm(**kwargs):
            self.sent += len(json.dumps(kwargs.get("data") or {}))
            return original(**kwargs)

        def send(widget, msg, buffers=None):
            self.sent += len(json.dumps(msg))

        monkeypatch.setattr(comm, "create_comm", create_comm)
        monkeypatch.setattr(ipywidgets.Widget, "_send", send)


def test_a_late_step_costs_what_an_early_step_does(workspace, monkeypatch):
    wire = Wire(monkeypatch)
    run = Run("long run", config={"workspace": str(workspace), "max_iters": 999})
    display.show_run(run, mode="widgets")
    run.start()
    cost = {}
    for index in range(1, 5 * PAGE_SIZE + 7):
        before = wire.sent
        run.begin_step(f"Step {index} reasoning.", f"value_{index} = {index}")
        run.end_step(str(index))
        cost[index] = wire.sent - before
    run.finish("finished", result="done")
    early, late = cost[6], cost[4 * PAGE_SIZE + 6]  # both the 6th entry of their page
    assert abs(late - early) < 64, (early, late)
    assert max(cost.values()) < 2 * early + PAGE_SIZE * 64


def test_the_tree_is_patched_from_file_events_and_rescanned_for_files_code_wrote_itself(workspace, monkeypatch):
    """Tool writes show at once without re-reading the workspace; a file the agent's code wrote with
    open() shows when the tree is next scanned (at most every few seconds, and when the run ends)."""
    from deepagent_magics.core.workspace.workspace import Workspace
    from deepagent_magics.display import dashboard as dashboard_module

    monkeypatch.setattr(dashboard_module, "TREE_RESCAN_SECONDS", 3600.0)  # no time-based rescan in this test
    scans = []
    original = Workspace.tree
    monkeypatch.setattr(Workspace, "tree", lambda self, **kw: (scans.append(1), original(self, **kw))[1])
    run = Run("files", config={"workspace": str(workspace), "max_iters": 99})
    dashboard = display.show_run(run, mode="widgets")
    run.start()
    assert len(scans) == 1
    for index in range(1, 30):
        run.begin_step("Write.", f"write_file('f{index}.txt', 'x')")
        (workspace / f"f{index}.txt").write_text("x")
        run.record_file(f"f{index}.txt", 1)
        run.end_step("")
    assert len(scans) == 1, "a step must not re-read the workspace"
    assert "f29.txt" in dashboard.tree.value and dashboard.tree.value.count("● written") == 29
    (workspace / "by_open.txt").write_text("made with open()")
    assert "by_open.txt" not in dashboard.tree.value
    run.finish("finished", result="ok")
    assert "by_open.txt" in dashboard.tree.value and len(scans) == 2


def test_without_widgets_the_text_rendering_shows_each_step_then_a_summary(ip, workspace, capsys):
    ip.run_line_magic("deepagent_config", "--quiet off")
    ip.user_ns.update(sales=[10, 32], lm=ScriptedLM(SCRIPT))
    ip.run_cell("%%deepagent --lm lm\nTotal the sales and write a report")
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "] step " in line]
    assert [line.split("] ")[1][:14] for line in lines] == ["step 1/20 ✓ Pl", "step 2/20 ✓ To", "step 3/20 ✓ Do"]
    assert "finished: 3 steps, 3 LM calls" in out and "todos 2/2 completed" in out and "wrote reports/report.md" in out
    assert "Total: 42" in out  # a terminal gets the result as text
    assert "VBox" not in out


def test_the_text_rendering_marks_an_interrupted_step_as_stopped_not_done(workspace, capsys):
    run = Run("stopped", config={"workspace": str(workspace), "max_iters": 9})
    display.show_run(run, mode="text")
    run.start()
    run.begin_step("Finish this.", "x = 1")
    run.end_step("")
    run.begin_step("Long loop.", "while True: pass")
    run.finish("interrupted", error="KeyboardInterrupt")
    lines = [line for line in capsys.readouterr().out.splitlines() if " step " in line]
    assert "✓ Finish this." in lines[0] and "⏹ Long loop." in lines[1]


def test_the_text_rendering_indents_sub_agents(workspace, capsys):
    run = Run("parent task", config={"workspace": str(workspace)})
    view = display.show_run(run, mode="text")
    drive_nested_run(run)
    view.close()
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("  ↳ sub-agent") and "count the words" in out[0]
    assert any(line.startswith("    ↳ sub-agent") and "split the text" in line for line in out)
    assert any(line.startswith("    [") and "Split." in line for line in out)
    assert out[-3].startswith("finished: 2 steps (+2 sub-agents)") and out[-1] == "12"  # then the result


def test_widgets_need_a_kernel_with_a_comm_manager(ip):
    assert display.choose_mode(ip) == "text"
    assert display.choose_mode(SimpleNamespace(kernel=SimpleNamespace(comm_manager=object()))) == "widgets"
    assert display.choose_mode(ip, "widgets") == "widgets"
    assert display.choose_mode(SimpleNamespace(kernel=SimpleNamespace(comm_manager=object())), "text") == "text"
    with pytest.raises(ValueError):
        display.choose_mode(ip, "fancy")


@pytest.mark.kernel
def test_real_sub_agents_in_kernels_nest_under_their_step(workspace):
    from deepagent_magics import DeepAgent
    from deepagent_magics.interpreters.pool import KernelPool

    (workspace / "a.txt").write_text("one two")
    (workspace / "b.txt").write_text("three four five")
    def child(name):
        return [("Count.", f"n = len(open('{name}').read().split())"), ("Return.", "SUBMIT(result=str(n))")]

    lm = ScriptedLM(scripts={
        "": [("Fan out.", "counts = delegate_batched(['Count the words of a.txt', 'Count the words of b.txt'])\n"
                          "print(counts)"),
             ("Done.", "SUBMIT(result=str(counts))")],
        "words of a.txt": child("a.txt"),
        "words of b.txt": child("b.txt"),
    })
    run = Run("Tally both files")
    dashboard = display.show_run(run, mode="widgets")
    pool = KernelPool(size=2)
    try:
        DeepAgent(lm=lm, workspace=workspace, pool=pool).run(run.task, {}, run=run)
    finally:
        pool.stop()
    assert run.status == "finished", run.error
    assert run.result == "['2', '3']"
    steps = step_entries(dashboard.widget.children[2])
    nested = subagent_entries(steps[0])
    assert len(nested) == 2 and subagent_entries(steps[1]) == []
    assert sorted("a.txt" in entry.titles[0] for entry in nested) == [False, True]
    assert all("finished · 2 steps" in entry.titles[0] for entry in nested)
    assert "Count." in text_of(nested[0]) and "Return." in text_of(nested[1])
