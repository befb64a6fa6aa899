"""The names `risk` looks for (which module, function or method falls under which rule), and the rule set.

Kept apart from the analysis so that the lists can grow without touching the logic.
A qualified name is dotted from its module (``os.remove``, ``subprocess.run``); aliases
of modules (``posix`` for ``os``, ``builtins.exec`` for ``exec``) are folded first.
"""

from __future__ import annotations

from typing import Any

from ...errors import UserError

RULES = {
    "deletes_variable": "deletes or rebinds one of your variables",
    "removes_files": "removes or moves files",
    "writes_outside_workspace": "writes a file outside the workspace",
    "starts_process": "starts processes (subprocess, os.system, !cmd, %%bash)",
    "network": "touches the network (requests, urllib, httpx, socket)",
    "installs_packages": "installs packages (pip, conda)",
    "dynamic_code": "runs exec/eval on a computed string, or reaches a module by a computed name",
    "subagents": "starts sub-agents (delegate, delegate_batched), which cost money",
    "controls": "reaches the agent's own controls (deepagent_magics, gc, ctypes, frames, builtins.input)",
}

NAMESPACE = "<namespace>"  # globals(), vars(), get_ipython().user_ns, __main__.__dict__

MODULE_ALIASES = {"posix": "os", "nt": "os", "_io": "io", "_socket": "socket", "_posixsubprocess": "subprocess",
                  "builtins": "", "__builtins__": "", "pathlib.PosixPath": "pathlib.Path",
                  "pathlib.WindowsPath": "pathlib.Path"}

# Whole modules: any use of them (an import, an attribute) is risky.
MODULE_RULES = {
    "subprocess": "starts_process",
    "pty": "starts_process",
    "multiprocessing": "starts_process",
    "concurrent.futures.ProcessPoolExecutor": "starts_process",
    "asyncio.create_subprocess_exec": "starts_process",
    "asyncio.create_subprocess_shell": "starts_process",
    "sh": "starts_process",
    "pexpect": "starts_process",
    "requests": "network",
    "urllib": "network",
    "urllib3": "network",
    "httpx": "network",
    "socket": "network",
    "http.client": "network",
    "aiohttp": "network",
    "ftplib": "network",
    "smtplib": "network",
    "telnetlib": "network",
    "paramiko": "network",
    "websocket": "network",
    "websockets": "network",
    "pip": "installs_packages",
    "ensurepip": "installs_packages",
    "micropip": "installs_packages",
    "deepagent_magics": "controls",  # approval, the run, the interpreter: code that could approve itself
    "gc": "controls",
    "ctypes": "controls",
    "sys._getframe": "controls",
    "sys.settrace": "controls",
    "sys.setprofile": "controls",
    "inspect.currentframe": "controls",
    "inspect.stack": "controls",
    "inspect.getouterframes": "controls",
    "_deepagent_run": "controls",
}

PROCESS_FUNCTIONS = {"os.system", "os.popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.posix_spawnp",
                     "os.startfile", "os.kill", "os.killpg"}
PROCESS_PREFIXES = ("os.exec", "os.spawn")
REMOVE_FUNCTIONS = {"os.remove", "os.unlink", "os.rmdir", "os.removedirs", "os.rename", "os.renames",
                    "os.replace", "os.truncate", "shutil.rmtree", "shutil.move", "send2trash.send2trash"}
REMOVE_METHODS = {"unlink", "rmdir", "rmtree"}  # Path.unlink(); .rename/.replace are too common (DataFrame, str)
DYNAMIC_CALLS = {"exec", "eval", "compile", "__import__", "importlib.import_module", "runpy.run_path",
                 "runpy.run_module", "importlib.__import__"}
NAMESPACE_METHODS = {"pop", "popitem", "clear", "update", "setdefault", "__delitem__", "__setitem__"}
SHELL_MAGICS = {"bash", "sh", "script", "system", "sx", "perl", "ruby", "svg_shell", "!"}
INSTALL_WORDS = ("pip install", "pip3 install", "conda install", "mamba install", "uv pip", "uv add",
                 "apt-get install", "apt install", "npm install", "poetry add")
WRITE_FUNCTIONS = {"write_text", "write_bytes", "touch", "mkdir", "makedirs", "copy", "copy2", "copyfile",
                   "copytree", "move", "savefig", "save", "savez", "savez_compressed", "savetxt", "dump",
                   "to_csv", "to_parquet", "to_excel", "to_json", "to_pickle", "to_feather", "to_hdf",
                   "to_html", "to_markdown", "to_stata", "to_orc", "urlretrieve", "symlink", "link",
                   "symlink_to", "hardlink_to", "rename", "replace"}

RISKY_MEMBERS = {NAMESPACE, "__main__", "builtins", "os", "shutil", "pathlib", "io", "sys", "importlib", "posix",
                 "ctypes", "asyncio"}  # a computed attribute of one of these may reach a risky function


def qualify_alias(name: str) -> str:
    """``name`` with module aliases folded: ``posix.remove`` -> ``os.remove``, ``builtins.exec`` -> ``exec``."""
    head, _, rest = name.partition(".")
    if name in MODULE_ALIASES:
        return MODULE_ALIASES[name] or rest or head
    if head in MODULE_ALIASES:
        folded = MODULE_ALIASES[head]
        return f"{folded}.{rest}" if folded and rest else (rest or folded or head)
    return name


def rule_of_name(name: str | None, module: bool = False) -> str | None:
    """The rule a reference to ``name`` falls under (None: harmless as far as we know)."""
    if not name:
        return None
    if name in PROCESS_FUNCTIONS or name.startswith(PROCESS_PREFIXES):
        return "starts_process"
    if name in REMOVE_FUNCTIONS:
        return "removes_files"
    for prefix, rule in MODULE_RULES.items():
        if name == prefix or name.startswith(prefix + "."):
            return rule
    return None


def star_rule(module: str) -> str | None:
    """The rule of ``from module import *`` for a module some of whose functions are risky."""
    for name in sorted(REMOVE_FUNCTIONS | PROCESS_FUNCTIONS):
        if name.rpartition(".")[0] == module:
            return rule_of_name(name)
    return None


class UnknownRule(UserError, ValueError):
    """A rule name that is not one of `RULES`."""


def parse_rules(spec: Any = None) -> frozenset[str]:
    """The enabled rules from ``spec``: None (all), a dict {rule: bool}, or names in a list or one
    comma-separated string, applied in order to all rules on: ``-name`` off, ``name``/``+name`` on,
    ``none`` all off, ``all`` all on (``"none,subagents"``: only sub-agents ask)."""
    if spec is None:
        return frozenset(RULES)
    if isinstance(spec, dict):
        items = [(str(name), bool(on)) for name, on in spec.items()]
    else:
        parts = spec.split(",") if isinstance(spec, str) else list(spec)
        items = []
        for part in parts:
            if not isinstance(part, str):
                raise UnknownRule(f"a risk rule must be a name, not {type(part).__name__}")
            part = part.strip()
            if part:
                items.append((part.lstrip("+-").strip(), not part.startswith("-")))
    enabled = set(RULES)
    for name, on in items:
        if name in ("all", "none"):
            enabled = set(RULES) if (name == "all") == on else set()
        elif name not in RULES:
            raise UnknownRule(f"unknown risk rule {name!r}; the rules are: {', '.join(RULES)} (or all, none)")
        else:
            (enabled.add if on else enabled.discard)(name)
    return frozenset(enabled)
