"""The package's ``__init__``: importing it changes nothing outside it; it names the public API, loads and
unloads the IPython extension, and points Jupyter Server at the run API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import deepagent_magics

# In a fresh interpreter: what the process looks like before and after ``import deepagent_magics``. The
# libraries the package is built on are imported first: importing them configures loggers and warning
# filters of their own (urllib3's filters, dspy's and traitlets' loggers), which is theirs, not the package's.
PROBE = textwrap.dedent("""
    import json, logging, os, signal, sys, threading, warnings
    import dspy, IPython, jupyter_client

    def state():
        loggers = {name: [logger.level, [repr(h) for h in logger.handlers], logger.propagate, logger.disabled]
                   for name, logger in logging.root.manager.loggerDict.items() if isinstance(logger, logging.Logger)}
        return {
            "meta_path": [repr(finder) for finder in sys.meta_path],
            "path_hooks": [repr(hook) for hook in sys.path_hooks],
            "environ": dict(os.environ),
            "root logger": [logging.root.level, [repr(h) for h in logging.root.handlers]],
            "loggers": {name: value for name, value in loggers.items() if value != [0, [], True, False]},
            "warnings filters": [repr(entry) for entry in warnings.filters],
            "signal handlers": {str(number): repr(signal.getsignal(number))
                                for number in signal.valid_signals() if signal.getsignal(number) is not None},
            "excepthooks": [repr(sys.excepthook), repr(threading.excepthook), repr(sys.displayhook)],
        }

    before = state()
    import deepagent_magics
    after = state()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import deepagent_magics.kernel_pool
        import deepagent_magics.core.safe_fs
    print(json.dumps({"changed": {key: [before[key], after[key]] for key in before if before[key] != after[key]},
                      "old paths": [deepagent_magics.kernel_pool.KernelPool.__name__,
                                    deepagent_magics.core.safe_fs.__doc__, [str(w.message) for w in caught]]}))
""")


@pytest.mark.subprocess
def test_importing_the_package_changes_nothing_outside_it(tmp_path):
    """No environment variable (LiteLLM's price list is set by a run while it works: core/model/price_list.py),
    no import hook on ``sys.meta_path``, no log handler or level, warning filter, signal handler or hook."""
    environment = {key: value for key, value in os.environ.items() if key != "LITELLM_LOCAL_MODEL_COST_MAP"}  # conftest's
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=environment, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["changed"] == {}
    # and the old module paths still work (found through the package's own __path__), with their warning
    name, doc, warned = report["old paths"]
    assert name == "KernelPool" and doc == "Deprecated alias of deepagent_magics.core.workspace.safe_fs."
    assert warned == [
        "deepagent_magics.kernel_pool moved to deepagent_magics.interpreters.pool.pool; the old path goes away in the "
        "next release",
        "deepagent_magics.core.safe_fs moved to deepagent_magics.core.workspace.safe_fs; the old path goes away in "
        "the next release"]


def test_every_public_name_is_there():
    for name in deepagent_magics.__all__:
        assert getattr(deepagent_magics, name) is not None, name
    assert deepagent_magics.DeepAgent.__name__ == "DeepAgent" and callable(deepagent_magics.standard_extensions)


LOAD = textwrap.dedent("""
    import json, logging
    from IPython.core.interactiveshell import InteractiveShell
    from deepagent_magics.records import log_scrubbing

    shell = InteractiveShell.instance()
    seen = {"before": [log_scrubbing.installed(), "deepagent" in shell.magics_manager.magics["cell"]]}
    shell.run_line_magic("load_ext", "deepagent_magics")
    seen["loaded"] = [log_scrubbing.installed(), "deepagent" in shell.magics_manager.magics["cell"],
                      sorted(name for name in shell.magics_manager.magics["line"] if name.startswith("deepagent"))]
    shell.run_line_magic("unload_ext", "deepagent_magics")
    seen["unloaded"] = [log_scrubbing.installed()]
    print(json.dumps(seen))
""")


@pytest.mark.subprocess
def test_loading_the_extension_registers_the_magics_and_scrubs_library_logs_until_unloaded(tmp_path):
    done = subprocess.run([sys.executable, "-c", LOAD], cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["before"] == [False, False]
    scrubbing, cell_magic, line_magics = seen["loaded"]
    assert scrubbing and cell_magic and {"deepagent_config", "deepagent_trace", "deepagent_runs"} <= set(line_magics)
    assert seen["unloaded"] == [False]


def test_jupyter_server_finds_the_run_api():
    assert deepagent_magics._jupyter_server_extension_points() == [{"module": "deepagent_magics.server"}]
