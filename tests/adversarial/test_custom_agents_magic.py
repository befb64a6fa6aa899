"""``%%deepagent_agent``, ``%deepagent_agents`` and ``--tools`` from a real shell (issue 16, parts 1, 2, bad input).

The promise: a type defined in a cell is delegated to by name from a ``%%deepagent`` cell; its
notebook function runs on the host (the notebook's own list changes) and its own LM drives it.
Every mistake (a name that is not an identifier or is a packaged profile, a tool that is not a
notebook callable or has no docstring, an LM that cannot be resolved, no description, no
instructions) is exactly one ``UsageError`` line and registers nothing; a failed redefinition
keeps the type that was there.
"""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from deepagent_magics.interpreters.pool import stop_default_pool
from deepagent_magics.magics import agents
from deepagent_magics.testing import ScriptedLM

TOOLS_SOURCE = '''
tally_log = []

def tally(n: int) -> int:
    """Add n to the notebook's tally; return the new total."""
    tally_log.append(n)
    return sum(tally_log)

async def atally(n: int) -> int:
    """Async: add n to the tally; return the new total."""
    tally_log.append(n)
    return sum(tally_log)

def broken(x: int) -> int:
    """Always raises."""
    raise KeyError(f"no key {x}")

def nodoc(x):
    return x

def quitter() -> str:
    """Calls sys.exit."""
    import sys
    sys.exit(3)

async def abroken() -> str:
    """Async, and raises."""
    raise ValueError("async failure")

class Callable:
    """A documented class whose instances are callable."""
    def __call__(self, x):
        return x

instance = Callable()
alias = tally

number = 42
'''


@pytest.fixture
def shell(ip):
    core = ip.magics_manager.registry["DeepAgentMagics"]
    core.agent_types = {}
    ip.run_cell(TOOLS_SOURCE)
    yield ip
    core.agent_types = {}


def listed(shell, capsys) -> str:
    capsys.readouterr()
    shell.run_line_magic("deepagent_agents", "")
    return capsys.readouterr().out


@pytest.mark.kernel
def test_a_cell_delegates_to_a_type_defined_in_a_cell_whose_tool_runs_in_the_notebook(shell, capsys):
    shell.run_line_magic("deepagent_config", "--pool-size 1")
    try:
        shell.user_ns["cheap"] = ScriptedLM(scripts={"TALLY-CHILD": [
            ("Tally on the host.", "t = tally(5)\nt2 = atally(6)\nprint(t, t2)"),
            ("Report.", "SUBMIT(result=f'totals {t} {t2}')")]})
        shell.user_ns["main"] = ScriptedLM(scripts={"TALLY-ROOT": [
            ("Delegate.", "r = delegate('TALLY-CHILD: tally five', agent='tallier')\nprint(r)"),
            ("A plain one too.", "p = delegate('PLAIN-CHILD: tally two')\nprint(p)"),
            ("Done.", "SUBMIT(result=r)")],
            "PLAIN-CHILD": [("The cell's tool.", "t = tally(2)\nSUBMIT(result=str(t))")]})
        shell.run_cell_magic("deepagent_agent", "tallier --description 'keeps the tally' --tools tally,atally "
                             "--lm cheap --max-iters 4", "You keep the notebook's tally with tally(n).")
        assert "defined sub-agent type 'tallier'; tools: tally, atally" in capsys.readouterr().out
        shell.run_cell_magic("deepagent", "--lm main --out answer --tools tally", "TALLY-ROOT: tally via the tallier")
        assert shell.user_ns["answer"] == "totals 5 11"
        assert shell.user_ns["tally_log"] == [5, 6, 2]  # the notebook's own list: the tools ran on the host
        assert shell.user_ns["_deepagent_run"].steps[1].children[0].result == "13"  # --tools reach sub-agents too
        assert shell.user_ns["cheap"].requests  # the type's LM drove the sub-agent
        assert not any("TALLY-CHILD: tally five" in r["user"] and "TALLY-ROOT" not in r["user"]
                       for r in shell.user_ns["main"].requests)
        root_prompt = shell.user_ns["main"].requests[0]["user"]  # what the run has
        assert "- tallier: keeps the tally (tools: tally, atally)" in root_prompt
    finally:
        stop_default_pool()


def test_agents_lists_packaged_and_yours_and_removes_yours(shell, capsys):
    shell.run_cell_magic("deepagent_agent", "summer --description 'adds numbers' --tools tally", "Add.")
    out = listed(shell, capsys)
    for name in ("default", "coder", "researcher", "reviewer", "summer"):
        assert name in out
    assert "adds numbers" in out and "tally" in out
    shell.run_line_magic("deepagent_agents", "--remove summer")
    assert "summer" not in listed(shell, capsys)
    for line in ("--remove summer", "--remove coder", "--remove '../x'"):
        with pytest.raises(UsageError) as info:
            shell.run_line_magic("deepagent_agents", line)
        assert "\n" not in str(info.value)


