"""Guards: while agent code runs, the calls that would end the process it runs in are refused.

The root agent's code runs in the user's kernel, next to hours of their work. Models
write ``exit()`` when they think they are done, and IPython binds ``exit``/``quit`` to
objects that ask the kernel to shut down. While a guarded block runs:

- `exit_requests`: ``exit()``/``quit()`` (IPython's and the builtins'), and any
  shell's ``ask_exit()`` raise `Refused` instead of ending the kernel;
- `process_kills`: ``os._exit``, ``os.abort``, and ``os.kill``/``os.killpg``/
  ``signal.raise_signal``/``signal.pthread_kill`` aimed at this process, its process
  group or 0 with a signal that would end it (its default action; a Python handler such
  as SIGINT's KeyboardInterrupt is fine), and any ``os.kill(-1, ...)`` (every process of
  the user), raise `Refused`. Signals to other processes (a sub-agent's kernel group)
  and signal 0 (an existence check) pass.

``sys.exit`` and ``raise SystemExit`` need no patch: they raise, and the interpreter
turns the exception into an error the agent reads.

The patches are process-global while at least one guarded block runs anywhere (they are
reference-counted, so agents running in several threads share them) and removed when
the last one ends. A forked child of agent code gets the real functions (the refusals
hold in the guarded process only). A refused call raises `Refused`, which the agent's
traceback shows; the agent may catch it, the kernel lives either way.

Standard library only: this file's source also runs inside sub-agent kernels (the pool
installs it there as ``_deepagent_guards``, before `kernel_side`).
"""

import builtins
import os
import signal
import sys
import threading


class Refused(RuntimeError):
    """A call that would end the user's kernel, refused while agent code runs."""


EXIT_HINT = "{what} ends the user's kernel; agent code may not call it. To finish, call SUBMIT(...)."
KILL_HINT = "{what} would end the user's kernel; agent code may not call it."

# The real functions, as they were when this module was imported (host code keeps using them).
ORIGINAL = {
    "_exit": os._exit,
    "abort": os.abort,
    "kill": os.kill,
    "killpg": getattr(os, "killpg", None),
    "raise_signal": getattr(signal, "raise_signal", None),
    "pthread_kill": getattr(signal, "pthread_kill", None),
}


class Patches:
    """Attributes replaced while at least one holder is inside (reference-counted, thread-safe).

    ``make()`` returns ``[(owner, name, replacement), ...]``; it is called when the first
    holder enters, so classes loaded late (IPython's shells) are found. On the way out an
    attribute is put back only if it still holds our replacement (someone else's later
    patch is left alone). ``pid`` is the process that installed them: in a forked child
    the replacements call through to the originals.
    """

    def __init__(self, make):
        self._make = make
        self._lock = threading.Lock()
        self._holders = 0
        self._installed = []
        self.pid = None

    def acquire(self):
        with self._lock:
            if self._holders == 0:
                self.pid = os.getpid()
                for owner, name, replacement in self._make(self):
                    original = owner.__dict__.get(name, _MISSING) if isinstance(owner, type) else getattr(owner, name)
                    setattr(owner, name, replacement)
                    self._installed.append((owner, name, original, replacement))
            self._holders += 1

    def release(self):
        with self._lock:
            self._holders -= 1
            if self._holders:
                return
            installed, self._installed = self._installed, []
            for owner, name, original, replacement in reversed(installed):
                current = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
                if current is not replacement:
                    continue
                if original is _MISSING:
                    delattr(owner, name)
                else:
                    setattr(owner, name, original)

    def active(self):
        """True in the process that installed the patches (a forked child is free)."""
        return os.getpid() == self.pid

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()
        return False


_MISSING = object()


# ----------------------------------------------------------------------------- exit requests
def _exit_patches(patches):
    def refuse_quitter(self, code=None):
        if not patches.active():
            return original_call(self, code)
        raise Refused(EXIT_HINT.format(what=f"{getattr(self, 'name', 'exit')}()"))

    def refuse_ask_exit(self, *args, **kwargs):
        raise Refused(EXIT_HINT.format(what="exit() (the shell's ask_exit())"))

    out = []
    quitter = type(getattr(builtins, "exit", None))
    if quitter.__module__ == "_sitebuiltins":  # site.Quitter: closes sys.stdin, then raises SystemExit
        original_call = quitter.__call__
        out.append((quitter, "__call__", refuse_quitter))
    for shell_class in _shell_classes():
        if "ask_exit" in shell_class.__dict__:
            out.append((shell_class, "ask_exit", refuse_ask_exit))
    return out


