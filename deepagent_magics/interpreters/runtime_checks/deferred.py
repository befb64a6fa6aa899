"""What a run's code leaves to run later, outside any step: found when the run ends, removed under approval.

The runtime checks (`runtime_checks`) watch the agent's code while a step runs. Code it registers to
run later runs outside every step, unwatched: an ``atexit`` handler, a ``weakref.finalize``, an import
hook on ``sys.meta_path`` or ``sys.path_hooks``, an IPython event callback, input or AST transformer or
custom exception handler, a signal handler, ``sys.excepthook`` and its kin, a trace or profile function,
a patched builtin, a ``threading.Timer``. A `Deferred` is taken when a run starts (`start`) and settled
when it ends (`settle`): under approval what the run added is removed and what it replaced is put back;
without approval it is kept (the user gave the agent the kernel's powers) and only named. Either way the
run's record says what (``config.deferred``) and the cell prints one line.

Whose is an entry? ``atexit.register`` and ``weakref.finalize`` are watched while a run is open (`Hooks`)
and an entry is the run's when the code that registered it is the agent's: a step's code, code it
compiled, or a module imported from the workspace or written since the run began. A library that an
import of the agent's runs (``import matplotlib.pyplot`` registering its figure flush, ``tempfile``
making a finalizer for the folder it made) is the library's. The other registries are compared with
what they held when the run began; an addition there is the library's when it is a plain function (or
an object of a class) from a file outside the workspace that was there before the run, with nothing of
the agent's bound to it. The host's own (this package's) entries are never touched. docs/safety.md
says what this does not see.
"""

from __future__ import annotations

import atexit
import builtins
import os
import signal
import sys
import threading
import time
import types
import weakref
from typing import Any

from ...core.policy import approval

_MISSING = object()
STEP_PREFIX = "<agent step"
PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
SYS_HOOKS = ("excepthook", "unraisablehook", "breakpointhook", "displayhook")
SHELL_LISTS = ("input_transformers_cleanup", "input_transformers_post", "ast_transformers")
NAME_LENGTH = 80
_TYPE_NAME = type.__dict__["__name__"].__get__  # a class's own name, whatever its metaclass says
SHOWN = 6  # entries named in the cell's line (the record has all)


# ----------------------------------------------------------------------------- whose code is it
class Origin:
    """Which files are the agent's: the workspace, and whatever changed since ``started`` (wall clock)."""

    def __init__(self, workspace: str | None, started: float):
        self.workspace = os.path.realpath(workspace) + os.sep if workspace else None
        self.started = started

    def library_file(self, filename: Any) -> bool:
        """A real file outside the workspace, unchanged since the run began (the host's files included)."""
        if not isinstance(filename, str) or not os.path.isabs(filename):
            return False
        try:
            changed = os.stat(filename).st_ctime
        except OSError:
            return False
        if self.workspace and os.path.realpath(filename).startswith(self.workspace):
            return False
        return changed < self.started

    def registrar_is_agent(self, frame: Any) -> bool:
        """Whether the code that called a registration (``frame``) is the agent's: a step's code, or a file
        of the workspace or new since the run began; code compiled from a string (``exec``, a cell the agent
        runs through ``run_cell``) is whoever's code runs it, the nearest step or host frame out from it."""
        filename = frame.f_code.co_filename
        if filename.startswith(STEP_PREFIX):
            return True
        if filename.startswith("<frozen "):
            return False  # the standard library's own frozen modules
        if os.path.isabs(filename) and os.path.exists(filename):
            return not self.library_file(filename)
        frame = frame.f_back
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.startswith(STEP_PREFIX):
                return True
            if filename.startswith(PACKAGE):
                return False  # the host's code is nearer (a tool the agent called)
            frame = frame.f_back
        return False

    def library_thing(self, thing: Any) -> bool:
        """A plain function, or an object of a class whose methods all come from library files, with nothing
        of the agent's bound to it; or such a function bound to such an object (a library's thread target, as
        ``server.process_request_thread``)."""
        if type(thing) is types.MethodType:
            return self.library_thing(thing.__func__) and self.library_thing(thing.__self__)
        if type(thing) is types.FunctionType:
            return _closes_over_nothing(thing) and (self.library_file(thing.__code__.co_filename) or _frozen(thing))
        kind = thing if isinstance(thing, type) else type(thing)
        if type(kind) is not type:
            return False
        methods = [getattr(value, "__func__", value) for klass in kind.__mro__[:-1] for value in vars(klass).values()
                   if isinstance(value, (types.FunctionType, classmethod, staticmethod))]
        return bool(methods) and all(type(value) is types.FunctionType and _closes_over_nothing(value)
                                     and self.library_file(value.__code__.co_filename) for value in methods)