BAD_DEFINITIONS = [
    ("--description x", "give the type a name"),
    ("not-an-id --description x", "is not an identifier"),
    ("9lives --description x", "is not an identifier"),
    ("lambda --description x", "is not an identifier"),
    ("coder --description x", "is a packaged profile"),
    ("default --description x", "is a packaged profile"),
    ("t1", "needs --description"),
    ("t1 --description ''", "needs --description"),
    ("t1 --description x --tools missing_fn", "there is no notebook variable 'missing_fn'"),
    ("t1 --description x --tools number", "is a int, not a function"),
    ("t1 --description x --tools nodoc", "has no docstring"),
    ("t1 --description x --tools tally,nodoc", "has no docstring"),
    ("t1 --description x --tools 'os.system'", "not a function name"),
    ("t1 --description x --tools read_file", "built-in tool's name"),
    ("t1 --description x --lm nomodel", "--lm nomodel"),
    ("t1 --description x --lm number", "--lm number"),
    ("t1 --description x --max-iters 0", "--max-iters must be positive"),
    ("t1 --description x --tools instance", "not a function"),
    ("t1 --description x --tools Callable", "not a function"),
    ("t1 --description x --tools SUBMIT", "built-in tool's name"),
    ("t1 --description x --tools task", "built-in tool's name"),
    ("t1 --description 'unclosed", "close the quotation"),
]


@pytest.mark.parametrize("line,message", BAD_DEFINITIONS)
def test_a_bad_definition_is_one_line_and_registers_nothing(shell, capsys, line, message):
    shell.run_cell_magic("deepagent_agent", "keeper --description 'the one that stays' --tools tally", "Keep.")
    before = dict(shell.magics_manager.registry["DeepAgentMagics"].agent_types)
    with pytest.raises(UsageError) as info:
        shell.run_cell_magic("deepagent_agent", line, "Instructions.")
    assert type(info.value) is UsageError and "\n" not in str(info.value)
    assert message in str(info.value), str(info.value)
    assert shell.magics_manager.registry["DeepAgentMagics"].agent_types == before


def test_an_empty_body_or_a_failed_redefinition_keeps_what_was_there(shell):
    shell.run_cell_magic("deepagent_agent", "keeper --description 'stays' --tools tally", "Keep.")
    before = dict(shell.magics_manager.registry["DeepAgentMagics"].agent_types)
    for line, body in (("keeper --description x", "   \n"), ("keeper --description x --tools nodoc", "New.")):
        with pytest.raises(UsageError):
            shell.run_cell_magic("deepagent_agent", line, body)
    assert shell.magics_manager.registry["DeepAgentMagics"].agent_types == before


def test_root_tools_from_the_cell_errors_are_text_async_awaited_bad_names_one_line(shell):
    shell.user_ns["lm"] = ScriptedLM([
        ("Use the tools.", "a = tally(2)\nb = atally(3)\nc = broken(7)\nprint(a, b, c)"),
        ("Done.", "SUBMIT(result=repr((a, b, c)))")])
    shell.run_cell_magic("deepagent", "--lm lm --out answer --max-depth 0 --tools tally,atally,broken", "Use tools")
    a, b, c = eval(shell.user_ns["answer"])  # noqa: S307 - our own repr
    assert (a, b) == (2, 5) and c.startswith("Error: broken() raised KeyError:") and "no key 7" in c
    assert shell.user_ns["tally"].__doc__.startswith("Add n")  # the user's function is back after the run
    for line in ("--tools nodoc", "--tools missing_fn", "--tools number", "--tools 'a b'"):
        with pytest.raises(UsageError) as info:
            shell.run_cell_magic("deepagent", f"--lm lm {line}", "task")
        assert type(info.value) is UsageError and "\n" not in str(info.value)


def test_config_tools_are_checked_and_a_bad_one_changes_nothing(shell):
    core = shell.magics_manager.registry["DeepAgentMagics"]
    shell.run_line_magic("deepagent_config", "--tools tally")
    assert core.tools == ["tally"]
    with pytest.raises(UsageError, match="has no docstring"):
        shell.run_line_magic("deepagent_config", "--tools tally,nodoc")
    assert core.tools == ["tally"]
    shell.run_line_magic("deepagent_config", "--tools off")
    assert core.tools == []


def test_aliases_exits_async_errors_and_vanished_or_redefined_functions(shell, capsys):
    shell.user_ns["lm"] = ScriptedLM([
        ("Use them.", "a = alias(4)\nq = quitter()\nb = abroken()\nprint(a, q, b)"),
        ("Done.", "SUBMIT(result=repr((a, q, b)))")])
    shell.run_cell_magic("deepagent", "--lm lm --out answer --max-depth 0 --tools alias,quitter,abroken", "go")
    a, q, b = eval(shell.user_ns["answer"])  # noqa: S307 - our own repr
    assert a == 4 and shell.user_ns["tally_log"] == [4]  # an alias is a tool under the notebook's name
    assert q.startswith("Error: quitter() raised SystemExit") and b == "Error: abroken() raised ValueError: async failure"
    shell.run_line_magic("deepagent_config", "--tools tally")
    del shell.user_ns["tally"]
    with pytest.raises(UsageError) as info:
        shell.run_cell_magic("deepagent", "--lm lm", "task")
    assert "there is no notebook variable 'tally'" in str(info.value)
    shell.run_line_magic("deepagent_config", "--tools off")
    shell.run_cell('def tally(n: int) -> int:\n    "Add n."\n    return -n')
    shell.run_cell_magic("deepagent_agent", "again --description 'again' --tools tally", "Again.")
    shell.run_cell('def tally(n: int) -> int:\n    "Redefined."\n    return 1000 + n')
    [kind] = agents.type_list(shell.magics_manager.registry["DeepAgentMagics"], shell.user_ns)
    assert kind.tools[0](1) == 1001  # the function as the notebook has it now
