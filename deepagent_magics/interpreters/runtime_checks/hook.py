"""The audit hook: whose code is running now, and asking before the agent's code acts.

`install` adds one audit hook (PEP 578) to the process; it cannot be removed, so for every
event it first returns at once unless a step is registered (a set lookup and a truth test:
the user's code between runs pays that and nothing else). Which code is the agent's is read
from the thread's stack, never from a flag the agent could clear:

- a **step** is registered by `kernel_side.exec_step`, which raises ``deepagent.step`` with
  the step's `scope` just before it runs the agent's code, and ``deepagent.step_end`` after.
  The hook accepts them only from a frame running exec_step's own code object, and keeps the
  frame: code is the agent's while that frame is below it on the stack;
- a **thread** the agent's code starts is followed: `threading` and ``_thread`` start every
  thread through `start_new_thread`, which asks the hook (``deepagent.thread``) whether its
  caller is the agent's; the new thread's first frame (`run_thread`) registers itself
  (``deepagent.thread_run``) with the step it came from, so a ``ThreadPoolExecutor`` or a
  ``Thread(target=os.remove)`` the agent starts is the agent's until it ends or its run does;
- a **host** frame above all that (a tool the agent called: ``ShellInterpreter.invoke_tool``,
  the time limit's own tracing) makes the code above it the host's: ``delegate`` may start
  kernels and ``llm_query`` reach the provider. Agent code called back from a tool is the
  agent's again: the nearest classified frame decides.

An action (`actions.describe`, `actions.judge`) the step's rules call risky is asked through
the step's ``ask`` with the resolved path or host; a refusal raises ``PermissionError`` in the
agent's code. A decision holds for the same kind of action on the same folder, program or host
for the rest of the step; a folder removed whole covers what is under it.

A hostile step cannot switch this off by name: the hook keeps its state in its own arguments,
runs on private copies of this module's and `actions`' functions and globals, with the builtins
as they were, made when this module loads (so patching this module, ``os``, ``os.path`` or
``builtins`` later changes nothing), and refuses registrations from any other code. What it reaches
only through frames and the garbage collector is asked about (``controls``); docs/safety.md
says what does not hold. Standard library only: shipped into sub-agent kernels.
"""

import _thread
import builtins
import sys
import threading
import types

try:
    from . import actions
except ImportError:  # in a kernel: shipped before this module
    import _deepagent_runtime_checks_actions as actions

STEP, STEP_END = "deepagent.step", "deepagent.step_end"
THREAD, THREAD_RUN, THREAD_END = "deepagent.thread", "deepagent.thread_run", "deepagent.thread_end"
WHICH = "deepagent.which"  # args: (a list): the run whose agent code is running here is appended
REGISTRATION = frozenset({STEP, STEP_END, THREAD, THREAD_RUN, THREAD_END, WHICH})
STEP_PREFIX = "<agent step"

_BUILTINS = dict(builtins.__dict__)
_frame_of, _ident, _audit = sys._getframe, _thread.get_ident, sys.audit
describe, judge, resolve, WATCHED = actions.describe, actions.judge, actions.resolve, actions.WATCHED
_IMPORTS = sys.modules.get("_frozen_importlib_external")
_BYTECODE = (_IMPORTS.SourceFileLoader, _IMPORTS.SourceLoader.get_code.__code__,
             {_IMPORTS._write_atomic.__code__, _IMPORTS.SourceFileLoader.set_data.__code__}) if _IMPORTS else None


def scope(ask=None, workspace=None, rules=(), approved=(), run=None):
    """What an interpreter hands `kernel_side.exec_step` for one step (a plain dict: no class of ours to patch);
    the hook copies it when the step starts. ``ask(action)`` is called with ``{"rule", "action", "event"}``
    and returns None (go ahead), the refusal the agent reads, or an exception to raise (the user's ``q``).
    ``rules``: the rules that ask; ``approved``: those the user approved for this block already (its static
    preview); ``run``: whose step it is."""
    return {"ask": ask, "workspace": workspace, "rules": frozenset(rules), "approved": frozenset(approved), "run": run}


def which_run(_audit=_audit, _which=WHICH):
    """The run whose agent code is running on this thread now (a step or a thread it started), or None."""
    box = []
    _audit(_which, box)
    return box[0] if box else None


# ----------------------------------------------------------------------------- installing
def _private(module_globals, other=None, names=()):
    """A copy of a module's globals whose functions are rebuilt on the copy (and ``names`` taken from
    ``other``): what the hook runs, out of reach of whoever patches the module later."""
    copy = dict(module_globals)
    copy["__builtins__"] = dict(_BUILTINS)
    for name in names:
        copy[name] = other[name]
    for name, value in list(copy.items()):
        if type(value) is types.FunctionType and value.__globals__ is module_globals:
            copy[name] = types.FunctionType(value.__code__, copy, value.__name__, value.__defaults__, value.__closure__)
    return copy