def _closes_over_nothing(function: types.FunctionType) -> bool:
    """No closure, or only the ``__class__`` cell a method that calls ``super()`` gets (its own class)."""
    return function.__closure__ is None or function.__code__.co_freevars == ("__class__",)


def _frozen(function: types.FunctionType) -> bool:
    """A function of a frozen standard-library module (``os.path.join``), found there under its own name."""
    filename = function.__code__.co_filename
    module = sys.modules.get(filename[len("<frozen "):-1]) if filename.startswith("<frozen ") else None
    return module is not None and vars(module).get(function.__name__) is function


def host_owned(thing: Any) -> bool:
    """One of this package's own functions (a time limit's signal handler, a guard's patch), bound or not."""
    function = thing.__func__ if isinstance(thing, types.MethodType) else thing
    return type(function) is types.FunctionType and function.__code__.co_filename.startswith(PACKAGE)


def name_of(thing: Any) -> str:
    """A short name for the record and the line, read without running any of the agent's code."""
    if isinstance(thing, (types.FunctionType, types.BuiltinFunctionType)):
        text = f"{thing.__module__ or ''}.{thing.__qualname__}".lstrip(".")
    elif isinstance(thing, types.MethodType) and type(thing.__func__) is types.FunctionType:
        text = f"{_TYPE_NAME(type(thing.__self__))}.{thing.__func__.__name__}"
    elif isinstance(thing, type):
        text = f"class {_TYPE_NAME(thing)}"
    else:
        text = f"{_TYPE_NAME(type(thing))} object"
    text = "".join(char if char.isprintable() else "?" for char in str.__str__(text))
    return text[:NAME_LENGTH]


