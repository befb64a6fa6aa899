"""What makes a code block risky: named rules over its syntax tree (``ast``, never regexes).

`analyse(code, user_names=..., workspace=..., rules=..., tool_rules=...)` returns the `Risk`s a block
carries, each with the rule that found it and a reason a person can read. The rules
(`RULES`, each on or off: `parse_rules`):

- ``deletes_variable``: deletes or rebinds one of the user's variables (``del x``, ``x = ...``,
  ``globals()['x']``, ``del globals()[...]``, ``%reset``);
- ``removes_files``: removes or moves files (``os.remove``, ``shutil.rmtree``, ``Path.unlink``);
- ``writes_outside_workspace``: writes a file at a path outside the workspace;
- ``starts_process``: ``subprocess``, ``os.system``, ``!cmd``, ``%%bash``;
- ``network``: ``requests``, ``urllib``, ``httpx``, ``socket``, a URL handed to a call;
- ``installs_packages``: ``pip``, ``%pip``, ``conda``;
- ``dynamic_code``: ``exec``/``eval``/``compile`` of a computed string, a computed import or
  attribute of a module (a constant string given to ``exec`` is analysed as code itself);
- ``subagents``: the tools that start sub-agents, which cost money (each tool says which rule a
  call of it falls under: its ``risk_rule``, gathered into ``tool_rules`` by the agent).

Names are followed through aliases (``import os as o``, ``from subprocess import run as r``,
``f = os.remove``, ``getattr(os, 'remove')``, ``__import__('shutil')``). The analysis errs
towards asking: an unresolvable access to a risky module is risky. IPython syntax (``!ls``)
is read through IPython's own transformer first.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .risk_tables import (
    DYNAMIC_CALLS,
    INSTALL_WORDS,
    NAMESPACE,
    NAMESPACE_METHODS,
    REMOVE_FUNCTIONS,
    REMOVE_METHODS,
    RISKY_MEMBERS,
    RULES,
    SHELL_MAGICS,
    WRITE_FUNCTIONS,
    UnknownRule,
    parse_rules,
    qualify_alias,
    rule_of_name,
    star_rule,
)

__all__ = ["RULES", "Risk", "UnknownRule", "analyse", "parse_rules"]
OPENERS = ("open", "io.open", "codecs.open", "os.open")
MAX_DEPTH = 3  # exec('exec("...")') nesting analysed


@dataclass(frozen=True)
class Risk:
    rule: str
    reason: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.reason}"


def analyse(code: str, *, user_names: Iterable[str] = (), workspace: str | None = None,
            rules: Iterable[str] | None = None, tool_rules: Mapping[str, str] | None = None) -> list[Risk]:
    """The risks of ``code`` under the enabled ``rules`` (all by default), each found once; ``tool_rules``: the
    rule a call of each of the agent's tools falls under, by name (`tool_rules`)."""
    enabled = frozenset(RULES) if rules is None else frozenset(rules)
    tree = _parse(code)
    if tree is None:
        return []  # it will not run either: the interpreter reports the SyntaxError
    found = _Analysis(set(user_names), workspace, 0, dict(tool_rules or {})).run(tree)
    seen, out = set(), []
    for risk in found:
        if risk.rule in enabled and risk not in seen:
            seen.add(risk)
            out.append(risk)
    return out


def tool_rules(tools: Iterable[Any]) -> dict[str, str]:
    """The rule a call of each tool falls under, by name: what the tool says (its ``risk_rule``), if anything."""
    return {tool.__name__: tool.risk_rule for tool in tools
            if isinstance(getattr(tool, "risk_rule", None), str) and getattr(tool, "__name__", None)}