def _hook(event, args, _frames=None, _events=None, _registration=None, _check=None, _state=None):
    """The hook itself (rebuilt by `install` with its state as defaults and globals of its own). On the way
    out with a refusal nothing of the checks is left in this frame, which the refusal's traceback keeps."""
    if event not in _events or not _frames and event not in _registration:
        return
    try:
        verdict = _check(_state, event, args)
    except BaseException as exc:  # noqa: BLE001 - an interrupt landing here is raised again, fresh
        verdict = type(exc)() if isinstance(exc, (KeyboardInterrupt, SystemExit)) else PermissionError(
            "deepagent: the runtime check failed; the action was refused")
    if verdict is None:
        return
    del _frames, _events, _registration, _check, _state
    raise verdict


def _new_state(step_code, host_codes):
    return {"frames": {}, "threads": {}, "pending": {}, "busy": set(), "names": {}, "steps": [], "checking": [0],
            "step_code": step_code, "host": host_codes, "start_codes": (start_new_thread.__code__,),
            "run_code": run_thread.__code__}


def _follow_threads(state):
    """Route thread starts through `start_new_thread`. Its globals are a small dict of their own: it is public
    (``threading._start_new_thread``), and nothing of the hook may be reached from it."""
    own = {"__builtins__": dict(_BUILTINS), "_audit": _audit, "_thread": _thread, "THREAD": THREAD,
           "THREAD_RUN": THREAD_RUN, "THREAD_END": THREAD_END}
    run = types.FunctionType(run_thread.__code__, own, "run_thread")
    start = types.FunctionType(start_new_thread.__code__, own, "start_new_thread",
                               ((), None, _thread.start_new_thread, run))
    threading._start_new_thread = _thread.start_new_thread = _thread.start_new = start


def start_new_thread(function, args=(), kwargs=None, _original=None, _run=None):
    """``_thread.start_new_thread``, the new thread starting in `run_thread` (so the hook can follow it)."""
    if _original is None or type(args) is not tuple or kwargs is not None and type(kwargs) is not dict:
        return (_original or _thread.start_new_thread)(function, args, *(() if kwargs is None else (kwargs,)))
    ticket = [function, args, kwargs or {}]
    _audit(THREAD, ticket)
    return _original(_run, (ticket,))


def run_thread(ticket):
    """A new thread's first frame: registered as the agent's when its starter was."""
    _audit(THREAD_RUN, ticket)
    try:
        return ticket[0](*ticket[1], **ticket[2])
    finally:
        _audit(THREAD_END, ticket)


# ----------------------------------------------------------------------------- checking
def check(state, event, args):
    """None, or the exception the hook raises. The thread's own asking (a record written while the user
    is asked) is never checked."""
    me = _ident()
    busy = state["busy"]
    if me in busy:
        return None
    busy.add(me)
    try:
        try:
            caller = _frame_of(2)  # check <- the hook <- the code that raised the event
        except ValueError:  # no Python frame: a thread started raw with a builtin as its target
            caller = None
        if event in REGISTRATION:
            return _register(state, event, args, caller, me)
        raw = describe(event, args)
        if raw is None:
            return None
        if raw[0] == "name":
            if raw[1] and raw[2] is not None:
                state["names"].setdefault(me, {})[raw[2]] = raw[1]
            return None
        if not state["checking"][0] or me not in state["threads"] and not state["steps"]:
            return None  # nothing asks; or no step runs and this thread is none of the agent's
        entry = agent_entry(state, caller)
        if entry is None or not entry["rules"]:
            return None
        if raw[0] == "controls" and caller.f_code in state["host"] or raw[0] in ("write", "move") and _bytecode_cache(caller, raw):
            return None  # the time limit tracing the agent's frames; the import system caching a module's bytecode
        judged = judge(raw, entry["workspace"], state["names"].get(me))
        return None if judged is None else _decide(entry, judged, event)
    except Exception:  # noqa: BLE001 - fail closed, never with our frames in a traceback
        return PermissionError("deepagent: the runtime check failed; the action was refused")
    finally:
        busy.discard(me)


def agent_entry(state, frame):
    """The registered entry of the agent's code running at ``frame`` (None: the host's or the user's)."""
    frames, first, lowest = state["frames"], None, None
    if frame is None:  # a thread with no Python frame at all (`_thread`'s own function on a builtin) while
        return state["steps"][-1] if state["steps"] else None  # a step runs: only the agent starts those
    while frame is not None:
        entry = frames.get(frame)
        if entry is not None:
            lowest, first = entry, first or "agent"
        elif first is None:
            code = frame.f_code
            if code in state["host"]:
                first = "host"
            elif code.co_filename.startswith(STEP_PREFIX):
                first = "agent"
        frame = frame.f_back
    if lowest is not None:
        return lowest if first == "agent" and _live(lowest) else None
    if first == "agent" and state["steps"]:  # agent code in a thread it did not start (a pool made before)
        return state["steps"][-1]
    return None


