"""Delegation: sub-agents with a fresh context, each in a kernel of its own.

The tools ``delegate``, ``delegate_batched`` and ``review`` run a child
`DeepAgent` one level deeper whose REPL is a fresh kernel from the pool (a
`KernelInterpreter`): the child cannot see its parent's variables, both share
the workspace directory, and the parent sees only the child's result.

Each child runs its RLM loop on a host thread (started in a copy of the
caller's context, so the DSPy settings carry over) while the calling thread
supervises: it starts at most ``max_parallel`` children at a time, stops a child
that runs past ``subagent_timeout`` (its kernel is interrupted, then killed),
and on a KeyboardInterrupt stops every child's kernel, keeps the trajectory and
re-raises. A child that fails for any reason becomes an ``Error: ...`` string for
its parent, which carries on.

Limits hold for the whole tree: ``max_depth`` (an agent at the limit gets an
error from ``delegate``) and ``max_subagents``, one budget counter shared by
every agent in the tree.
"""

from __future__ import annotations

import ast
import contextvars
import copy
import json
import re
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy

from . import session as _session
from .agent import DeepAgent
from .kernel_interpreter import KernelInterpreter, KernelInterpreterFactory
from .kernel_pool import KernelPool, default_pool
from .profiles import UnknownProfile, load_profile
from .run import Run
from .tools import _tool

POLL_SECONDS = 0.1
STOP_GRACE = 1.0  # after a child's kernel is interrupted, before it is killed
ABANDON_GRACE = 5.0  # after the kill, before the parent stops waiting for the child's thread
REVIEWER_PROFILE = "reviewer"
VERDICTS = ("pass", "low", "fail")
DEFAULT_CRITERIA = [
    "It does everything the task asks, completely.",
    "Its facts, numbers and file references are correct: check them against the workspace files and the context.",
    "It makes no claim that the evidence does not support.",
    "It is clear and self-contained for its reader.",
]
_FINISHED = ("finished", "failed", "interrupted")


class Budget:
    """How many sub-agents a whole tree may start: one counter, exact under concurrency."""

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()

    def acquire(self) -> bool:
        with self._lock:
            if self.used >= self.limit:
                return False
            self.used += 1
            return True

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)


@dataclass
class Tree:
    """What every agent in one delegation tree shares."""

    root_run: Run
    budget: Budget
    pool: KernelPool


@dataclass
class Spec:
    task: str
    context: str = ""
    profile: str | None = None


@dataclass
class Outcome:
    ok: bool
    text: str


