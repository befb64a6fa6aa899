"""What an audit event means for approval: the action, its rule, the resolved path or host, the question.

`describe(event, args)` turns one audit event (PEP 578) into a raw action, or None for what
is never risky (a file opened for reading, a lookup): ``(kind, detail...)``. `judge(raw,
workspace)` then gives ``(rule, question, memory_key)`` with the paths resolved (absolute,
symlinks followed) and placed inside or outside the workspace, or None when the action is
not risky there (a write inside the workspace). The rules are `core/policy/risk.py`'s:

- ``writes_outside_workspace``: a file opened for writing, a folder made, a file truncated,
  copied, linked, its mode or owner changed, outside the workspace;
- ``removes_files``: a file or folder removed, moved or renamed (anywhere);
- ``starts_process``: ``subprocess``, ``os.system``, ``os.exec*``, ``os.posix_spawn``,
  ``os.fork``, a signal sent to a process;
- ``network``: a socket connected (or sent to, or bound to a fixed port), a URL opened;
- ``controls``: what reaches the checks themselves (``gc.get_referrers`` and the like,
  another thread's frames, a trace or profile function, a new audit hook, ``ctypes``).

Only standard-library builtins captured when this module is loaded are called (``posix.lstat``,
``posix.getcwd``, ...), and values the agent's code hands over are read only when they are plain
(``str``, ``bytes``, a standard ``pathlib`` path): a path object of the agent's own class is
"a path the code computes", never asked for its ``__fspath__`` (which would run the agent's
code inside the check). Standard library only: shipped into sub-agent kernels.
"""

import os as _os

_getcwd, _lstat, _readlink = _os.getcwd, _os.lstat, _os.readlink  # C builtins: patching os changes nothing here
_str, _decode = str.__str__, bytes.decode
_PATH_TYPES = ()
try:
    import pathlib as _pathlib

    _PATH_TYPES = tuple(getattr(_pathlib, name) for name in ("PurePath", "PurePosixPath", "PureWindowsPath", "Path",
                                                             "PosixPath", "WindowsPath"))
    _path_str = _pathlib.PurePath.__str__
except ImportError:  # pragma: no cover
    _path_str = None
_DIR_ENTRY = getattr(_os, "DirEntry", type(None))
_WRITE_FLAGS = _os.O_WRONLY | _os.O_RDWR | _os.O_APPEND | _os.O_CREAT | _os.O_TRUNC
UNKNOWN = "<a path the code computes>"
MAX_SHOWN = 200

WRITES = {"open", "os.mkdir", "os.truncate", "os.chmod", "os.chown", "shutil.copyfile", "shutil.copytree",
          "os.symlink", "os.link"}
REMOVES = {"os.remove", "os.rmdir", "shutil.rmtree", "os.rename", "shutil.move"}
PROCESSES = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
             "os.kill", "os.killpg"}
NETWORK = {"socket.connect", "socket.sendto", "socket.bind", "urllib.Request", "webbrowser.open"}
NAMES = {"socket.getaddrinfo", "http.client.connect"}  # a host name, remembered for the connect that follows
CONTROLS = {"gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames", "sys.settrace",
            "sys.setprofile", "sys.addaudithook", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata",
            "ctypes.call_function"}
WATCHED = frozenset(WRITES | REMOVES | PROCESSES | NETWORK | NAMES | CONTROLS)
_VERB = {"os.mkdir": "create the folder", "os.truncate": "truncate", "os.chmod": "change the permissions of",
         "os.chown": "change the owner of", "os.symlink": "create the link", "os.link": "create the link"}


def plain(value):
    """``value`` as text when it is plain data (never calling the agent's methods); None otherwise."""
    kind = type(value)
    if issubclass(kind, str):
        return _str(value)
    if issubclass(kind, (bytes, bytearray)):
        return _decode(bytes(value), "utf-8", "surrogateescape")
    if kind in _PATH_TYPES and _path_str is not None:
        return _path_str(value)
    if kind is _DIR_ENTRY:
        return plain(value.path)
    if kind is int or kind is bool:
        return str(int(value))
    return None


def _shown(text):
    text = text.replace("\n", "\\n")
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "..."


