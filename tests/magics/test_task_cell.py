"""magics/task_cell.py: %%deepagent and %deepagent_config end to end, through a real InteractiveShell."""

from __future__ import annotations

import dspy
import pytest
from IPython.core.error import UsageError

from deepagent_magics.testing import ScriptedLM

QUICK_SCRIPT = [
    (
        "Look at the notebook variable and plan.",
        "print(len(sales))\n"
        "write_todos([{'content': 'total the sales', 'status': 'in_progress'},"
        " {'content': 'write the report', 'status': 'pending'}])",
    ),
    (
        "Compute, write the report and read it back.",
        "total = sum(row['amount'] for row in sales)\n"
        "write_file('report.md', f'# Report\\nTotal: {total}\\n')\n"
        "print(read_file('report.md'))",
    ),
    (
        "Mark the plan done and submit.",
        "write_todos([{'content': 'total the sales', 'status': 'completed'},"
        " {'content': 'write the report', 'status': 'completed'}])\n"
        "SUBMIT(result=f'Total sales: {total}')",
    ),
]


def setup_notebook(ip, steps=QUICK_SCRIPT):
    ip.user_ns["sales"] = [{"region": "N", "amount": 10}, {"region": "S", "amount": 32}]
    ip.user_ns["lm"] = ScriptedLM(steps)
    ip.run_cell("import dspy\ndef ls():\n    return 'the user ls'")


def test_a_cell_reads_the_notebook_writes_files_and_todos_and_stores_its_result(ip, workspace):
    setup_notebook(ip)
    before = {name: ip.user_ns[name] for name in ("sales", "dspy", "ls", "lm")}

    result = ip.run_cell("%%deepagent --lm lm --out summary\nTotal the sales and write report.md")

    assert result.error_in_exec is None and result.error_before_exec is None
    ns = ip.user_ns
    assert ns["summary"] == "Total sales: 42"
    assert ns["total"] == 42  # the agent's variable stays in the notebook
    assert (workspace / "report.md").read_text() == "# Report\nTotal: 42\n"
    run = ns["_deepagent_run"]
    assert run.status == "finished" and len(run.steps) == 3
    assert run.todos == [
        {"content": "total the sales", "status": "completed"},
        {"content": "write the report", "status": "completed"},
    ]
    assert "Total: 42" in run.steps[1].output
    for name, value in before.items():  # the user's bindings are untouched
        assert ns[name] is value, name
    assert ns["ls"]() == "the user ls"
    assert "SUBMIT" not in ns and "write_todos" not in ns


def test_the_prompt_describes_the_notebook_variables_without_the_data(ip):
    ip.user_ns["big"] = list(range(200_000))
    setup_notebook(ip)
    ip.run_cell("%%deepagent --lm lm\nsummarise")
    first_request = ip.user_ns["lm"].requests[0]["user"]
    assert "sales: list, 2 items" in first_request
    assert "big: list, 200,000 items" in first_request
    assert "199999" not in first_request


def test_the_task_interpolates_notebook_values_unless_told_not_to(ip):
    setup_notebook(ip)
    ip.user_ns["region"] = "North"
    ip.run_cell("%%deepagent --lm lm\nLook at {region} only; braces {{like this}} stay")
    assert ip.user_ns["_deepagent_run"].task.strip() == "Look at North only; braces {like this} stay"
    setup_notebook(ip)
    ip.run_cell("%%deepagent --lm lm --no-interpolate\nLook at {region}")
    assert ip.user_ns["_deepagent_run"].task.strip() == "Look at {region}"


@pytest.mark.parametrize(
    "line, cell, message",
    [
        ("--bogus", "task", "unrecognized arguments: --bogus"),
        ("--max-iters many", "task", "invalid int value"),
        ("--max-iters 0", "task", "--max-iters must be positive"),
        ("--lm lm", "use {missing}", "{missing} in the cell is not a notebook variable"),
        ("--lm lm", "   ", "The cell is empty"),
        ("--lm lm --profile nope", "task", "unknown profile 'nope'"),
        ("--lm lm --out 2bad", "task", "not a valid variable name"),
        ("--lm notamodel", "task", "is not a model id"),
    ],
)
def test_user_mistakes_are_one_line_usage_errors_and_run_nothing(ip, line, cell, message, capsys):
    setup_notebook(ip)
    result = ip.run_cell(f"%%deepagent {line}\n{cell}")
    error = result.error_in_exec or result.error_before_exec
    assert type(error).__name__ == "UsageError"
    assert message in str(error) and "\n" not in str(error)
    assert "Traceback" not in capsys.readouterr().out
    assert ip.user_ns["lm"].requests == []
    assert "_deepagent_run" not in ip.user_ns


def test_without_any_lm_the_error_says_how_to_set_one(ip):
    result = ip.run_cell("%%deepagent\ndo something")
    error = result.error_in_exec
    assert type(error).__name__ == "UsageError"
    assert "--lm" in str(error) and "dspy.configure" in str(error) and "DEEPAGENT_LM" in str(error)