@dataclass
class Child:
    """One sub-agent: what it was asked, its agent and run, its thread, and how to stop it."""

    spec: Spec
    index: int
    parent: "Child | None" = None
    agent: Any = None
    run: Run | None = None
    timeout: float | None = None
    thread: threading.Thread | None = None
    done: threading.Event = field(default_factory=threading.Event)
    started_at: float | None = None
    interpreters: list[KernelInterpreter] = field(default_factory=list)
    children: list["Child"] = field(default_factory=list)
    stopped: bool = False
    hard: bool = False
    stop_message: str | None = None
    timed_out: bool = False
    cancelled_at: float | None = None
    reported: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ------------------------------------------------------------ running
    def start(self, wake: threading.Event) -> None:
        """Run the child's agent on a host thread, in a copy of the caller's context."""
        context = contextvars.copy_context()
        self.started_at = time.monotonic()
        self.thread = threading.Thread(target=context.run, args=(self._main, wake), daemon=True,
                                       name=f"deepagent-subagent-{self.run.id if self.run else self.index}")
        self.thread.start()

    def _main(self, wake: threading.Event) -> None:
        try:
            if self.stopped:  # before it started
                interrupted = self.stop_message is None
                self._finish("interrupted" if interrupted else "failed", self.stop_message or "KeyboardInterrupt")
                return
            self.agent.run(self.spec.task, context=self.spec.context, run=self.run)
        except KeyboardInterrupt:
            self._finish("interrupted", "KeyboardInterrupt")
        except BaseException as exc:  # what DeepAgent.run does not turn into a failed run itself
            self._finish("failed", f"{type(exc).__name__}: {exc}")
        finally:
            self.done.set()
            wake.set()

    def _finish(self, status: str, error: str) -> None:
        if self.run is not None and self.run.status not in _FINISHED:
            self.run.finish(status, error=error)

    # ------------------------------------------------------------ stopping
    def attach(self, interpreter: KernelInterpreter) -> None:
        """Called by the child's interpreter once it has its kernel: from now on, stopping reaches it."""
        with self._lock:
            self.interpreters.append(interpreter)
            stopped, message, hard = self.stopped, self.stop_message, self.hard
        if stopped:
            interpreter.stop(message, hard=hard)

    def adopt(self, child: "Child") -> None:
        with self._lock:
            self.children.append(child)
            stopped, message, hard = self.stopped, self.stop_message, self.hard
        if stopped:
            child.stop(message, hard=hard)

    def stop(self, message: str | None, hard: bool = False) -> None:
        """Stop this child and its descendants: its code ends with ``message`` (None: interrupted)."""
        with self._lock:
            if self.stopped and (self.hard or not hard):
                return
            self.stopped, self.hard = True, hard
            if self.stop_message is None:
                self.stop_message = message
            interpreters, children = list(self.interpreters), list(self.children)
        for child in children:
            child.stop(message, hard=hard)
        for interpreter in interpreters:
            interpreter.stop(self.stop_message, hard=hard)

    def enforce_timeout(self, now: float) -> None:
        """Past its deadline: interrupt the kernel; a moment later kill it; then stop waiting."""
        if self.timeout is None or self.started_at is None:
            return
        over = now - (self.started_at + self.timeout)
        if over < 0:
            return
        message = f"the sub-agent ran past its time limit of {self.timeout:g} s and was stopped"
        if not self.stopped:
            self.timed_out = True
            self.stop(message)
        elif over >= STOP_GRACE and not self.hard:
            self.stop(message, hard=True)
        elif over >= STOP_GRACE + ABANDON_GRACE:
            self.abandon("failed", message)

    def cancel(self, now: float, message: str | None) -> None:
        """The caller is going away: kill the kernel now; stop waiting a moment later."""
        if self.cancelled_at is None:
            self.cancelled_at = now
            self.stop(message, hard=True)
        elif now - self.cancelled_at >= ABANDON_GRACE:
            self.abandon("interrupted" if message is None else "failed", message or "KeyboardInterrupt")

    def abandon(self, status: str, error: str) -> None:
        """Stop waiting for a thread that does not end (an LM call in flight); record the run as ended."""
        self._finish(status, error)
        self.done.set()

    # ------------------------------------------------------------ reading
    def outcome(self) -> Outcome:
        run = self.run
        if self.timed_out:
            return Outcome(False, f"Error: {self.stop_message}; its files in the workspace are kept.")
        if run.status == "finished":
            return Outcome(True, "" if run.result is None else str(run.result))
        if run.status == "interrupted":
            return Outcome(False, "Error: the sub-agent was interrupted.")
        return Outcome(False, f"Error: the sub-agent failed: {run.error}")