def describe(event, args):
    """The raw action of an audit event, or None: ("write"|"remove"|"move"|"process"|"network"|"name"|
    "controls", ...)."""
    n = len(args)
    if event == "open":
        path, mode, flags = (args + (None, None, 0))[:3]
        if type(path) is int or not (type(flags) is int and flags & _WRITE_FLAGS or
                                      type(mode) is str and any(c in mode for c in "wax+")):
            return None
        return ("write", "write", _path(path), None)
    if event in WRITES:
        if event in ("shutil.copyfile", "shutil.copytree"):
            return ("write", f"copy {_text(args[0])} to", _path(args[1]), None)
        if event in ("os.symlink", "os.link"):
            dir_fd = args[2] if event == "os.symlink" and n > 2 else args[3] if n > 3 else None
            return ("write", _VERB[event], _path(args[1]), dir_fd)
        if type(args[0]) is int:
            return None  # an open file descriptor: its opening was checked
        dir_fd = args[-1] if event in ("os.mkdir", "os.chmod", "os.chown") else None
        return ("write", _VERB[event], _path(args[0]), dir_fd)
    if event in ("os.remove", "os.rmdir", "shutil.rmtree"):
        verb = {"os.remove": "remove", "os.rmdir": "remove the folder"}.get(event, "remove the folder")
        return ("remove", verb, _path(args[0]), args[1] if n > 1 else None, event == "shutil.rmtree")
    if event in ("os.rename", "shutil.move"):
        return ("move", _path(args[0]), _path(args[1]), args[2] if n > 2 else None, args[3] if n > 3 else None)
    if event in PROCESSES:
        return ("process", event, _command(event, args))
    if event in NAMES:
        host, port = (args[0], args[1]) if event == "socket.getaddrinfo" else (args[1], args[2])
        return ("name", plain(host), port if type(port) is int else None)
    if event in NETWORK:
        return _network(event, args)
    if event in CONTROLS:
        return ("controls", event)
    return None


def _text(value):
    text = plain(value)
    return UNKNOWN if text is None else text


def _path(value):
    return _text(value)


def _command(event, args):
    if event == "subprocess.Popen":
        argv = args[1]
        if type(argv) in (list, tuple):
            return " ".join(_text(a) for a in argv)
        return _text(argv if argv is not None else args[0])
    if event == "os.system":
        return _text(args[0])
    if event in ("os.exec", "os.posix_spawn"):
        argv = args[1]
        return " ".join(_text(a) for a in argv) if type(argv) in (list, tuple) else _text(args[0])
    if event == "os.spawn":
        argv = args[2]
        return " ".join(_text(a) for a in argv) if type(argv) in (list, tuple) else _text(args[1])
    if event in ("os.kill", "os.killpg"):
        return f"{_text(args[0])}:{_text(args[1])}"
    return ""


def _network(event, args):
    if event in ("urllib.Request", "webbrowser.open"):
        url = plain(args[0])
        if url is None or not url.lower().startswith(("http://", "https://", "ftp://", "ws://", "wss://")):
            return None if url is not None else ("network", event, UNKNOWN, None, UNKNOWN)
        rest = url.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
        host, _, port = rest.rpartition(":") if rest.count(":") == 1 else (rest, "", "")
        scheme = url.split(":", 1)[0].lower()
        default = {"http": 80, "ws": 80, "https": 443, "wss": 443, "ftp": 21}.get(scheme)
        return ("network", event, host or rest, int(port) if port.isdigit() else default, url)
    address = args[1] if len(args) > 1 else None
    if type(address) is tuple and address:
        host, port = plain(address[0]), address[1] if len(address) > 1 and type(address[1]) is int else None
        if event == "socket.bind" and port == 0:
            return None  # a free port picked to probe (urllib3 checks for IPv6 so): nothing listens yet
        return ("network", event, host or UNKNOWN, port, None)
    text = plain(address)
    if text == "" or event == "socket.bind" and text is not None and text.startswith("\0"):
        return None
    return ("network", event, text or UNKNOWN, None, None)  # a unix socket's path


