"""What a sub-agent's kernel may ask of DSPy's sandbox facade, checked before DSPy sees it.

DSPy's ``dspy`` shim in the kernel asks the host to build predictors
(``__dspy_construct__``) and to run them (``__dspy_call__``). DSPy's signature parser
imports any type name it does not know, and pydantic evaluates string annotations: a
child that writes ``evil_mod.py`` into the workspace (the notebook's working
directory) and asks for ``dspy.Predict('q: evil_mod -> a')`` would run that module in
the notebook. So the host never forwards a request it has not read first:

- a signature is a ``"inputs -> outputs"`` string (or the shim's ``dspy.Signature``
  marker) whose type annotations, read with `ast`, use only `TYPE_NAMES` (constants
  only inside ``Literal``), with field names that are plain identifiers;
- the constructor's keyword arguments are the few each kind takes (`KWARGS`), with
  JSON scalars for values (and tool references for ``tools``);
- a call runs a predictor this interpreter built, with that predictor's input fields.

``llm_query`` takes a prompt string and ``llm_query_batched`` a list of them: never
message dicts, which DSPy would hand to the provider as they are (roles, attachments).
Anything else is refused with `FacadeRefused`, which the child's code sees. (The
agent's own tools are ``dspy.Tool``s, which check their arguments against their types.)
"""

from __future__ import annotations

import ast
import re
from typing import Any

from dspy.primitives.code_interpreter import CodeInterpreterError
from dspy.primitives.facade import (
    BRIDGEABLE_KINDS,
    CALL_TOOL,
    CONSTRUCT_TOOL,
    SIGNATURE_MARKER,
    TOOL_MARKER,
    is_reserved_sandbox_name,
)

from ..errors import DeepAgentError

TYPE_NAMES = frozenset({"str", "int", "float", "bool", "list", "dict", "tuple", "Optional", "Union", "Literal",
                        "Any", "None", "List", "Dict", "Tuple"})
GENERIC_NAMES = frozenset({"list", "dict", "tuple", "Optional", "Union", "Literal", "List", "Dict", "Tuple"})
# Names DSPy's modules read from a call's keyword arguments (Predict pops `signature`, `config`,
# `lm`, `demos`): never field names, so never inputs.
RESERVED_FIELDS = frozenset({"signature", "demos", "config", "lm", "prediction", "callbacks",
                             "interpreter_factory", "instructions", "self"})
_GENERATION = frozenset({"temperature", "max_tokens", "top_p", "n", "stop", "seed"})
KWARGS: dict[str, frozenset[str]] = {
    "Predict": _GENERATION,
    "ChainOfThought": _GENERATION,
    "RLM": frozenset({"max_iters", "max_llm_calls", "max_output_chars", "verbose", "tools"}),
    "CodeAct": frozenset({"max_iters", "tools"}),
    "ProgramOfThought": frozenset({"max_iters"}),
    "ReAct": frozenset({"max_iters", "tools"}),
    "ReActV2": frozenset({"max_iters", "tools"}),
}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
MAX_SIGNATURE = 2_000
MAX_INSTRUCTIONS = 20_000


class FacadeRefused(DeepAgentError, CodeInterpreterError):
    """A facade request the host will not forward to DSPy."""