def _shell_classes():
    """IPython's InteractiveShell and every subclass loaded (terminal, ipykernel's ZMQ shell)."""
    module = sys.modules.get("IPython.core.interactiveshell")
    if module is None:
        return []
    seen, todo = [], [module.InteractiveShell]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return seen


exit_requests = Patches(_exit_patches)


# ----------------------------------------------------------------------------- process kills
def _kill_patches(patches):
    real = ORIGINAL

    def own_group():
        try:
            return os.getpgid(0)
        except OSError:
            return None

    def hits_us(pid):
        return pid in (0, os.getpid()) or (pid < -1 and -pid == own_group())

    def _exit(*args, **kwargs):
        if patches.active():
            raise Refused(KILL_HINT.format(what="os._exit()"))
        return real["_exit"](*args, **kwargs)

    def abort():
        if patches.active():
            raise Refused(KILL_HINT.format(what="os.abort()"))
        return real["abort"]()

    def kill(pid, sig):
        if patches.active() and sig and (int(pid) == -1 or hits_us(int(pid)) and _would_end(sig)):
            raise Refused(KILL_HINT.format(what=f"os.kill({pid}, {_name(sig)})"))
        return real["kill"](pid, sig)

    def killpg(pgid, sig):
        if patches.active() and sig and int(pgid) in (0, own_group()) and _would_end(sig):
            raise Refused(KILL_HINT.format(what=f"os.killpg({pgid}, {_name(sig)})"))
        return real["killpg"](pgid, sig)

    def raise_signal(sig):
        if patches.active() and _would_end(sig):
            raise Refused(KILL_HINT.format(what=f"signal.raise_signal({_name(sig)})"))
        return real["raise_signal"](sig)

    def pthread_kill(thread_id, sig):
        if patches.active() and sig and _would_end(sig):
            raise Refused(KILL_HINT.format(what=f"signal.pthread_kill(..., {_name(sig)})"))
        return real["pthread_kill"](thread_id, sig)

    out = [(os, "_exit", _exit), (os, "abort", abort), (os, "kill", kill)]
    if real["killpg"] is not None:
        out.append((os, "killpg", killpg))
    if real["raise_signal"] is not None:
        out.append((signal, "raise_signal", raise_signal))
    if real["pthread_kill"] is not None:
        out.append((signal, "pthread_kill", pthread_kill))
    return out


_HARMLESS_BY_DEFAULT = {getattr(signal, name) for name in ("SIGCHLD", "SIGURG", "SIGWINCH", "SIGCONT")
                        if hasattr(signal, name)}


def _would_end(sig):
    """Would ``sig`` delivered to this process end (or stop) it? A Python handler (SIGINT's
    KeyboardInterrupt, the stop button) or an ignored signal would not; a default action mostly would."""
    try:
        sig = signal.Signals(sig)
    except (ValueError, TypeError):
        return True
    if sig in (getattr(signal, "SIGKILL", None), getattr(signal, "SIGSTOP", None)):
        return True
    try:
        handler = signal.getsignal(sig)
    except (ValueError, OSError):
        return True
    if callable(handler) or handler == signal.SIG_IGN:
        return False
    return handler is None or sig not in _HARMLESS_BY_DEFAULT  # None: a handler set outside Python


def _name(sig):
    try:
        return signal.Signals(sig).name
    except (ValueError, TypeError):
        return str(sig)


process_kills = Patches(_kill_patches)


class guarded:
    """``with guarded():`` refuses exits (and, with ``kills=True``, self-signals) for the block."""

    def __init__(self, kills=True):
        self.sets = (exit_requests, process_kills) if kills else (exit_requests,)

    def __enter__(self):
        for patches in self.sets:
            patches.acquire()
        return self

    def __exit__(self, *exc):
        for patches in reversed(self.sets):
            patches.release()
        return False


def exit_error(exc):
    """The line an agent reads when its code raised SystemExit or GeneratorExit at the top."""
    kind = type(exc).__name__
    what = "sys.exit()" if isinstance(exc, SystemExit) else f"raise {kind}"
    return f"{kind}: {EXIT_HINT.format(what=what)}"
