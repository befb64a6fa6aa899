"""The host's folders, files and sockets a sandboxed kernel never sees, wherever the host's environment puts them.

The sandbox hides the home, ``/tmp`` and ``/run`` whole; what matters may live elsewhere. With
``XDG_DATA_HOME=/data/xdg`` the notebook kernel's connection file (its key and ports) is
``/data/xdg/jupyter/runtime/kernel-*.json``, and with the network a sub-agent could run code in the
user's kernel with it. So `secrets` asks Jupyter and IPython where their folders are, with the host's
environment as it is (``JUPYTER_*``, ``XDG_*``, ``JUPYTER_PLATFORM_DIRS``, ``IPYTHONDIR``, ``HOME``), and
adds every other place the host keeps something a sub-agent could use against it:

- Jupyter's config, data and runtime folders and the user-level entries of its search paths
  (``jupyter_core.paths``), with and without platform folders; IPython's folder and the profile in use;
- the folder of this kernel's own connection file, and the sockets Jupyter servers listed in their
  runtime files (``jpserver-*.json``: ``sock``);
- the host's signing key (``records/host_key.py``) and the local model's cache
  (``core/model/local_weights.py``);
- sockets the environment names: ``SSH_AUTH_SOCK``, a ``unix:`` session bus, a ``unix://``
  ``DOCKER_HOST``, and ``XDG_RUNTIME_DIR`` and ``GNUPGHOME`` whole;
- for a host running as root (whose sandbox, without a capability, is still uid 0 to the files), every
  file and folder in ``/etc`` that other users cannot read (``/etc/shadow``, SSH host keys,
  ``/etc/ssl/private``, ``sudoers``).

Jupyter's runtime folder and the host key's folder are made (0700, as Jupyter and `records.host_key` make
them) when missing, so that a connection file or a key written after the sandbox started is hidden too; a
key file named by ``DEEPAGENT_HOST_KEY`` that does not exist yet has its folder hidden. Nothing here runs
code of the user's (no config file is read).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import stat
import sys
import warnings
from typing import Iterable


def secrets(home: str) -> list[str]:
    """Every folder, file or socket to hide (real paths; only those that exist), for a host whose home is
    ``home``."""
    paths = [*_jupyter(home), *_ipython(home), *_servers(), *_from_environment(), *_host_key(home), _model_cache(),
             *(_root_only("/etc") if os.geteuid() == 0 else [])]
    return sorted({os.path.realpath(path) for path in paths if path and os.path.isabs(path)
                   and os.path.lexists(path)})


def _jupyter(home: str) -> list[str]:
    from jupyter_core import paths

    runtime = paths.jupyter_runtime_dir()
    _make(runtime)
    found = [paths.jupyter_config_dir(), paths.jupyter_data_dir(), runtime]
    shared = {*paths.ENV_JUPYTER_PATH, *paths.SYSTEM_JUPYTER_PATH, *paths.ENV_CONFIG_PATH, *paths.SYSTEM_CONFIG_PATH}
    found += [path for path in [*paths.jupyter_path(), *paths.jupyter_config_path()] if path not in shared]
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    # Both layouts, whichever this process uses: the server that started the notebook may use the other.
    found += [os.path.join(data, "jupyter"), os.path.join(config, "jupyter"), os.path.join(home, ".jupyter")]
    with contextlib.suppress(ImportError), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns of an unset XDG_RUNTIME_DIR
        import platformdirs

        found += [platformdirs.user_data_dir("jupyter", appauthor=False),
                  platformdirs.user_config_dir("jupyter", appauthor=False),
                  platformdirs.user_runtime_dir("jupyter", appauthor=False)]
    return found


def _ipython(home: str) -> list[str]:
    """IPython's folder: the one in use, ``IPYTHONDIR``, ``~/.ipython`` and the old ``$XDG_CONFIG_HOME/ipython``
    (computed, not asked of ``IPython.paths.get_ipython_dir``, which makes a folder when it finds none)."""
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    found = [os.environ.get("IPYTHONDIR", ""), os.path.join(home, ".ipython"), os.path.join(config, "ipython")]
    shell = _running_shell()
    if shell is not None:
        found += [str(getattr(shell, "ipython_dir", "") or ""),
                  str(getattr(getattr(shell, "profile_dir", None), "location", "") or "")]
    connection_file = _connection_file()
    if connection_file:
        found.append(os.path.dirname(connection_file))
    return [os.path.expanduser(path) for path in found if path]


def _running_shell():
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    return get_ipython()


def _connection_file() -> str | None:
    """This process's own connection file, when it is a kernel (ipykernel already imported)."""
    if "ipykernel.kernelapp" not in sys.modules:
        return None
    from ipykernel.kernelapp import IPKernelApp

    if not IPKernelApp.initialized():
        return None
    return getattr(IPKernelApp.instance(), "abs_connection_file", None) or None


def _servers() -> list[str]:
    """The unix sockets Jupyter servers listen on, from their runtime files (the files are hidden with the folder)."""
    from jupyter_core import paths

    sockets = []
    for info in glob.glob(os.path.join(paths.jupyter_runtime_dir(), "*server-*.json")):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            with open(info) as handle:
                sockets.append(str(json.load(handle).get("sock") or ""))
    return sockets


def _from_environment() -> Iterable[str]:
    environ = os.environ
    yield environ.get("SSH_AUTH_SOCK", "")
    yield environ.get("XDG_RUNTIME_DIR", "")
    yield environ.get("GNUPGHOME", "")
    for part in environ.get("DBUS_SESSION_BUS_ADDRESS", "").split(";"):
        for option in part.partition(":")[2].split(","):
            if option.startswith("path="):
                yield option[len("path="):]
    docker = environ.get("DOCKER_HOST", "")
    if docker.startswith("unix://"):
        yield docker[len("unix://"):]


def _host_key(home: str) -> list[str]:
    """Where the host's signing key lives (as ``records.host_key.key_path`` finds it): with it a sub-agent
    could sign a planted checkpoint or record."""
    configured = os.path.expanduser(os.environ.get("DEEPAGENT_HOST_KEY", "").strip())
    data = os.environ.get("XDG_DATA_HOME", "").strip() or os.path.join(home, ".local", "share")
    default = os.path.join(data, "deepagent-magics")
    if not configured:
        _make(default)  # as host_key makes it: a key made after the sandbox started is hidden too
        return [default]
    return [default, configured if os.path.lexists(configured) else os.path.dirname(configured)]


def _make(folder: str) -> None:
    with contextlib.suppress(OSError):
        os.makedirs(folder, mode=0o700, exist_ok=True)


def _root_only(top: str) -> list[str]:
    """What under ``top`` other users cannot read: files without o+r, folders without o+x (not entered)."""
    found = []
    for folder, subfolders, files in os.walk(top, onerror=lambda error: None):
        for name in list(subfolders):
            with contextlib.suppress(OSError):
                if not os.lstat(os.path.join(folder, name)).st_mode & stat.S_IXOTH:
                    found.append(os.path.join(folder, name))
                    subfolders.remove(name)
        for name in files:
            with contextlib.suppress(OSError):
                info = os.lstat(os.path.join(folder, name))
                if stat.S_ISREG(info.st_mode) and not info.st_mode & stat.S_IROTH:
                    found.append(os.path.join(folder, name))
    return found


def _model_cache() -> str:
    from ...core.model.local_weights import cache_dir

    return str(cache_dir())