class FacadeGuard:
    """Checks the facade requests of one interpreter; remembers the input fields of what it built."""

    def __init__(self) -> None:
        self.inputs: dict[str, frozenset[str]] = {}  # handle -> its signature's input field names

    def check(self, tool: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        """Raise `FacadeRefused` unless this request to ``tool`` is safe to forward."""
        if tool == CONSTRUCT_TOOL:
            self._construct(**_bind(tool, ("kind", "signature", "attr_name", "kwargs"), args, kwargs))
        elif tool == CALL_TOOL:
            self._call(**_bind(tool, ("handle", "inputs"), args, kwargs))
        elif is_reserved_sandbox_name(tool):  # a facade tool this guard does not know: fail closed
            raise FacadeRefused(f"{tool} is not allowed from a sub-agent's kernel")
        elif tool == "llm_query":
            if not isinstance(_bind(tool, ("prompt",), args, kwargs).get("prompt"), str):
                raise FacadeRefused("llm_query(prompt) takes the prompt as a string")
        elif tool == "llm_query_batched":
            prompts = _bind(tool, ("prompts",), args, kwargs).get("prompts")
            if not isinstance(prompts, list) or not all(isinstance(prompt, str) for prompt in prompts):
                raise FacadeRefused("llm_query_batched(prompts) takes a list of prompt strings")

    def _construct(self, kind: Any, signature: Any, attr_name: Any, kwargs: Any = None) -> None:
        if kind not in BRIDGEABLE_KINDS:
            raise FacadeRefused(f"dspy.{kind} is not allowed through the sandbox bridge "
                                f"(allowed: {', '.join(BRIDGEABLE_KINDS)})")
        if not isinstance(attr_name, str) or not _NAME.fullmatch(attr_name):
            raise FacadeRefused("a predictor's name must be a Python identifier")
        inputs = check_signature(signature)
        check_kwargs(kind, kwargs)
        self.inputs[attr_name] = inputs

    def _call(self, handle: Any, inputs: Any = None) -> None:
        allowed = self.inputs.get(handle) if isinstance(handle, str) else None
        if allowed is None:
            raise FacadeRefused(f"no predictor named {handle!r} was built here")
        if inputs is None:
            return
        if not isinstance(inputs, dict):
            raise FacadeRefused("a predictor's inputs must be a dict of its input fields")
        unknown = sorted(str(name) for name in inputs if name not in allowed)
        if unknown:
            raise FacadeRefused(f"{unknown} are not input fields of {handle!r} (its inputs: {sorted(allowed)})")


def _bind(tool: str, names: tuple[str, ...], args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    if len(args) > len(names):
        raise FacadeRefused(f"{tool} takes at most {len(names)} arguments")
    bound = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names or key in bound:
            raise FacadeRefused(f"{tool} got an unexpected or repeated argument {key!r}")
        bound[key] = value
    missing = [name for name in names[:-1] if name not in bound]
    if missing:
        raise FacadeRefused(f"{tool} is missing {missing}")
    return bound


# ---------------------------------------------------------------- signatures
def check_signature(signature: Any) -> frozenset[str]:
    """The input field names of a signature the facade may build; `FacadeRefused` for any other."""
    if isinstance(signature, dict):
        if set(signature) - {SIGNATURE_MARKER, "signature", "instructions"} or signature.get(SIGNATURE_MARKER) is not True:
            raise FacadeRefused("a signature is a string such as 'question -> answer' or dspy.Signature(...)")
        instructions = signature.get("instructions")
        if instructions is not None and (not isinstance(instructions, str) or len(instructions) > MAX_INSTRUCTIONS):
            raise FacadeRefused("a signature's instructions must be a string")
        signature = signature.get("signature")
    if not isinstance(signature, str) or len(signature) > MAX_SIGNATURE:
        raise FacadeRefused("a signature is a string such as 'question -> answer'")
    if signature.count("->") != 1:
        raise FacadeRefused(f"a signature has exactly one '->': {signature!r}")
    inputs, outputs = signature.split("->")
    input_names, output_names = _fields(inputs), _fields(outputs)
    if not output_names:
        raise FacadeRefused(f"a signature needs an output field: {signature!r}")
    if set(input_names) & set(output_names) or len(set(input_names + output_names)) != len(input_names + output_names):
        raise FacadeRefused(f"field names must be distinct: {signature!r}")
    return frozenset(input_names)


def _fields(text: str) -> list[str]:
    """The field names of one side of a signature, its annotations checked against `TYPE_NAMES`."""
    try:
        module = ast.parse(f"def f({text}): pass")
    except (SyntaxError, ValueError):
        raise FacadeRefused(f"not a list of fields: {text.strip()!r}") from None
    function = module.body[0] if len(module.body) == 1 else None
    if not isinstance(function, ast.FunctionDef) or len(function.body) != 1 or function.decorator_list:
        raise FacadeRefused(f"not a list of fields: {text.strip()!r}")
    arguments = function.args
    if (arguments.posonlyargs or arguments.vararg or arguments.kwonlyargs or arguments.kwarg
            or arguments.defaults or arguments.kw_defaults):
        raise FacadeRefused(f"fields are 'name' or 'name: type', nothing else: {text.strip()!r}")
    names = []
    for argument in arguments.args:
        if argument.arg in RESERVED_FIELDS or argument.arg.startswith("_"):
            raise FacadeRefused(f"{argument.arg!r} is not allowed as a field name")
        if argument.annotation is not None:
            _check_type(argument.annotation)
        names.append(argument.arg)
    return names


def _check_type(node: ast.AST) -> None:
    if isinstance(node, ast.Name) and node.id in TYPE_NAMES:
        return
    if isinstance(node, ast.Constant) and node.value is None:
        return
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        _check_type(node.left)
        _check_type(node.right)
        return
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in GENERIC_NAMES:
        elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for element in elements:
            if node.value.id == "Literal":
                if not (isinstance(element, ast.Constant) and isinstance(element.value, (str, int, float, bool))
                        or isinstance(element, ast.Constant) and element.value is None):
                    raise FacadeRefused(f"Literal[...] takes constants only, not {ast.unparse(element)!r}")
            else:
                _check_type(element)
        return
    raise FacadeRefused(f"the type {ast.unparse(node)!r} is not allowed in a sandbox signature "
                        f"(allowed: {', '.join(sorted(TYPE_NAMES))})")


# ---------------------------------------------------------------- constructor arguments
def check_kwargs(kind: str, kwargs: Any) -> None:
    if kwargs is None:
        return
    if not isinstance(kwargs, dict):
        raise FacadeRefused("a predictor's options must be keyword arguments")
    allowed = KWARGS.get(kind, frozenset())
    for key, value in kwargs.items():
        if key not in allowed:
            raise FacadeRefused(f"dspy.{kind}(..., {key}=...) is not allowed in the sandbox "
                                f"(allowed: {', '.join(sorted(allowed)) or 'none'})")
        if key == "tools":
            if not isinstance(value, list) or not all(_is_tool_marker(item) for item in value):
                raise FacadeRefused("tools=[...] takes the host tools bound in your namespace")
        elif key == "stop":
            if not (isinstance(value, str) or isinstance(value, list) and all(isinstance(s, str) for s in value)):
                raise FacadeRefused("stop= takes a string or a list of strings")
        elif value is not None and not isinstance(value, (bool, int, float)):
            raise FacadeRefused(f"{key}= takes a number")


def _is_tool_marker(item: Any) -> bool:
    return isinstance(item, dict) and set(item) == {TOOL_MARKER} and isinstance(item[TOOL_MARKER], str)