def _parse(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        pass
    try:  # IPython syntax: !cmd, %magic, %%bash
        from IPython.core.inputtransformer2 import TransformerManager

        return ast.parse(TransformerManager().transform_cell(code))
    except Exception:  # IPython's transformer or the parser on any text: not Python, no risks to find
        return None


class _Analysis(ast.NodeVisitor):
    def __init__(self, user_names: set[str], workspace: str | None, depth: int, tool_rules: dict[str, str]):
        self.user = user_names
        self.tool_rules = tool_rules
        self.workspace = workspace
        self.depth = depth
        self.aliases: dict[str, str] = {}  # local name -> qualified name ("os", "os.remove", NAMESPACE)
        self.strings: dict[str, str] = {}  # local name -> the constant string assigned to it
        self.risks: list[Risk] = []
        self.scope = 0  # > 0 inside a function: its bindings are local unless declared global
        self.globals_declared: set[str] = set()

    def run(self, tree: ast.AST) -> list[Risk]:
        self._collect(tree)
        self.visit(tree)
        return self.risks

    def add(self, rule: str, reason: str) -> None:
        self.risks.append(Risk(rule, reason))

    # ------------------------------------------------------------ aliases
    def _collect(self, tree: ast.AST) -> None:
        """Two passes: aliases may be made after the function that uses them."""
        for _ in range(2):
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        self.aliases[alias.asname or alias.name.split(".")[0]] = \
                            qualify_alias(alias.name if alias.asname else alias.name.split(".")[0])
                elif isinstance(node, ast.ImportFrom) and node.module:
                    for alias in node.names:
                        if alias.name != "*":
                            self.aliases[alias.asname or alias.name] = qualify_alias(f"{node.module}.{alias.name}")
                elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    value = self.qualify(node.value)
                    text = self.string(node.value)
                    for target in targets:
                        if isinstance(target, ast.Name):
                            if value:
                                self.aliases[target.id] = value
                            if text is None and isinstance(node.value, ast.Call) and node.value.args and \
                                    (self.qualify(node.value.func) or "").endswith("Path"):
                                text = self.string(node.value.args[0])  # p = Path('/etc/x'): its path
                            if text is not None:
                                self.strings[target.id] = text

    def qualify(self, node: ast.AST) -> str | None:
        """The dotted name ``node`` stands for (``os.remove``), NAMESPACE for the user's namespace, or None."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            if node.attr == "user_ns" or node.attr == "__dict__" and self.qualify(node.value) == "__main__":
                return NAMESPACE
            base = self.qualify(node.value)
            return qualify_alias(f"{base}.{node.attr}") if base and base != NAMESPACE else None
        if isinstance(node, ast.Call):
            func = self.qualify(node.func)
            if func in ("globals", "locals") or func == "vars" and not node.args:
                return NAMESPACE
            if func == "vars" and node.args and self.qualify(node.args[0]) == "__main__":
                return NAMESPACE
            if func in ("__import__", "importlib.import_module") and node.args:
                name = self.string(node.args[0])
                return qualify_alias(name.split(".")[0] if func == "__import__" else name) if name else None
            if func == "getattr" and len(node.args) >= 2:
                base, attr = self.qualify(node.args[0]), self.string(node.args[1])
                return qualify_alias(f"{base}.{attr}") if base and attr and base != NAMESPACE else None
            return None
        if isinstance(node, ast.Subscript):
            base, key = self.qualify(node.value), self.string(node.slice)
            if base == "sys.modules" and key:
                return qualify_alias(key)
            if base == NAMESPACE and key:
                return self.aliases.get(key, key)
            if isinstance(node.value, ast.Call) and self.qualify(node.value.func) == "vars" and key:
                inner = self.qualify(node.value.args[0]) if node.value.args else None
                return qualify_alias(f"{inner}.{key}") if inner else None
            if isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__" and key:
                inner = self.qualify(node.value.value)
                return qualify_alias(f"{inner}.{key}") if inner else None
        return None

    def string(self, node: ast.AST) -> str | None:
        """The constant string ``node`` evaluates to, when the block makes it from constants."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return self.strings.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.string(node.left), self.string(node.right)
            return left + right if left is not None and right is not None else None
        if isinstance(node, ast.JoinedStr):
            parts = [self.string(v) if not isinstance(v, ast.FormattedValue) else self.string(v.value)
                     for v in node.values]
            return "".join(parts) if all(p is not None for p in parts) else None
        return None

    # ------------------------------------------------------------ names
    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._binding(node.id, isinstance(node.ctx, ast.Del))
        self._reference(self.qualify(node), node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = self.qualify(node)
        if name is not None:
            self._reference(name, name)
        if isinstance(node.ctx, (ast.Store, ast.Del)) and self.qualify(node.value) in ("builtins", "__builtins__"):
            self.add("controls", f"replaces the builtin {node.attr}")
        if isinstance(node.ctx, (ast.Store, ast.Del)) and self.qualify(node.value) == "__main__":
            self._binding(node.attr, isinstance(node.ctx, ast.Del), force=True)
        if isinstance(node.ctx, ast.Del):
            self._part_deleted(node.value)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        base = self.qualify(node.value)
        if base == NAMESPACE and isinstance(node.ctx, (ast.Store, ast.Del)):
            key = self.string(node.slice)
            if key is None:
                self.add("deletes_variable", "changes a computed name in the notebook's namespace")
            else:
                self._binding(key, isinstance(node.ctx, ast.Del), force=True)
        elif base == NAMESPACE or base == "sys.modules":
            key = self.string(node.slice)
            if key is None:
                self.add("dynamic_code", f"reads a computed name from {'the namespace' if base == NAMESPACE else base}")
            else:
                self._reference(self.qualify(node), key)
        else:
            if isinstance(node.ctx, ast.Del):
                self._part_deleted(node.value)
            self._reference(self.qualify(node), "a subscript")
        self.generic_visit(node)

    def _comprehension(self, node: ast.AST) -> None:
        self.scope += 1  # its loop variables are its own
        self.generic_visit(node)
        self.scope -= 1

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def _part_deleted(self, node: ast.AST, verb: str = "deletes part of") -> None:
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.user:
            self.add("deletes_variable", f"{verb} your variable {node.id!r}" + (" in place" if verb == "changes" else ""))

    def _binding(self, name: str, deleted: bool, force: bool = False) -> None:
        if name in self.user and (force or not self.scope or name in self.globals_declared):
            self.add("deletes_variable", f"{'deletes' if deleted else 'rebinds'} your variable {name!r}")

    def _reference(self, name: str | None, shown: str) -> None:
        if not name:
            return
        rule = self.tool_rules.get(name) or rule_of_name(name)
        if rule is not None:
            self.add(rule, f"uses {name}" + (f" (as {shown})" if shown != name and shown.isidentifier() else ""))

    def visit_Global(self, node: ast.Global) -> None:
        self.globals_declared.update(node.names)

    def _function(self, node: Any) -> None:
        self._binding(node.name, False)
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.scope += 1
        for child in node.body:
            self.visit(child)
        self.scope -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _function

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        module = getattr(node, "module", None)
        for alias in node.names:
            bound = alias.asname or alias.name.split(".")[0]
            if alias.name == "*":
                rule = rule_of_name(qualify_alias(module or ""), module=True) or star_rule(qualify_alias(module or ""))
                if rule:
                    self.add(rule, f"imports everything from {module}")
                continue
            self._binding(bound, False)
            full = qualify_alias(f"{module}.{alias.name}" if module else alias.name)
            rule = rule_of_name(full, module=True)
            if rule is not None:
                self.add(rule, f"imports {full}")

    visit_ImportFrom = visit_Import

    # ------------------------------------------------------------ calls
    def visit_Call(self, node: ast.Call) -> None:
        func = self.qualify(node.func)
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        if not isinstance(node.func, (ast.Name, ast.Attribute, ast.Subscript)):
            self._reference(func, "a computed callee")  # getattr(os, 'remove')(...)
        self._reference(self.qualify(node), "a computed value")  # __import__('socket')
        args = [self.string(arg) for arg in node.args] + [self.string(kw.value) for kw in node.keywords]
        if func in DYNAMIC_CALLS:
            self._dynamic(func, node)
        elif func in ("getattr", "setattr", "delattr") and len(node.args) >= 2:
            self._attribute_call(func, node)
        if method in NAMESPACE_METHODS and self.qualify(node.func.value) == NAMESPACE:
            key = self.string(node.args[0]) if node.args else None
            if method in ("clear", "update") or key is None or key in self.user:
                self.add("deletes_variable", f"calls {method}() on the notebook's namespace")
        if method in ("run_line_magic", "run_cell_magic", "magic", "system", "getoutput", "reset", "run_cell"):
            self._ipython(method, args)
        if method in REMOVE_METHODS and func not in REMOVE_FUNCTIONS:
            self.add("removes_files", f"calls .{method}()")
        if method in ("clear",) or any(kw.arg == "inplace" for kw in node.keywords):
            self._part_deleted(node.func.value if isinstance(node.func, ast.Attribute) else node.func, "changes")
        self._writes(func, method, node)
        for text in filter(None, args):
            lowered = text.lower()
            if lowered.startswith(("http://", "https://", "ftp://", "ws://", "wss://")):
                self.add("network", f"hands the URL {text[:80]!r} to {func or method}()")
            if any(word in lowered for word in INSTALL_WORDS):
                self.add("installs_packages", f"runs {text[:80]!r}")
        self.generic_visit(node)

    def _dynamic(self, func: str, node: ast.Call) -> None:
        source = self.string(node.args[0]) if node.args else None
        if func not in ("exec", "eval", "compile") and source is not None:
            return  # __import__('shutil'): the module is followed by `qualify`
        if func in ("exec", "eval", "compile") and source is not None:
            if self.depth < MAX_DEPTH:
                tree = _parse(source)
                if tree is not None:
                    inner = _Analysis(self.user, self.workspace, self.depth + 1, self.tool_rules)
                    inner.scope = self.scope
                    for risk in inner.run(tree):
                        self.add(risk.rule, f"{risk.reason} (inside {func})")
            return
        what = f"{func}() of a computed {'module name' if 'import' in func else 'string'}"
        self.add("dynamic_code", f"runs {what}" if func in ("exec", "eval", "compile") else f"calls {what}")

    def _attribute_call(self, func: str, node: ast.Call) -> None:
        target, attr = self.qualify(node.args[0]), self.string(node.args[1])
        if attr is None:
            rule = rule_of_name(target, module=True) if target else None
            if rule or target in RISKY_MEMBERS:
                self.add(rule or "dynamic_code", f"{func}() of a computed name on {target}")
        elif func != "getattr" and target in ("builtins", "__builtins__"):
            self.add("controls", f"{func}() replaces the builtin {attr}")
        elif func != "getattr" and target == "__main__":
            self._binding(attr, func == "delattr", force=True)

    def _ipython(self, method: str, args: list[str | None]) -> None:
        name = (args[0] or "") if args else ""
        if method in ("system", "getoutput") or method.startswith("run_") and name in SHELL_MAGICS:
            self.add("starts_process", f"runs a shell command through IPython ({method})")
        if method == "reset" or name in ("reset", "reset_selective", "xdel"):
            self.add("deletes_variable", "resets the notebook's namespace")
        if name in ("pip", "conda", "mamba", "uv"):
            self.add("installs_packages", f"runs %{name}")
        if method == "run_cell":
            self.add("dynamic_code", "runs IPython code through run_cell()")

    def _writes(self, func: str | None, method: str | None, node: ast.Call) -> None:
        name = func or method
        if name is None or self.workspace is None:
            return
        if func in OPENERS or method == "open":
            mode_node = node.args[1] if len(node.args) > 1 and func != "os.open" else next(
                (kw.value for kw in node.keywords if kw.arg in ("mode", "flags")), None)
            mode = self.string(mode_node) if mode_node is not None else "r"
            if func == "os.open" or mode is None or set(mode or "r") & set("wax+"):
                paths = node.args[:1] if func in OPENERS else [node.func.value]
                self._outside(paths, name)
        elif name.split(".")[-1] in WRITE_FUNCTIONS:
            paths = list(node.args) + [kw.value for kw in node.keywords]
            if method:
                paths.append(node.func.value)
            self._outside(paths, name)

    def _outside(self, nodes: list[ast.AST], name: str) -> None:
        import os

        for node in nodes:
            if isinstance(node, ast.Call) and node.args and (self.qualify(node.func) or "").endswith("Path"):
                node = node.args[0]
            path = self.string(node)
            if not path or "\n" in path or path.startswith(("http://", "https://")):
                continue
            root = os.path.realpath(self.workspace)
            full = os.path.realpath(os.path.join(root, os.path.expanduser(path)))
            if full != root and not full.startswith(root.rstrip(os.sep) + os.sep):
                self.add("writes_outside_workspace", f"{name}() writes {path!r}, outside the workspace")