class SubAgent(DeepAgent):
    """A `DeepAgent` one level down the tree: its REPL is a fresh kernel from the tree's pool."""

    def __init__(self, *, tree: Tree | None = None, child: Child | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.tree = tree
        self.child = child

    def interpreter_factory(self, session=None, namespace=None, shell=None):
        tree, child = getattr(self, "tree", None), getattr(self, "child", None)
        return KernelInterpreterFactory(
            session,
            pool=tree.pool if tree is not None else None,
            timeout=self.timeout,
            on_start=child.attach if child is not None else None,
        )


# --------------------------------------------------------------------------- the tools
@_tool
def delegate(task: str, context: str = "", profile: str | None = None) -> str:
    """Hand a focused, self-contained task to a sub-agent with a fresh context, in a kernel of its own, and return its result as a string. The sub-agent cannot see your variables: put what it needs in `context` (or in a workspace file; the workspace is shared). `profile` picks its prompt (default: yours). Returns a string starting with "Error:" when it could not run (depth or sub-agent budget reached) or failed."""
    return run_subagents(_session.current(), [Spec(str(task), str(context or ""), profile)])[0].text


@_tool
def delegate_batched(tasks: list) -> list[str]:
    """Run several independent sub-agents at once and return their results in the order given. Each task is a string, or a dict {"task": ..., "context": ..., "profile": ...}. At most `max_parallel` run at the same time; a failed one gives an "Error: ..." string in its place."""
    specs = [_spec(item) for item in _task_list(tasks)]
    return [outcome.text for outcome in run_subagents(_session.current(), specs)]


@_tool
def review(task: str, draft: str, criteria: list[str] | str | None = None) -> dict:
    """Have an isolated reviewer sub-agent check `draft` (your answer to `task`) against `criteria` (a list of requirements; default: complete, correct against the workspace and context, no unsupported claims, clear). Returns {"status": "pass" | "low" | "fail", "issues": [...], "suggestions": [...]}: "pass" meets every criterion, "low" meets them with minor issues, "fail" misses at least one. Fix the issues, then review again."""
    items = _criteria(criteria)
    context = "## Draft\n\n" + str(draft) + "\n\n## Criteria\n\n" + "\n".join(f"{n}. {c}" for n, c in enumerate(items, 1))
    spec = Spec(f"Review a draft answer to this task: {task}", context, REVIEWER_PROFILE)
    outcome = run_subagents(_session.current(), [spec])[0]
    if not outcome.ok:
        return {"status": "fail", "issues": [f"The review could not run: {outcome.text.removeprefix('Error: ')}"],
                "suggestions": [], "error": outcome.text}
    return parse_verdict(outcome.text)


def delegation_tools() -> list:
    return [delegate, delegate_batched, review]


# --------------------------------------------------------------------------- running children
_tree_lock = threading.Lock()


def tree_of(session: _session.Session) -> Tree:
    """The tree the session's agent belongs to (created for a root agent on its first delegation)."""
    tree = getattr(session.agent, "tree", None)
    if tree is not None:
        return tree
    with _tree_lock:
        tree = session.extras.get("delegation")
        if tree is None:
            agent = session.agent
            pool = getattr(agent, "pool", None) or default_pool()
            tree = session.extras["delegation"] = Tree(session.run, Budget(agent.max_subagents), pool)
        return tree


def run_subagents(session: _session.Session, specs: list[Spec | str]) -> list[Outcome]:
    """Run one child per spec (a str is an error already); outcomes in the order given."""
    parent = session.agent
    if parent is None:
        return [Outcome(False, "Error: delegation needs a DeepAgent run")] * len(specs)
    tree = tree_of(session)
    me: Child | None = getattr(parent, "child", None)
    outcomes: list[Outcome | None] = [None] * len(specs)
    children: list[Child] = []
    for index, spec in enumerate(specs):
        refusal = spec if isinstance(spec, str) else _refusal(parent, spec, tree)
        if refusal is not None:
            outcomes[index] = Outcome(False, refusal)
            continue
        child = Child(spec, index, parent=me, timeout=parent.subagent_timeout)
        child.agent = _child_agent(parent, session, tree, child)
        child.run = session.run.add_child(spec.task, profile=child.agent.profile, config=child.agent.config())
        if me is not None:
            me.adopt(child)
        children.append(child)
    if children:
        _supervise(session.run, tree, me, children, max(1, int(parent.max_parallel)))
    for child in children:
        outcomes[child.index] = child.outcome()
    return outcomes  # type: ignore[return-value]


def _refusal(parent: Any, spec: Spec, tree: Tree) -> str | None:
    if not spec.task.strip():
        return "Error: the task is empty; say what the sub-agent should do"
    if parent.depth >= parent.max_depth:
        return (f"Error: delegation depth limit reached (this agent is at depth {parent.depth} of "
                f"max_depth {parent.max_depth}); do this work yourself with code and llm_query")
    try:
        load_profile(spec.profile or parent.profile)
    except UnknownProfile as exc:
        return f"Error: {exc}"
    if not tree.budget.acquire():
        return (f"Error: the sub-agent budget of this run is used up ({tree.budget.limit} started); "
                "do the remaining work yourself")
    return None


def _child_agent(parent: Any, session: _session.Session, tree: Tree, child: Child) -> SubAgent:
    """The child's agent: a copy of a built template, with this child's own settings."""
    agent = copy.copy(_template(
        profile=child.spec.profile or parent.profile,
        depth=parent.depth + 1,
        max_depth=parent.max_depth,
        max_iters=parent.subagent_max_iters,
        max_llm_calls=parent.max_llm_calls,
        timeout=parent.timeout,
        tools=tuple(parent.extra_tools),
        sub_lm=parent.sub_lm,
    ))
    agent.tree, agent.child, agent.pool = tree, child, tree.pool
    agent.lm = parent.lm if parent.lm is not None else dspy.settings.lm
    agent.workspace = Path(session.workspace.root)
    for name in ("max_subagents", "subagent_max_iters", "subagent_timeout", "max_parallel"):
        setattr(agent, name, getattr(parent, name))
    return agent


_templates: "OrderedDict[tuple, SubAgent]" = OrderedDict()
_templates_lock = threading.Lock()
TEMPLATES_KEPT = 32


def _template(*, profile: str, depth: int, max_depth: int, tools: tuple, sub_lm: Any, **settings: Any) -> SubAgent:
    """A built sub-agent for these settings. Building a dspy.RLM takes ~10 ms (its signatures are
    pydantic models) and an RLM keeps each call's state in the call, so every child with the same
    settings shares one RLM (DeepAgent.run writes only these settings to it)."""
    instructions = load_profile(profile).instructions(depth=depth, max_depth=max_depth)
    lm_key = sub_lm if sub_lm is None or isinstance(sub_lm, str) else id(sub_lm)  # the template keeps it alive
    key = (instructions, profile, depth, max_depth, tools, lm_key, tuple(sorted(settings.items())))
    with _templates_lock:
        template = _templates.get(key)
        if template is None:
            template = _templates[key] = SubAgent(profile=profile, depth=depth, max_depth=max_depth, tools=tools,
                                                  sub_lm=sub_lm, instructions=instructions, **settings)
            while len(_templates) > TEMPLATES_KEPT:
                _templates.popitem(last=False)
        _templates.move_to_end(key)
        return template


def _supervise(run: Run, tree: Tree, me: Child | None, children: list[Child], max_parallel: int) -> None:
    """Start the children (at most ``max_parallel`` at once) and wait for them, interruptibly."""
    pending, running = deque(children), []
    wake = threading.Event()
    try:
        while pending or running:
            while pending and len(running) < max_parallel:
                child = pending.popleft()
                child.start(wake)
                running.append(child)
            wake.wait(POLL_SECONDS)  # a KeyboardInterrupt lands here, on the main thread
            wake.clear()
            now = time.monotonic()
            cancelled = (me is not None and me.stopped) or tree.root_run.status in _FINISHED
            for child in list(running):
                if child.done.is_set():
                    running.remove(child)
                    _report(run, child)
                elif cancelled:
                    child.cancel(now, me.stop_message if me is not None and me.stopped else None)
                else:
                    child.enforce_timeout(now)
            if cancelled:
                while pending:
                    _never_started(run, pending.popleft(), "interrupted")
    except BaseException:
        _stop_all(run, running, pending)
        raise


def _stop_all(run: Run, running: list[Child], pending: deque[Child]) -> None:
    """Kill every running child's kernel (and its descendants'), keep their trajectories."""
    for child in running:
        child.stop(None, hard=True)
    deadline = time.monotonic() + STOP_GRACE * 2
    for child in running:
        child.done.wait(max(0.0, deadline - time.monotonic()))
        if not child.done.is_set():
            child.abandon("interrupted", "KeyboardInterrupt")
        _report(run, child)
    while pending:
        _never_started(run, pending.popleft(), "interrupted")


def _never_started(run: Run, child: Child, status: str) -> None:
    child.stopped = True
    child._finish(status, "stopped before it started")
    child.done.set()
    _report(run, child)


def _report(run: Run, child: Child) -> None:
    if not child.reported:
        child.reported = True
        run.child_finished(child.run)


# --------------------------------------------------------------------------- arguments
def _task_list(tasks: Any) -> list:
    if isinstance(tasks, str):
        try:
            tasks = json.loads(tasks)
        except json.JSONDecodeError:
            raise ValueError("tasks must be a list of task strings or {\"task\", \"context\", \"profile\"} dicts") from None
    if isinstance(tasks, dict) or not isinstance(tasks, (list, tuple)):
        raise ValueError("tasks must be a list of task strings or {\"task\", \"context\", \"profile\"} dicts")
    return list(tasks)


def _spec(item: Any) -> Spec | str:
    """A Spec, or the error string for an entry that is not a task."""
    if isinstance(item, str):
        return Spec(item)
    if isinstance(item, dict) and isinstance(item.get("task"), str):
        unknown = sorted(set(item) - {"task", "context", "profile"})
        if unknown:
            return f"Error: unknown keys {unknown}; a task dict has task, context and profile"
        return Spec(item["task"], str(item.get("context") or ""), item.get("profile"))
    return f"Error: {item!r:.80} is not a task; give a string or a dict with a 'task' string"


def _criteria(criteria: Any) -> list[str]:
    if criteria is None or criteria == "" or criteria == []:
        return list(DEFAULT_CRITERIA)
    if isinstance(criteria, str):
        lines = [line.strip(" -*\t") for line in criteria.splitlines()]
        return [line for line in lines if line] or list(DEFAULT_CRITERIA)
    if isinstance(criteria, (list, tuple)):
        return [str(item) for item in criteria]
    raise ValueError("criteria must be a list of strings, a string, or None")


# --------------------------------------------------------------------------- verdicts
_STATUS_WORDS = {
    "pass": "pass", "passed": "pass", "ok": "pass", "accept": "pass", "accepted": "pass",
    "low": "low", "minor": "low", "warn": "low", "warning": "low", "pass_with_issues": "low",
    "fail": "fail", "failed": "fail", "reject": "fail", "rejected": "fail",
}
_FENCE = re.compile(r"```(?:json|python)?\s*\n(.*?)```", re.S)


def parse_verdict(text: Any) -> dict[str, Any]:
    """The reviewer's verdict as {"status", "issues", "suggestions"}, from JSON, a Python dict,
    fenced or surrounded by prose. Unreadable text fails the review (never a silent pass)."""
    found = text if isinstance(text, dict) else _find_object(str(text))
    if found is None:
        return {"status": "fail", "issues": ["The reviewer's verdict could not be read."], "suggestions": [],
                "raw": str(text)[:2000]}
    raw_status = str(found.get("status", found.get("verdict", ""))).strip().lower().replace(" ", "_")
    status = _STATUS_WORDS.get(raw_status)
    issues, suggestions = _strings(found.get("issues")), _strings(found.get("suggestions"))
    if status is None:
        issues.insert(0, f"The reviewer gave no valid status ({raw_status or 'none'}); treated as fail.")
        status = "fail"
    return {"status": status, "issues": issues, "suggestions": suggestions}


def _find_object(text: str) -> dict | None:
    candidates = [text.strip()] + [block.strip() for block in _FENCE.findall(text)]
    for candidate in candidates:
        value = _load(candidate)
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            end = _balanced_end(text, match.start())
            value = _load(text[match.start():end]) if end else None
        if isinstance(value, dict) and ({"status", "verdict"} & set(value)):
            return value
    return None


def _load(text: str) -> Any:
    for loader in (json.loads, ast.literal_eval):
        try:
            return loader(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None


def _balanced_end(text: str, start: int) -> int | None:
    depth = 0
    for position in range(start, len(text)):
        if text[position] == "{":
            depth += 1
        elif text[position] == "}":
            depth -= 1
            if depth == 0:
                return position + 1
    return None


def _strings(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return [str(item) for item in value if item not in (None, "")]
    return [str(value)]
