"""Reading a magic's input: flags, ``{name}`` interpolation, and the checks that make a mistake one line.

IPython prints one line only for an exception whose type is exactly ``UsageError`` (a
subclass gets a full traceback), so every mistake here raises ``UsageError`` itself with a
one-line message, before anything runs or is stored. Flags are split like a shell's
(quotes removed, an unbalanced one reported), paths expand ``~``.
"""

from __future__ import annotations

import builtins
import keyword
import os
import re
import shlex
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from IPython.core.error import UsageError

from ..core.model.lm_options import LMOptionError, parse_lm_options
from ..core.run.secrets import scrub
from ..errors import UserError
from .render import bounded_str

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
MAX_INTERPOLATED_CHARS = 10_000
MESSAGE_CHARS = 300
RESERVED_OUT = {"_deepagent_run", "_deepagent_eval", "_deepagent_optimize", "_deepagent_bench"}

AgentFailed = UsageError  # the old name: a failed run is now a plain UsageError, which IPython prints as one line


def one_line(text: Any, limit: int = MESSAGE_CHARS) -> str:
    """The first non-empty line of ``text``, scrubbed of secrets and cut to ``limit`` characters."""
    line = next((line.strip() for line in str(text or "").splitlines() if line.strip()), "")
    line = scrub(line)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def parse_flags(magic: Callable[..., Any], line: str) -> Any:
    """Parse ``line`` with the magic's ``@magic_arguments`` parser, splitting it as a shell would."""
    try:
        argv = shlex.split(line)
    except ValueError as exc:  # "No closing quotation", "No escaped character"
        raise UsageError(f"cannot read the flags ({exc}): close the quotation in {one_line(line, 120)!r}") from None
    return magic.parser.parse_args(argv)


def interpolate(text: str, namespace: dict[str, Any]) -> str:
    """Replace ``{name}`` with the notebook value of ``name``; ``{{`` and ``}}`` are literal braces."""
    return interpolate_task(text, namespace)[0]


def interpolate_task(text: str, namespace: dict[str, Any], agent_names: Any = ()) -> tuple[str, list[str], list[str]]:
    """``text`` with each ``{name}`` of a variable the user defined replaced by its value; a name an agent
    run made (``agent_names``) is left as written. Returns (text, the names expanded, the names left)."""
    made = set(agent_names)
    expanded: list[str] = []
    kept: list[str] = []

    def substitute(match: re.Match) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        name = match.group(1)
        if name in made and name in namespace:
            kept.append(name)
            return token
        if name not in namespace:
            raise UsageError(f"{{{name}}} in the cell is not a notebook variable; define it or use --no-interpolate")
        expanded.append(name)
        try:
            value = bounded_str(namespace[name], MAX_INTERPOLATED_CHARS)
        except Exception as exc:
            raise UsageError(f"{{{name}}}: str() of the {type(namespace[name]).__name__} failed "
                             f"({type(exc).__name__}: {one_line(exc, 120)}); pass a string or use --no-interpolate"
                             ) from None
        if len(value) > MAX_INTERPOLATED_CHARS:
            value = value[:MAX_INTERPOLATED_CHARS] + f"... (truncated; the full value is the variable `{name}`)"
        return value

    return _PLACEHOLDER.sub(substitute, text), expanded, kept


def expansion_line(namespace: dict[str, Any], expanded: list[str], kept: list[str]) -> str | None:
    """The one line a cell prints about its ``{name}``s: what it expanded, and what it left as written."""
    if not expanded and not kept:
        return None
    parts = []
    if expanded:
        shown = [f"{{{name}}} ({type(namespace.get(name)).__name__})" for name in dict.fromkeys(expanded)]
        parts.append("expanded " + ", ".join(shown[:8]) + (f" and {len(shown) - 8} more" if len(shown) > 8 else ""))
    if kept:
        names = ", ".join(f"{{{name}}}" for name in dict.fromkeys(kept))
        parts.append(f"left {names} as written (an agent run made it, not you)")
    return "deepagent: " + "; ".join(parts)


@contextmanager
def user_errors() -> Iterator[None]:
    """The magic boundary: a `UserError` (``errors.py``) raised inside becomes IPython's exact UsageError,
    its first line, scrubbed (IPython prints one line only for that exact type)."""
    try:
        yield
    except UserError as exc:
        raise UsageError(one_line(exc) or type(exc).__name__) from None


def check_kernel_name(name: str | None) -> None:
    """A kernel spec for sub-agents that is installed here (a UsageError naming those that are)."""
    if name:
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

        try:
            KernelSpecManager().get_kernel_spec(name)
        except NoSuchKernel:
            names = ", ".join(sorted(KernelSpecManager().find_kernel_specs()))
            raise UsageError(f"no kernel spec named {name!r}; installed: {names}") from None


def check_out(name: str | None, flag: str = "--out") -> str | None:
    """A name the result can be stored in without breaking the notebook."""
    if name is None:
        return None
    if not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(f"{flag} {name!r} is not a valid variable name")
    if name.startswith("__") and name.endswith("__") or name in RESERVED_OUT:
        raise UsageError(f"{flag} {name!r} is a name Python or the deepagent magics use; choose another")
    if hasattr(builtins, name):
        raise UsageError(f"{flag} {name!r} would hide Python's builtin {name}; choose another name")
    return name


def expand_path(value: str) -> str:
    return os.path.expanduser(value)


def check_workspace(value: Any, flag: str = "--workspace") -> str:
    """``value`` as a folder path the workspace can be (``~`` expanded); it need not exist yet."""
    text = expand_path(str(value))
    if not text.strip() or "\x00" in text:
        raise UsageError(f"{flag} {str(value)!r} is not a folder path")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {value}: {path} is a file, not a folder")
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"{flag} {value}: {parent} is a file, so there can be no folder under it")
            break
    return text


def make_workspace(value: str, flag: str = "--workspace") -> None:
    """Create the workspace folder now, so that a folder that cannot be made is one line, not a traceback."""
    try:
        Path(value).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{flag} {value}: cannot create the folder ({exc.strerror or exc})") from None


def check_mcp_servers(specs: list[str]) -> list[str]:
    """``--mcp`` values: each server connected now, so one that cannot start is a UsageError here."""
    from ..tools.mcp_servers import MCPError, connect

    specs = [_unquote(spec.strip()) for spec in specs]
    specs = [] if [spec.lower() for spec in specs] == ["off"] else specs
    for spec in specs:
        try:
            connect(spec)
        except MCPError as exc:
            raise UsageError(str(exc)) from None
    return specs


def _unquote(text: str) -> str:
    """``"python server.py"`` as typed on the magic line (IPython keeps the quotes)."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def lm_option_values(values: list[str], current: dict[str, Any]) -> dict[str, Any]:
    """``%deepagent_config --lm-option KEY=VALUE`` (repeatable) over the options set before (a later value for a
    key wins); ``--lm-option off`` clears them; a malformed one is one `UsageError` line and changes nothing."""
    if [value.strip() for value in values] == ["off"]:
        return {}
    try:
        return {**current, **parse_lm_options(values)}
    except LMOptionError as exc:
        raise UsageError(str(exc)) from None


def shown_lm_options(options: dict[str, Any]) -> str:
    """``timeout=600, max_tokens=4000`` as the settings list prints them; a key or token never printed."""
    if not options:
        return "(none)"
    return ", ".join(f"{key}={'(set)' if 'key' in key.lower() or 'token' in key.lower() else repr(value)}"
                     for key, value in options.items())
