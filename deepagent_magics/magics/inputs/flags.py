"""A magic's line read as flags, and a mistake said in exactly one line.

IPython prints one line only for an exception whose type is exactly ``UsageError`` (a subclass
gets a full traceback), so every mistake a magic finds raises ``UsageError`` itself with a
one-line message (`one_line`), before anything runs or is stored; a `UserError` (``errors.py``)
from the rooms below becomes one at the magic boundary (`user_errors`). Flags are split like a
shell's (quotes removed, an unbalanced one reported).
"""

from __future__ import annotations

import shlex
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from IPython.core.error import UsageError

from ...core.run.secrets import scrub
from ...errors import UserError

MESSAGE_CHARS = 300

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
