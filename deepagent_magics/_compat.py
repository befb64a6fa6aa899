"""Old import paths (before the package had rooms) keep working for this release, with a warning.

``import deepagent_magics.kernel_pool`` gives a module holding the names of the modules
that replaced it, and a `DeprecationWarning` that names the new path.

Nothing outside the package changes for it: no finder joins ``sys.meta_path`` (which every
import in the process would ask). A package whose old submodules moved lists one more entry on
its own ``__path__``, `OLD_PATHS` (its ``__init__`` says ``__path__ = old_paths(__path__)``, so that
no package is imported for it before it is used), and only the search for that package's
submodules reaches the finder kept for that entry, after the package's own folder has no such module.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys
import types
import warnings

# old module -> the modules its names now live in (the first is the one to import instead)
MOVED = {
    "agent": ["core.loop.agent", "interpreters.shell"],
    "run": ["core.run.run", "interpreters.step_execution"],
    "session": ["core.run.session", "core.loop.tool_binding"],
    "observer": ["core.loop.pipeline", "core.model.usage_sink"],
    "lm": ["core.model.lm"],
    "namespace": ["core.loop.variables"],
    "profiles": ["core.loop.profiles"],
    "workspace": ["core.workspace.workspace"],
    "shell_interpreter": ["interpreters.shell", "interpreters.time_limit", "core.loop.agent"],
    "capture": ["interpreters.capture"],
    "kernel_interpreter": ["interpreters.kernel", "core.loop.agent"],
    "kernel_side": ["interpreters.kernel_side"],
    "kernel_pool": ["interpreters.pool.pool", "interpreters.pool.pooled_kernel", "interpreters.pool.lifecycle"],
    "delegation": ["tools.delegation.tools", "tools.delegation.supervise", "tools.delegation.subagent",
                   "tools.delegation.child", "tools.delegation.tree", "tools.delegation.verdict"],
    "dashboard": ["display.dashboard", "display.markup"],
    "export": ["records.export"],
    "inspect_magics": ["magics.inspect"],
    "prompt_magics": ["magics.prompts", "magics.tuning"],
    "evaluate": ["tuning.evaluate", "tuning.examples", "tuning.systems", "tuning.progress"],
    "optimize": ["tuning.optimize"],
    "programs": ["tuning.programs"],
    "demo": ["demos.quickstart"],
    "optimize_demo": ["demos.optimize"],
    # before core/ had rooms (issue 19); core.run and core.workspace are the rooms' packages now
    **{f"core.{old}": [f"core.{new}"] for old, new in {
        "safe_fs": "workspace.safe_fs", "patterns": "workspace.patterns", "skills": "workspace.skills",
        "redaction": "run.secrets", "session": "run.session", "stopping": "run.stopping",
        "threads": "run.conversations", "spend": "policy.spend", "approval": "policy.approval",
        "risk": "policy.risk", "risk_tables": "policy.risk_tables", "steering": "policy.steering",
        "undo": "policy.undo", "fingerprint": "policy.fingerprint", "lm": "model.lm",
        "lm_requests": "model.facade_requests", "caching": "model.caching", "retries": "model.retries",
        "replies": "model.replies", "streaming": "model.streaming",
        "query_streaming": "model.streaming", "failures": "model.failures",
        "compaction": "model.compaction", "agent": "loop.agent", "observer": "loop.pipeline",
        "attempts": "loop.attempts", "ending": "loop.ending", "namespace": "loop.variables",
        "profiles": "loop.profiles", "calling": "loop.tool_binding", "notebook_tools": "loop.notebook_tools",
        "subagent_types": "loop.subagent_types", "extensions": "loop.extensions"}.items()},
    "core.observer": ["core.loop.pipeline", "core.model.usage_sink"],
    "records.redaction": ["core.run.secrets"],
    "records.threads": ["records.conversations"],
    "tools.mcp": ["tools.mcp_servers"],
    "interpreters.pool.kernel": ["interpreters.pool.pooled_kernel"],
    "magics.run": ["magics.task_cell"],
    "magics.base": ["magics.configured"],
    # names that did not say what the module holds (issue 26)
    "magics.arguments": ["magics.inputs.flags", "magics.inputs.interpolation", "magics.inputs.out_name",
                         "magics.inputs.folders", "magics.inputs.connections", "magics.inputs.lm_option_flags"],
    "magics.control": ["magics.changes", "magics.inputs.approval_flags"],
    "interpreters.steps": ["interpreters.step_execution"],
    "records.shape": ["records.well_formed"],
    "core.run.model_text": ["safe_text"],
    # a step's and a query's streaming, one module (issue 26)
    "core.model.step_streaming": ["core.model.streaming"],
    "core.model.query_streaming": ["core.model.streaming"],
}
PACKAGE = __name__.rpartition(".")[0]


class _MovedLoader(importlib.abc.Loader):
    def __init__(self, old: str):
        self.old = old

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return types.ModuleType(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        targets = [f"{PACKAGE}.{name}" for name in MOVED[self.old]]
        warnings.warn(f"{PACKAGE}.{self.old} moved to {targets[0]}; the old path goes away in the next release",
                      DeprecationWarning, stacklevel=2)
        for target in reversed(targets):  # the first module's names win
            new = importlib.import_module(target)
            module.__dict__.update({k: v for k, v in vars(new).items() if not k.startswith("__")})
        module.__doc__ = f"Deprecated alias of {targets[0]}."


class _MovedFinder:
    """The path entry finder of `OLD_PATHS`: a spec for a moved module, None for any other name."""

    def find_spec(self, fullname: str, target=None):
        package, _, old = fullname.partition(".")
        if package != PACKAGE or old not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, _MovedLoader(old))

    def invalidate_caches(self) -> None:
        pass  # nothing cached: importlib.invalidate_caches() keeps this finder


# An absolute path (importlib drops relative entries from its cache) that is no folder: only this finder serves it.
OLD_PATHS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "<old import paths>")


def old_paths(path: list[str]) -> list[str]:
    """A package's ``__path__`` with `OLD_PATHS` after its own folder (a package whose old modules moved)."""
    sys.path_importer_cache.setdefault(OLD_PATHS, _MovedFinder())
    return path if OLD_PATHS in path else [*path, OLD_PATHS]
