"""A magic's line read as flags, and a mistake said in exactly one line.

IPython prints one line only for an exception whose type is exactly ``UsageError`` (a subclass
gets a full traceback), so every mistake a magic finds raises ``UsageError`` itself with a
one-line message (`one_line`), before anything runs or is stored; a `UserError` (``errors.py``)
from the rooms below becomes one at the magic boundary (`user_errors`). Flags are split like a
shell's (quotes removed, an unbalanced one reported).

Every magic's line is read through `bounded` (``magics.register`` wraps each one): IPython's own
``$name`` and ``{name}`` expansion of a magic's line scans it in quadratic time (a 100 KB flag value
took 170 s), so a line over `MAX_LINE_CHARS` is refused before IPython expands it, and every message
quotes only the head of what was typed.
"""

from __future__ import annotations

import errno
import functools
import shlex
import types
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from IPython.core.error import UsageError
from IPython.core.magic import MAGIC_NO_VAR_EXPAND_ATTR

from ...core.run.secrets import scrub
from ...errors import UserError

MESSAGE_CHARS = 300
MAX_LINE_CHARS = 4_000  # a magic's flags: far more than any real line, little enough for IPython to expand

AgentFailed = UsageError  # the old name: a failed run is now a plain UsageError, which IPython prints as one line


def one_line(text: Any, limit: int = MESSAGE_CHARS) -> str:
    """The first non-empty line of ``text``, scrubbed of secrets and cut to ``limit`` characters."""
    line = next((line.strip() for line in str(text or "").splitlines() if line.strip()), "")
    line = scrub(line)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def bounded(magic: Callable[..., Any], cell: bool) -> Callable[..., Any]:
    """``magic`` (a bound magic method) with its line checked, then expanded as IPython would have:
    a line over `MAX_LINE_CHARS` is one `UsageError` quoting its head, and so is a path in it too long
    for the system (ENAMETOOLONG, however deep it is found). Still a method of the same object."""

    @functools.wraps(magic.__func__)
    def checked(self: Any, line: str, *rest: Any, **kwargs: Any) -> Any:
        check_line(line)
        # IPython's own expansion, one frame further up (this one): the caller's locals, then the notebook's
        line = self.shell.var_expand(line, 3 if cell else 2)
        try:
            return magic(line, *rest, **kwargs)
        except OSError as exc:
            if exc.errno != errno.ENAMETOOLONG:
                raise
            raise UsageError(f"a path is too long for this system: {one_line(exc.filename or exc, 120)}") from None

    setattr(checked, MAGIC_NO_VAR_EXPAND_ATTR, True)  # IPython's own expansion would run before the check
    return types.MethodType(checked, magic.__self__)


def check_line(line: str) -> None:
    """A `UsageError` quoting only the head of a line longer than `MAX_LINE_CHARS`."""
    if len(line) > MAX_LINE_CHARS:
        raise UsageError(f"the flags are {len(line):,} characters long, more than {MAX_LINE_CHARS:,}: "
                         f"{one_line(line, 80)!r} (pass a long value through a notebook variable or a file)")


def parse_flags(magic: Callable[..., Any], line: str) -> Any:
    """Parse ``line`` with the magic's ``@magic_arguments`` parser, splitting it as a shell would; a mistake is
    one `UsageError` line quoting at most `MESSAGE_CHARS` of what was typed."""
    check_line(line)  # expanded: a ``$name`` may have brought a long value in
    try:
        argv = shlex.split(line)
    except ValueError as exc:  # "No closing quotation", "No escaped character"
        raise UsageError(f"cannot read the flags ({exc}): close the quotation in {one_line(line, 120)!r}") from None
    try:
        return magic.parser.parse_args(argv)
    except UsageError as exc:  # argparse's message quotes the whole value
        raise UsageError(one_line(exc)) from None


@contextmanager
def user_errors() -> Iterator[None]:
    """The magic boundary: a `UserError` (``errors.py``) raised inside becomes IPython's exact UsageError,
    its first line, scrubbed (IPython prints one line only for that exact type)."""
    try:
        yield
    except UserError as exc:
        raise UsageError(one_line(exc) or type(exc).__name__) from None


def unquote(text: str) -> str:
    """``"python server.py"`` as typed on the magic line: IPython keeps the quotes; one matching pair comes off."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text