# ----------------------------------------------------------------------------- paths
def resolve(path, dir_fd=None):
    """``path`` made absolute (against ``dir_fd`` or the current directory) with its symlinks followed,
    as far as it exists; the rest is joined as written. UNKNOWN stays UNKNOWN."""
    if path == UNKNOWN:
        return path
    if not path.startswith("/"):
        base = None
        if type(dir_fd) is int and dir_fd >= 0:
            try:
                base = _readlink(f"/proc/self/fd/{dir_fd}")
            except OSError:
                base = None
        path = (base or _getcwd()) + "/" + path
    return _real(path, 0)


def _real(path, hops):
    parts = [p for p in path.split("/") if p and p != "."]
    done = ""
    for i, part in enumerate(parts):
        if part == "..":
            done = done.rpartition("/")[0]
            continue
        candidate = done + "/" + part
        try:
            mode = _lstat(candidate).st_mode
        except OSError:
            rest = [p for p in parts[i + 1:]]
            return _lexical(candidate + ("/" + "/".join(rest) if rest else ""))
        if mode & 0o170000 == 0o120000 and hops < 40:
            try:
                link = _readlink(candidate)
            except OSError:
                link = None
            if link is not None:
                target = link if link.startswith("/") else done + "/" + link
                rest = "/".join(parts[i + 1:])
                return _real(target + ("/" + rest if rest else ""), hops + 1)
        done = candidate
    return done or "/"


def _lexical(path):
    out = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            out = out[:-1]
        else:
            out.append(part)
    return "/" + "/".join(out)


def inside(path, folder):
    return folder is not None and path != UNKNOWN and (path == folder or path.startswith(folder.rstrip("/") + "/"))


def _folder(path):
    return path.rpartition("/")[0] or "/"


# ----------------------------------------------------------------------------- judging
def judge(raw, workspace, names=None):
    """``(rule, question, key, recursive)`` for a raw action in a step whose workspace is ``workspace`` (a
    resolved folder), or None when it is not risky there. ``names``: {port: host} looked up on this thread."""
    kind = raw[0]
    if kind == "write":
        _, verb, path, dir_fd = raw
        target = resolve(path, dir_fd)
        if inside(target, workspace):
            return None
        return ("writes_outside_workspace", f"{verb} {_shown(target)}? outside the workspace", _folder(target), False)
    if kind == "remove":
        _, verb, path, dir_fd, recursive = raw
        target = resolve(path, dir_fd)
        extra = " and everything in it" if recursive else ""
        return ("removes_files", f"{verb} {_shown(target)}{extra}? {_where(target, workspace)}",
                target if recursive else _folder(target), recursive)
    if kind == "move":
        _, src, dst, src_fd, dst_fd = raw
        source, target = resolve(src, src_fd), resolve(dst, dst_fd)
        where = "outside the workspace" if not (inside(source, workspace) and inside(target, workspace)) \
            else "in the workspace"
        return ("removes_files", f"move {_shown(source)} to {_shown(target)}? {where}", _folder(source), False)
    if kind == "process":
        _, event, command = raw
        what = {"os.fork": "fork the kernel's process", "os.forkpty": "fork the kernel's process",
                "os.exec": f"replace the kernel's process with {_shown(command)}",
                "os.kill": f"send a signal to a process ({command})",
                "os.killpg": f"send a signal to a process group ({command})"}.get(event, f"run {_shown(command)}")
        program = command.split(" ", 1)[0] if command else event
        return ("starts_process", what + "?", program, False)
    if kind == "network":
        _, event, host, port, url = raw
        name = (names or {}).get(port) if event == "socket.connect" and port is not None else None
        shown = f"{name} ({host})" if name and name != host else host
        where = f"{shown}:{port}" if port is not None else shown
        what = {"urllib.Request": f"open {_shown(url or host)}", "webbrowser.open": f"open {_shown(url or host)} in a browser",
                "socket.bind": f"listen on {where}", "socket.sendto": f"send to {where}"}.get(event, f"connect to {where}")
        return ("network", what + "?", f"{name or host}:{port}", False)
    if kind == "controls":
        return ("controls", f"reach the agent's own controls ({raw[1]})?", raw[1], False)
    return None


def _where(target, workspace):
    return "in the workspace" if inside(target, workspace) else "outside the workspace"