def _bytecode_cache(frame, raw):
    """Is this Python's import system writing a module's ``__pycache__`` (a first import in the agent's code: a
    folder made, a temporary file written, then renamed into place; ``raw[2]`` is the path, or the rename's target)?
    Only when the stdlib's own source loader compiled the module: a loader of the agent's would choose the code."""
    if _BYTECODE is None or frame is None or frame.f_code not in _BYTECODE[2] or "__pycache__" not in raw[2].split("/"):
        return False
    while frame is not None:
        if frame.f_code is _BYTECODE[1]:
            return type(frame.f_locals.get("self")) is _BYTECODE[0]
        frame = frame.f_back
    return False


def _live(entry):
    run = entry["run"]
    return run is None or getattr(run, "ended_at", None) is None


def _decide(entry, judged, event):
    rule, question, key, recursive = judged
    if rule in entry["approved"]:
        return None
    memory = entry["memory"]
    if rule == "removes_files" and any(key == root or key.startswith(root + "/") for root in entry["roots"]):
        return None
    if (rule, key) in memory:
        known = memory[(rule, key)]
        return PermissionError(known) if known else None
    try:
        answer = entry["ask"]({"rule": rule, "action": question, "event": event})
    except Exception as exc:  # noqa: BLE001 - an asker that fails refuses
        answer = f"Not allowed: asking the user failed ({type(exc).__name__})."
    if isinstance(answer, BaseException):
        return answer
    refusal = answer if type(answer) is str else ("" if answer is None else "Not allowed: no readable answer.")
    memory[(rule, key)] = refusal
    if not refusal and recursive:
        entry["roots"].append(key)
    return PermissionError(refusal) if refusal else None


# ----------------------------------------------------------------------------- registering
def _register(state, event, args, caller, me):
    frames, code = state["frames"], caller.f_code
    if event == WHICH:
        entry = agent_entry(state, caller)
        if args and type(args[0]) is list and entry is not None:
            args[0].append(entry["run"])
        return None
    if event == STEP and code is state["step_code"] and args:
        _prune(state, caller, me)
        state["names"].pop(me, None)
        _add(state, caller, me, _entry(args[0]))
    elif event == THREAD and code in state["start_codes"] and args:
        entry = agent_entry(state, caller.f_back)
        if entry is not None:
            state["pending"][id(args[0])] = (args[0], entry)
    elif event == THREAD_RUN and code is state["run_code"] and args:
        item = state["pending"].pop(id(args[0]), None)
        if item is not None and item[0] is args[0]:
            _add(state, caller, me, dict(item[1], kind="thread"))
    elif event in (STEP_END, THREAD_END) and code in (state["step_code"], state["run_code"]):
        _remove(state, caller, me)
    return None


def _entry(scope):
    scope = scope if type(scope) is dict else {}
    ask, workspace = scope.get("ask"), scope.get("workspace")
    return {"kind": "step", "run": scope.get("run"), "ask": ask,
            "rules": frozenset(scope.get("rules") or ()) if ask else frozenset(),
            "approved": frozenset(scope.get("approved") or ()), "memory": {}, "roots": [],
            "workspace": resolve(str(workspace)) if workspace else None}


def _add(state, frame, me, entry):
    state["frames"][frame] = entry
    state["threads"].setdefault(me, []).append(frame)
    state["checking"][0] += bool(entry["rules"])
    if entry["kind"] == "step":
        state["steps"].append(entry)


def _remove(state, frame, me):
    entry = state["frames"].pop(frame, None)
    if entry is None:
        return
    mine = state["threads"].get(me, [])
    if frame in mine:
        mine.remove(frame)
    if not mine:
        state["threads"].pop(me, None)
    state["checking"][0] -= bool(entry["rules"])
    if entry["kind"] == "step":
        state["steps"][:] = [each for each in state["steps"] if each is not entry]


def _prune(state, frame, me):
    """Forget this thread's registrations whose frames are no longer running (a step whose end was never
    registered: an interrupt between its last line and exec_step's clean-up)."""
    running = set()
    while frame is not None:
        running.add(frame)
        frame = frame.f_back
    for stale in [f for f in state["threads"].get(me, []) if f not in running]:
        _remove(state, stale, me)


def _installer(box):
    """`install`, holding the private copies (made when this module loads) only until it has used them."""

    def install(step_code, host_codes=()):
        """Add the hook (once per process) and start threads through `start_new_thread`. ``step_code``: the
        code object that registers steps (exec_step's); ``host_codes``: code objects of host frames."""
        if not box:
            return False
        mine = box.pop()
        state = mine["_new_state"](step_code, frozenset(host_codes))
        hook = types.FunctionType(mine["_hook"].__code__, {"__builtins__": dict(_BUILTINS)}, "deepagent_audit_hook",
                                  (state["frames"], WATCHED | REGISTRATION, REGISTRATION, mine["check"], state))
        sys.addaudithook(hook)
        mine["_follow_threads"](state)
        return True

    return install


install = _installer([_private(globals(), _private(vars(actions)), ("describe", "judge", "resolve", "WATCHED"))])
