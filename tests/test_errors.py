"""One family of exceptions (deepagent_magics/errors.py): the package's classes join it and keep the builtin
bases their callers catch; a `UserError` is one line at every front door (IPython's exact UsageError at
a magic, exit status 2 at the command line), and anything else keeps its traceback."""

from __future__ import annotations

import importlib
import inspect
import warnings
from pathlib import Path

import pytest
from IPython.core.error import UsageError

from deepagent_magics.errors import DeepAgentError, DeepAgentException, DeepAgentSignal, InvalidValue, UserError
from deepagent_magics.testing import ScriptedLM

PACKAGE = Path(__file__).resolve().parents[1] / "deepagent_magics"
SHIPPED_INTO_KERNELS = {"wire", "processes", "guards", "kernel_side"}  # interpreters/pool/pooled_kernel.SHIPPED


def package_exceptions() -> dict[str, type]:
    """Every exception class defined in the package, by walking its modules."""
    found = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for path in sorted(PACKAGE.rglob("*.py")):
            if path.name == "__main__.py":
                continue
            parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            for value in vars(importlib.import_module(name)).values():
                if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == name:
                    found[f"{name}.{value.__qualname__}"] = value
    return found


def test_nine_in_ten_of_the_packages_exceptions_are_one_family():
    found = package_exceptions()
    outside = sorted(name for name, cls in found.items() if not issubclass(cls, DeepAgentException))
    assert len(found) >= 40  # the walk sees them all (41 before the family, in 38 modules)
    assert len(outside) <= len(found) // 10, outside
    # Only the modules shipped as source into sub-agent kernels may stay out: they import nothing of the package.
    assert {name.split(".")[-2] for name in outside} <= SHIPPED_INTO_KERNELS, outside


def test_errors_are_exceptions_and_signals_are_not():
    from deepagent_magics.interpreters.kernel_bridge import SubAgentCancelled
    from deepagent_magics.interpreters.time_limit import ExecutionTimeout

    assert issubclass(DeepAgentError, Exception) and issubclass(UserError, DeepAgentError)
    for signal in (ExecutionTimeout, SubAgentCancelled):  # agent code's `except Exception` must not stop them
        assert issubclass(signal, DeepAgentSignal) and not issubclass(signal, Exception)
    try:
        raise DeepAgentSignal("unwind")
    except Exception:  # pragma: no cover - the point: it is not caught here
        pytest.fail("a signal was caught by except Exception")
    except DeepAgentSignal:
        pass


def test_each_class_keeps_the_builtin_base_its_callers_catch():
    from deepagent_magics.core.model.lm import NoLMError
    from deepagent_magics.core.policy.spend import CapReached
    from deepagent_magics.core.run.session import NamespaceBusy
    from deepagent_magics.core.workspace.safe_fs import NotRegularFile
    from deepagent_magics.interpreters.facade_guard import FacadeRefused
    from deepagent_magics.interpreters.pool.gateway import GatewayError
    from deepagent_magics.interpreters.pool.pooled_kernel import KernelStartError
    from dspy.primitives.code_interpreter import CodeInterpreterError

    assert issubclass(NamespaceBusy, UserError) and issubclass(NamespaceBusy, RuntimeError)
    assert issubclass(NoLMError, UserError) and issubclass(NoLMError, RuntimeError)
    assert issubclass(GatewayError, UserError) and issubclass(GatewayError, KernelStartError)
    assert issubclass(CapReached, DeepAgentError) and not issubclass(CapReached, UserError)
    assert issubclass(FacadeRefused, CodeInterpreterError) and issubclass(FacadeRefused, DeepAgentError)
    error = NotRegularFile(20, "Not a directory", "x")
    assert isinstance(error, OSError) and error.errno == 20 and isinstance(error, DeepAgentError)


# ------------------------------------------------------------------------------------ the boundaries
def test_a_user_error_from_deep_inside_is_one_usage_error_line_at_the_magic(ip, monkeypatch):
    from deepagent_magics.core.model import lm as lm_module

    def refuse(*args, **kwargs):
        raise InvalidValue("the model id is wrong\nsecond line of detail")

    ip.user_ns["lm"] = lm = ScriptedLM([("Done.", "SUBMIT(result='x')")])
    monkeypatch.setattr(lm_module, "resolve_lm", refuse)  # the magic imports it when it builds the agent
    error = ip.run_cell("%%deepagent --lm lm\ndo it").error_in_exec
    assert type(error) is UsageError and str(error) == "the model id is wrong"
    assert lm.requests == []


def test_a_bug_is_not_dressed_as_a_users_mistake(ip, monkeypatch):
    """The magic catches the family, not ValueError/TypeError/OSError: a bug keeps its traceback."""
    from deepagent_magics.core.model import lm as lm_module

    def bug(*args, **kwargs):
        raise ValueError("a bug in the package, not the user's mistake")

    ip.user_ns["lm"] = ScriptedLM([("Done.", "SUBMIT(result='x')")])
    monkeypatch.setattr(lm_module, "resolve_lm", bug)  # the magic imports it when it builds the agent
    error = ip.run_cell("%%deepagent --lm lm\ndo it").error_in_exec
    assert type(error) is ValueError


def test_a_user_error_from_deep_inside_is_one_line_and_exit_2_at_the_command_line(monkeypatch, capsys, tmp_path):
    from deepagent_magics.cli import commands, main

    def refuse(*args, **kwargs):
        raise InvalidValue("--load x=y: no such file\nand a second line")

    monkeypatch.setattr(commands, "load_variables", refuse)
    (tmp_path / "s.json").write_text('[["x", "SUBMIT(result=1)"]]')
    status = main(["run", "x", "--lm", f"scripted:{tmp_path / 's.json'}", "--workspace", str(tmp_path)])
    assert status == 2 and capsys.readouterr().err == "deepagent: error: --load x=y: no such file\n"
