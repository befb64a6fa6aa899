"""`deferred`'s parts: which files and callables are a library's, whose code registered something, the names
it shows and the cell's line. Through real runs: tests/adversarial/test_deferred_actions.py."""

from __future__ import annotations

import os
import socketserver
import sys
import threading
import time
import types

from deepagent_magics.interpreters.runtime_checks.deferred import Deferred, Origin, host_owned, name_of, summary


def caller_frame(code_text: str, filename: str):
    namespace: dict = {}
    exec(compile(code_text, filename, "exec"), namespace)
    return namespace["frame"]


def test_a_library_file_is_outside_the_workspace_and_older_than_the_run(tmp_path):
    old = tmp_path / "old.py"
    old.write_text("x = 1\n")
    inside = tmp_path / "ws" / "mod.py"
    inside.parent.mkdir()
    inside.write_text("x = 1\n")
    origin = Origin(str(tmp_path / "ws"), time.time() + 1)
    assert origin.library_file(str(old)) and origin.library_file(os.__file__)
    assert not origin.library_file(str(inside))  # the workspace is the agent's
    assert not Origin(None, 0).library_file(str(old))  # written since the run began
    assert not origin.library_file("<string>") and not origin.library_file(str(tmp_path / "missing.py"))


def test_whose_code_registered_it(tmp_path):
    origin = Origin(str(tmp_path), time.time())
    import sys as _sys
    step = caller_frame("import sys\nframe = sys._getframe()", "<agent step 3>")
    assert origin.registrar_is_agent(step)
    compiled_in_a_step = caller_frame("import sys\nframe = eval(compile('sys._getframe()', '<string>', 'eval'))",
                                      "<agent step 4>")
    assert origin.registrar_is_agent(compiled_in_a_step)
    assert not origin.registrar_is_agent(_sys._getframe())  # this test file: a library's, as far as a run knows


def test_library_things_and_the_agents():
    origin = Origin(None, time.time())
    assert origin.library_thing(os.path.join) and origin.library_thing(Deferred)
    planted: dict = {}
    exec(compile("def hook(*a): pass\nclass Finder:\n    def find_spec(self, *a): pass", "<agent step 1>", "exec"),
         planted)
    assert not origin.library_thing(planted["hook"]) and not origin.library_thing(planted["Finder"]())
    assert not origin.library_thing(print)  # a builtin takes whatever arguments it was given
    forged = type("Finder", (), {"__module__": "json", "find_spec": planted["hook"]})
    assert not origin.library_thing(forged())  # its methods say whose it is, not its __module__
    # A method bound to a library's object is the library's (a server's request thread); the agent's method, or
    # a library's method bound to the agent's object, is not.
    assert origin.library_thing(threading.Event().wait)
    assert origin.library_thing(socketserver.ThreadingTCPServer)  # its server_close calls super(): a __class__ cell
    assert not origin.library_thing(planted["Finder"]().find_spec)
    assert not origin.library_thing(types.MethodType(threading.Event.wait, planted["Finder"]()))
    assert not origin.library_thing(types.MethodType(planted["hook"], threading.Event()))


def test_host_owned_is_this_packages_functions_only():
    assert host_owned(summary) and host_owned(Deferred.settle)
    assert not host_owned(os.path.join)
    assert not host_owned(type("X", (), {"__module__": "deepagent_magics.interpreters.shell"})())


def test_a_name_is_read_without_running_the_agents_code():
    class Hostile:
        def __repr__(self):
            raise AssertionError("ran")

        def __getattr__(self, name):
            raise AssertionError("ran")

    assert name_of(Hostile()) == "Hostile object"
    assert name_of(os.remove) == "posix.remove" and name_of(sys.exit) == "sys.exit"
    weird = type("a\x1b[2Jb" + "x" * 200, (), {})
    assert "\x1b" not in name_of(weird()) and len(name_of(weird())) <= 80


def test_the_cells_line():
    assert summary({"removed": ["atexit posix.remove"]}) == \
        "deepagent: removed what the agent's code left to run later: atexit posix.remove"
    line = summary({"kept": [f"atexit f{i}" for i in range(9)]})
    assert "kept" in line and "and 3 more" in line and "f6" not in line