# ----------------------------------------------------------------------------- atexit and finalize
class Hooks:
    """``atexit.register`` and ``weakref.finalize`` watched while at least one run is open (counted):
    each registration the agent's code made goes to every open `Deferred`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open: list[Deferred] = []
        self.originals: tuple = ()

    def enter(self, deferred: "Deferred") -> None:
        with self.lock:
            if not self.open:
                self._install()
            self.open.append(deferred)

    def leave(self, deferred: "Deferred") -> None:
        with self.lock:
            if deferred in self.open:
                self.open.remove(deferred)
            if not self.open and self.originals:
                register, init = self.originals
                self.originals = ()
                if atexit.register is self.register:
                    atexit.register = register
                if weakref.finalize.__dict__.get("__init__") is self.finalize_init:
                    weakref.finalize.__init__ = init

    def _install(self) -> None:
        register, init = atexit.register, weakref.finalize.__init__
        hooks = self

        def watched_register(func, /, *args, **kwargs):
            result = register(func, *args, **kwargs)
            hooks.seen("atexit", func, args or kwargs, sys._getframe(1))
            return result

        def watched_init(self, obj, func, /, *args, **kwargs):
            init(self, obj, func, *args, **kwargs)
            hooks.seen("finalize", self, args or kwargs, sys._getframe(1))

        self.register, self.finalize_init = watched_register, watched_init
        self.originals = (register, init)
        atexit.register = watched_register
        weakref.finalize.__init__ = watched_init

    def seen(self, kind: str, entry: Any, bound: Any, frame: Any) -> None:
        for deferred in list(self.open):
            if deferred.origin.registrar_is_agent(frame):
                deferred.registered.append((kind, entry))


HOOKS = Hooks()


# ----------------------------------------------------------------------------- one run's
class Deferred:
    """What the registries held when a run began; `settle` at its end."""

    def __init__(self, shell: Any = None, workspace: str | None = None):
        self.shell = shell
        self.origin = Origin(workspace, time.time())
        self.registered: list[tuple[str, Any]] = []
        self.threads = {thread.ident for thread in threading.enumerate()}
        self.lists = {name: list(value) for name, value in self._lists().items()}
        self.slots = self._slots()
        self.builtins = dict(builtins.__dict__)
        self.events = {event: list(callbacks) for event, callbacks in self._events().items()}
        HOOKS.enter(self)

    # the registries
    def _lists(self) -> dict[str, list]:
        lists = {"sys.meta_path": sys.meta_path, "sys.path_hooks": sys.path_hooks,
                 "threading atexit": getattr(threading, "_threading_atexits", [])}
        for name in SHELL_LISTS:
            value = getattr(self.shell, name, None)
            if isinstance(value, list):
                lists[f"IPython {name.replace('_', ' ').rstrip('s')}"] = value
        return lists

    def _events(self) -> dict[str, list]:
        events = getattr(self.shell, "events", None)
        callbacks = getattr(events, "callbacks", None)
        return callbacks if isinstance(callbacks, dict) else {}

    def _slots(self) -> dict[str, tuple[Any, str, Any]]:
        """``what -> (owner, attribute or signal, value)`` for the single-valued hooks."""
        slots: dict[str, tuple[Any, str, Any]] = {f"sys.{name}": (sys, name, getattr(sys, name, None))
                                                   for name in SYS_HOOKS}
        slots["threading.excepthook"] = (threading, "excepthook", threading.excepthook)
        slots["threading.settrace"] = (threading, "_trace_hook", getattr(threading, "_trace_hook", None))
        slots["threading.setprofile"] = (threading, "_profile_hook", getattr(threading, "_profile_hook", None))
        slots["sys.settrace"] = (sys, "settrace", sys.gettrace())
        slots["sys.setprofile"] = (sys, "setprofile", sys.getprofile())
        if threading.current_thread() is threading.main_thread():
            for number in sorted(signal.valid_signals()):
                try:
                    slots[f"signal {signal.Signals(number).name}"] = (signal, number, signal.getsignal(number))
                except (ValueError, OSError):  # a signal Python cannot read (SIGKILL's number has no handler)
                    continue
        for name in ("events", "custom_exceptions", "CustomTB", "showtraceback", "run_cell"):
            if self.shell is not None:
                slots[f"IPython {name}"] = (self.shell, name, vars(self.shell).get(name, _MISSING))
        return slots

    # ------------------------------------------------------------- at the run's end
    def settle(self, remove: bool) -> list[str]:
        """What the run left to run later, named; removed (or put back) when ``remove``."""
        HOOKS.leave(self)
        found: list[str] = []
        for kind, entry in self.registered:
            what = f"{'atexit' if kind == 'atexit' else 'weakref.finalize'} {name_of(self._callable(kind, entry))}"
            if kind == "finalize" and not entry.alive:
                continue
            found.append(what)
            if remove:
                self._unregister(kind, entry)
        for what, current in self._lists().items():
            found += self._settle_list(what, self.lists.get(what, []), current, remove)
        found += self._settle_slots(remove)  # before the events: a replaced event manager comes back first
        found += self._settle_events(remove)
        found += self._settle_builtins(remove)
        found += self._settle_threads(remove)
        return found

    @staticmethod
    def _callable(kind: str, entry: Any) -> Any:
        if kind == "atexit":
            return entry
        info = weakref.finalize._registry.get(entry)
        return info.func if info is not None else entry

    @staticmethod
    def _unregister(kind: str, entry: Any) -> None:
        try:
            atexit.unregister(entry) if kind == "atexit" else entry.detach()
        except Exception:  # noqa: BLE001 - the agent's object may compare or hash any way it likes: the rest go on
            pass

    def _settle_list(self, what: str, before: list, current: list, remove: bool) -> list[str]:
        """Additions named (and taken out when ``remove``); entries the run took out put back."""
        added = [item for item in current if not any(item is old for old in before)]
        added = [item for item in added if not host_owned(item) and not self.origin.library_thing(item)]
        missing = [item for item in before if not any(item is now for now in current)]
        found = [f"{what} {name_of(item)}" for item in added] + [f"{what} {name_of(item)} (taken out)" for item in missing]
        if remove and found:
            kept = [item for item in current if not any(item is new for new in added)]
            for item in missing:  # back where it was
                kept.insert(next((i for i, old in enumerate(before) if old is item), len(kept)), item)
            current[:] = kept
        return found

    def _settle_events(self, remove: bool) -> list[str]:
        found, events = [], self._events()
        for event, before in self.events.items():
            if not isinstance(events.get(event), list):
                events[event] = []  # the run replaced or dropped the event's list: it comes back
            found += self._settle_list(f"IPython event {event}", before, events[event], remove)
        return found

    def _settle_slots(self, remove: bool) -> list[str]:
        found = []
        for what, (owner, key, before) in self.slots.items():
            now = self._read(owner, key)
            if now is before or (type(now) is int and type(before) is int and now == before) or host_owned(now):
                continue
            found.append(f"{what} {name_of(now)}")
            if remove:
                self._write(owner, key, before)
        return found

    @staticmethod
    def _read(owner: Any, key: Any) -> Any:
        if owner is signal:
            return signal.getsignal(key)
        if key == "settrace":
            return sys.gettrace()
        if key == "setprofile":
            return sys.getprofile()
        if owner is not sys and owner is not threading:
            return vars(owner).get(key, _MISSING)  # the shell's own attribute, over its class's
        return getattr(owner, key, None)

    @staticmethod
    def _write(owner: Any, key: Any, value: Any) -> None:
        try:
            if owner is signal:
                signal.signal(key, value if value is not None else signal.SIG_DFL)
            elif key in ("settrace", "setprofile"):
                getattr(sys, key)(value)
            elif value is _MISSING:
                vars(owner).pop(key, None)
            else:
                setattr(owner, key, value)
        except (ValueError, TypeError, OSError):  # a handler Python cannot set back (not the main thread)
            pass

    def _settle_builtins(self, remove: bool) -> list[str]:
        found = []
        now = builtins.__dict__
        for name in [name for name in list(now) if name != "_"]:
            value = now.get(name, _MISSING)
            old = self.builtins.get(name, _MISSING)
            if value is old or host_owned(value):
                continue
            found.append(f"builtins.{name}")
            if remove:
                if old is _MISSING:
                    now.pop(name, None)
                else:
                    now[name] = old
        for name in [name for name in self.builtins if name not in now and name != "_"]:
            found.append(f"builtins.{name} (deleted)")
            if remove:
                now[name] = self.builtins[name]
        return found

    def _settle_threads(self, remove: bool) -> list[str]:
        found = []
        for thread in threading.enumerate():
            if thread.ident in self.threads or not thread.is_alive():
                continue
            target = getattr(thread, "function", None) or getattr(thread, "_target", None)
            if target is None:
                run = getattr(type(thread), "run", None)
                if run is threading.Thread.run or host_owned(run) or self.origin.library_thing(run):
                    continue
                target = run
            elif host_owned(target) or self.origin.library_thing(target):
                continue
            if isinstance(thread, threading.Timer) and remove:
                thread.cancel()
                found.append(f"threading.Timer {name_of(target)} (cancelled)")
            else:
                name = threading.Thread.name.fget(thread)  # the thread's own name, not a property of the agent's
                found.append(f"thread {name_of(name) if not isinstance(name, str) else name[:40]!r} running {name_of(target)}")
        return found


def settle_deferred(deferred: Deferred, run: Any) -> list[str]:
    """At ``run``'s end: under approval what its code left to run later is removed, else kept; the record's
    ``config.deferred`` names it either way (``{"removed": [...]}`` or ``{"kept": [...]}``)."""
    remove = approval.checking(run) is not None
    left = deferred.settle(remove)
    if left and run is not None:
        run.config["deferred"] = {"removed" if remove else "kept": left}
    return left


def summary(deferred: dict[str, list[str]]) -> str:
    """The cell's one line for a record's ``config.deferred``."""
    for verb, left in deferred.items():
        shown = ", ".join(left[:SHOWN]) + (f" and {len(left) - SHOWN} more" if len(left) > SHOWN else "")
        if verb == "removed":
            return f"deepagent: removed what the agent's code left to run later: {shown}"
        return f"deepagent: the agent's code left these to run later (kept; under --approve they are removed): {shown}"
    return ""