def test_the_lm_is_resolved_cell_then_config_then_dspy_then_environment(ip, monkeypatch, workspace):
    cell_lm, config_lm, dspy_lm = (ScriptedLM(["SUBMIT(result=name)"]) for _ in range(3))
    ip.user_ns.update(cell_lm=cell_lm, config_lm=config_lm)
    ip.run_line_magic("deepagent_config", "--lm config_lm")
    with dspy.context(lm=dspy_lm):
        ip.user_ns["name"] = "x"
        ip.run_cell("%%deepagent --lm cell_lm\nt")
        assert len(cell_lm.requests) == 1 and not config_lm.requests
        ip.run_cell("%%deepagent\nt")
        assert len(config_lm.requests) == 1 and not dspy_lm.requests
        ip.run_line_magic("deepagent_config", "--reset")
        ip.run_line_magic("deepagent_config", f"--quiet on --workspace {workspace}")
        ip.run_cell("%%deepagent\nt")
        assert len(dspy_lm.requests) == 1
    monkeypatch.setenv("DEEPAGENT_LM", "openai/from-env")
    agent = ip.find_cell_magic("deepagent").__self__.build_agent(
        type("Args", (), {name: None for name in ("lm", "sub_lm", "workspace", "max_iters",
                                                   "max_llm_calls", "profile", "timeout", "quiet")})()
    )
    assert agent.lm.model == "openai/from-env"


def test_config_sets_defaults_also_through_traitlets(ip, capsys):
    ip.run_line_magic("deepagent_config", "--max-iters 7 --timeout 3")
    magics = ip.find_cell_magic("deepagent").__self__
    assert magics.max_iters == 7 and magics.timeout == 3
    ip.run_cell("%config DeepAgentMagics.max_llm_calls = 9")
    assert magics.max_llm_calls == 9
    ip.run_line_magic("deepagent_config", "")
    shown = capsys.readouterr().out
    assert "max_iters      7" in shown and "max_llm_calls  9" in shown
    result = ip.run_cell("%deepagent_config --max-iters -1")
    assert "must be positive" in str(result.error_in_exec)


def test_max_iters_from_the_cell_bounds_the_run(ip):
    setup_notebook(ip, steps=["x = 1"] * 10)
    ip.user_ns["lm"] = ScriptedLM(["print('step')"] * 10, replies="extracted answer")
    ip.run_cell("%%deepagent --lm lm --max-iters 3 --out r\nloop")
    run = ip.user_ns["_deepagent_run"]
    assert len(run.steps) == 3
    assert ip.user_ns["r"] == "extracted answer"  # RLM's extract fallback after the last iteration


def test_an_agent_failure_keeps_variables_files_and_trajectory(ip, workspace):
    class Boom(ScriptedLM):
        calls = 0

        def __call__(self, *args, **kwargs):
            Boom.calls += 1
            if Boom.calls == 3:
                raise RuntimeError("provider unavailable")
            return super().__call__(*args, **kwargs)

    ip.user_ns["lm"] = Boom(["kept = 'yes'", "write_file('partial.md', 'half')", "SUBMIT(result='never')"])
    result = ip.run_cell("%%deepagent --lm lm\nwork")
    error = result.error_in_exec
    assert type(error) is UsageError and "provider unavailable" in str(error)  # exactly: IPython prints one line
    run = ip.user_ns["_deepagent_run"]
    assert run.status == "failed" and len(run.steps) == 2
    assert ip.user_ns["kept"] == "yes"
    assert (workspace / "partial.md").read_text() == "half"


def test_an_interrupt_stops_the_run_keeps_the_trajectory_and_reraises(ip):
    ip.user_ns["lm"] = ScriptedLM(
        ["before = 1", "import _thread\n_thread.interrupt_main()  # as a frontend's interrupt arrives\nimport time\n"
         "time.sleep(5)\nafter = 1", "SUBMIT(result='no')"]
    )
    ip.run_cell("import dspy")
    saved_dspy = ip.user_ns["dspy"]
    result = ip.run_cell("%%deepagent --lm lm\nwork")
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    run = ip.user_ns["_deepagent_run"]
    assert run.status == "interrupted"
    assert len(run.steps) == 2 and run.steps[1].output == "(interrupted)"
    assert ip.user_ns["before"] == 1 and "after" not in ip.user_ns
    assert ip.user_ns["dspy"] is saved_dspy and "SUBMIT" not in ip.user_ns


def test_a_cell_refused_because_a_run_is_busy_leaves_the_running_ones_record_in_place(ip):
    """A second %%deepagent started while one runs (here: from the agent's own code) is refused in one
    line, and `_deepagent_run` and `%deepagent_runs` still hold the run that ran, not the refused one."""
    steps = [
        ("Start another run.", "try:\n    get_ipython().run_cell_magic('deepagent', '--lm lm', 'nested task')\n"
                               "except Exception as exc:\n    print(type(exc).__name__, exc)"),
        ("Done.", "SUBMIT(result='outer done')"),
    ]
    ip.user_ns["lm"] = ScriptedLM(steps)
    ip.run_cell_magic("deepagent", "--lm lm", "outer task")
    run = ip.user_ns["_deepagent_run"]
    assert run.task == "outer task" and run.status == "finished"
    assert run.steps[0].output.startswith("UsageError another agent run"), run.steps[0].output
    magics = ip.magics_manager.registry["DeepAgentMagics"]
    assert [r.task for r in magics.runs][-1] == "outer task"
    assert "nested task" not in [r.task for r in magics.runs]
