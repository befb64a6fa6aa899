"""The end of a run restores the user's namespace whatever failed before (issue 21, item 5).

The root agent's code runs in the notebook's namespace with ``SUBMIT``, the tools, DSPy's facade
(``dspy``, the ``_dspy*`` helpers, its own ``__builtins__``) bound for the run. Its code can reach
the run's provenance tracker through ``gc`` and make it raise, put keys in the namespace that are
not names, or leave a thread changing the namespace while the run ends: none of it may leave the
run's bindings in the user's namespace (the user's next ``import dspy`` would get the facade).
Real InteractiveShell, the magic, a scripted model.
"""

from __future__ import annotations

import sys

import pytest

from deepagent_magics.testing import ScriptedLM

SABOTAGE = {
    "the tracker's finish raises": (
        "import gc\n"
        "def boom():\n    raise RuntimeError('sabotaged finish')\n"
        "for obj in gc.get_objects():\n"
        "    if type(obj).__name__ == 'Tracker' and hasattr(obj, 'finish'):\n"
        "        obj.finish = boom\n"
    ),
    "both tracker calls raise": (
        "import gc\n"
        "def boom(*args):\n    raise RuntimeError('sabotaged')\n"
        "for obj in gc.get_objects():\n"
        "    if type(obj).__name__ == 'Tracker' and hasattr(obj, 'finish'):\n"
        "        obj.finish = obj.restored = boom\n"
    ),
    "keys that are not names": (
        "class OddName(str):\n"
        "    def startswith(self, *args):\n        raise RuntimeError('not a name')\n"
        "globals()[1] = 'one'\n"
        "globals()[OddName('print')] = 'shadow'\n"
    ),
}


@pytest.mark.parametrize("attack", list(SABOTAGE), ids=list(SABOTAGE))
def test_the_users_namespace_is_restored_whatever_the_agents_code_broke(ip, attack):
    ip.run_cell("import dspy\nmine = [1, 2]").raise_error()
    original_builtins = ip.user_ns["__builtins__"]
    ip.user_ns["lm"] = ScriptedLM([
        ("Break the end of the run.", SABOTAGE[attack] + "mine = 'the agent was here'\nnew_name = 42"),
        ("Done.", "SUBMIT(result='done')"),
    ])
    ip.run_cell("%%deepagent --lm lm\nwork").raise_error()
    namespace = ip.user_ns

    run = namespace["_deepagent_run"]
    assert run.status == "finished", run.error
    assert namespace["dspy"] is sys.modules["dspy"]
    assert namespace["__builtins__"] is original_builtins
    assert namespace["mine"] == [1, 2] and run.reverted["mine"] == "the agent was here"
    assert namespace["new_name"] == 42  # what the agent created stays
    left = [name for name in namespace if isinstance(name, str) and (
        name in ("SUBMIT", "write_todos", "read_file", "write_file", "llm_query", "delegate")
        or name.startswith("_dspy"))]
    assert left == []
    assert "print" not in namespace  # a builtin's name the agent bound is taken away, even that odd key
    ip.run_cell("import sys\nimport dspy as again\nsame = again is sys.modules['dspy']").raise_error()
    assert namespace["same"] is True
