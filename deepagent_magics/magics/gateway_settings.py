"""``%deepagent_config --gateway-url URL --gateway-token-env VAR``: where sub-agent kernels start, and their token kept secret.

Without a URL (and without ``JUPYTER_GATEWAY_URL``) they start on this machine; with one, on that
Jupyter gateway (interpreters/pool/gateway.py). A URL is checked when it is set: a wrong URL or
token is one `UsageError` line then, not a failure in the middle of a run.

The token is the one secret a magic takes. ``--gateway-token T`` (or ``%config
DeepAgentMagics.gateway_token = "T"``) puts ``T`` in the cell's text, which IPython keeps in
``In``/``_ih``, in ``_i``, ``_ii``, ``_iii`` and ``_iN``, and in its history database (a kernel's
is a SQLite file on disk); any agent step can print those, and a run would record them. So the
value is registered as a secret (`core.run.secrets.register_secret`: scrubbed from everything a
run writes from now on) and replaced by ``[REDACTED]`` in each of those places, the database's rows
included (every session's, and the rows IPython has not written yet). The frontend's own copy (the
notebook cell's text) is out of the kernel's reach: ``--gateway-token-env VAR`` keeps the token out
of the cell altogether.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import sqlite3
from typing import Any

from IPython.core.error import UsageError

from ..core.run.secrets import REDACTED, register_secret
from ..settings import SETTINGS
from .inputs.lm_option_flags import shown_lm_options

OFF = ("off", "none", "")


def gateway_url(configured: str | None) -> str | None:
    """The gateway in effect: the configured URL, else ``JUPYTER_GATEWAY_URL``, else None (local)."""
    if configured is not None:
        return None if configured.strip().lower() in OFF else configured
    return SETTINGS["gateway_url"].or_env(None)


def make_gateway(url: str | None, token: str | None) -> Any:
    if not url:
        return None
    from ..interpreters.pool.gateway import Gateway, GatewayError

    try:
        return Gateway(url, token or None)
    except GatewayError as exc:
        raise UsageError(str(exc)) from None


def token_in_effect(token: str | None, variable: str | None) -> str | None:
    """The gateway token: the named environment variable's value (a secret), else the one typed."""
    if variable:
        value = os.environ.get(variable)
        register_secret(value)
        return value
    return token


def check_gateway(updates: dict[str, Any], configured_url: str | None, token: str | None) -> None:
    """Check a gateway URL or token being set: the gateway must answer and accept the token in effect."""
    if not {"gateway_url", "gateway_token", "gateway_token_env"} & set(updates):
        return
    url = gateway_url(updates.get("gateway_url", configured_url))
    gateway = make_gateway(url, token)
    if gateway is None:
        return
    from ..interpreters.pool.gateway import GatewayError

    try:
        gateway.check()
    except GatewayError as exc:
        raise UsageError(str(exc)) from None


def shown(name: str, value: Any) -> Any:
    """A setting as ``%deepagent_config`` prints it: never the token itself."""
    if name == "gateway_token":
        return "(set)" if value else None
    if name == "lm_options":
        return shown_lm_options(value)
    if name == "gateway_token_env" and value:
        return f"{value} ({'set' if os.environ.get(value) else 'not set'} in the environment)"
    if name == "gateway_url" and value is None:
        setting = SETTINGS["gateway_url"]
        env = setting.or_env(None)
        return f"{env} (from {setting.env})" if env else "(none: kernels start on this machine)"
    return value


# ------------------------------------------------------------------ the token, kept secret
log = logging.getLogger(__name__)
SECRET_FLAGS = ("--gateway-token",)  # flags of the magics whose value is a credential
_INPUT_NAMES = re.compile(r"_i{1,3}|_i\d+")  # the shell's variables holding earlier inputs
_TABLES = {"history": ("source", "source_raw"), "output_history": ("output",)}


def forget_typed_flags(shell: Any, line: str) -> None:
    """Register and scrub the value of every `SECRET_FLAGS` flag in ``line`` (before it is parsed: a
    mistake elsewhere in the line must not leave the token in the history)."""
    try:
        words = shlex.split(line)
    except ValueError:  # unbalanced quotes: the flags' values as the line splits on spaces
        words = line.split()
    for at, word in enumerate(words):
        flag, equals, value = word.partition("=")
        if flag in SECRET_FLAGS:
            value = value if equals else (words[at + 1] if at + 1 < len(words) else "")
            forget(shell, value)


def forget(shell: Any, value: str | None) -> None:
    """``value`` is a secret from now on, and the shell's input history no longer holds it."""
    if not value or not value.strip():
        return
    register_secret(value)
    scrub_history(shell, value.strip())


def scrub_history(shell: Any, secret: str) -> None:
    def hide(text: Any) -> Any:
        return text.replace(secret, REDACTED) if isinstance(text, str) and secret in text else text

    manager = getattr(shell, "history_manager", None)
    if manager is not None:
        for lines in (manager.input_hist_parsed, manager.input_hist_raw):
            for index, text in enumerate(lines):
                if isinstance(text, str) and secret in text:
                    lines[index] = hide(text)
        for name in ("_i00", "_i", "_ii", "_iii"):
            if secret in (getattr(manager, name, "") or ""):
                setattr(manager, name, hide(getattr(manager, name)))
        with manager.db_input_cache_lock:  # the saving thread writes the cache under this lock
            manager.db_input_cache = [(number, hide(source), hide(raw))
                                      for number, source, raw in manager.db_input_cache]
            _scrub_database(manager, secret)
    namespace = getattr(shell, "user_ns", {})
    for name, value in list(namespace.items()):
        if _INPUT_NAMES.fullmatch(name) and isinstance(value, str) and secret in value:
            namespace[name] = hide(value)


def _scrub_database(manager: Any, secret: str) -> None:
    if not getattr(manager, "enabled", False) or getattr(manager, "db", None) is None:
        return
    try:
        _update(manager.db, secret)
    except sqlite3.ProgrammingError:  # the shell's connection belongs to another thread: one of our own
        if manager.hist_file == ":memory:":
            return
        with sqlite3.connect(manager.hist_file, timeout=10) as db:
            _update(db, secret)
    except sqlite3.Error as exc:
        log.warning("could not scrub a typed secret from the history database: %s", exc)


def _update(db: sqlite3.Connection, secret: str) -> None:
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    with db:
        for table, columns in _TABLES.items():
            if table not in tables:
                continue
            for column in columns:
                db.execute(f"UPDATE {table} SET {column} = replace({column}, ?, ?) WHERE instr({column}, ?) > 0",
                           (secret, REDACTED, secret))


def token_from_environment(name: str) -> str | None:
    """``--gateway-token-env VAR``: the variable's name checked (None for ``off``); its value is a secret."""
    name = name.strip()
    if name.lower() in ("off", "none", ""):
        return None
    if not name.isidentifier():
        raise UsageError(f"--gateway-token-env {name!r}: give the name of an environment variable")
    if name not in os.environ:
        raise UsageError(f"--gateway-token-env {name}: the environment has no variable {name}; set it first "
                         "(os.environ, or before starting Jupyter)")
    register_secret(os.environ[name])
    return name
