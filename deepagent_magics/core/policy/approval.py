"""Approval: before a code block runs, the user's policy decides whether it may; the user may be asked.

A policy is ``never`` (nothing asks: the default), ``risky`` (ask for a block `risk` finds
risky), ``always`` (ask for every block), or a callable ``(Proposal) -> decision`` (called for
every block; a decision is ``True``/``False``, ``"y"``, ``"n [reason]"``, ``"a"``, ``"q"`` or a
`Decision`). Every interpreter calls `review` once per block before running it (the hook is
``interpreters.step_execution.StepInterpreter.execute``): the root agent's and each sub-agent's, which
all ask the one `Approver` of the root run, one question at a time, labelled with who asks.

The question goes through the ``input`` the kernel had when the run started (ipykernel's
stdin request, which works mid-cell in JupyterLab, Notebook 7, VS Code and a terminal):
``y`` runs the block; ``n`` or ``n <reason>`` skips it (the agent reads the refusal as the
step's output); ``a`` approves the rest of the run; ``q`` stops the run (`StopRun`). Anything
else asks again. Where there is no stdin (a frontend without it, a process whose stdin is
not a terminal, ``%deepagent_eval``) the block is refused at once with a clear message:
nothing waits. Time spent waiting is added to ``run.waited_seconds`` of the asking run and
its ancestors (so time caps can leave it out) and never counts against the block's time
limit: the block's clock starts after the review. Each decision is recorded on the asking
run (``run.approvals``) and emitted as an ``approval`` event.

While a block runs, the runtime checks (``interpreters/runtime_checks``: audit hooks that see
what the code does) ask `review_action` before a risky action with its resolved path or host
("write /home/me/notes.md? outside the workspace"), the same way and to the same person, under
every policy but ``never``; a rule whose block the user has just approved (the static preview
named it) is not asked again for that block (`approved_rules`). The texts: `approval_text`.
"""

from __future__ import annotations

import builtins
import queue
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ...errors import DeepAgentError, InvalidValue
from ..run.secrets import scrub
from .risk import Risk, analyse, parse_rules
from ..run.stopping import StopRun
from ..run.run_tree import tree_of
from ..run.event_kinds import APPROVAL, APPROVAL_ASKED
from .approval_text import NO_STDIN, label, no_stdin_line, one_line, prompt, question, refusal, short

POLICIES = ("never", "risky", "always")
STDIN = "stdin"  # ask with the `input` found when the run starts
RELAY_POLL = 0.05  # seconds between a sub-agent's looks at its question while it waits
RELAY_WAIT = 1.0  # seconds before a question the run's own thread has not taken up is asked by its sub-agent
MAX_ANSWERS = 20  # unreadable answers before the block is refused (an `input` that never says y/n/a/q)


class NoStdin(DeepAgentError):
    """There is no one to ask (no stdin)."""


@dataclass
class Proposal:
    """What the policy decides on: the code, why it is risky, and who proposes it."""

    code: str
    reasons: list[Risk]
    run_id: str
    step: int | None
    agent: str  # "the agent", or "sub-agent <id> (<task>)"
    depth: int = 0
    action: str | None = None  # a runtime check's question ("write /home/me/notes.md? outside the workspace")

    @property
    def risky(self) -> bool:
        return bool(self.reasons)


@dataclass
class Decision:
    """``action``: ``run``, ``refuse``, ``all`` (run this and the rest) or ``quit``; ``reason`` for a refusal."""

    action: str
    reason: str = ""

    @classmethod
    def parse(cls, answer: Any) -> Decision | None:
        """A typed answer or a policy's return value as a decision (None: not one)."""
        if isinstance(answer, Decision):
            return answer if answer.action in ("run", "refuse", "all", "quit") else None
        if answer is True or answer is False:
            return cls("run" if answer else "refuse")
        if not isinstance(answer, str):
            return None
        word, _, rest = answer.strip().partition(" ")
        action = {"y": "run", "yes": "run", "n": "refuse", "no": "refuse", "a": "all", "all": "all",
                  "q": "quit", "quit": "quit"}.get(word.lower())
        if action is None or (rest.strip() and action != "refuse"):
            return None
        return cls(action, rest.strip())


def check_policy(policy: Any) -> Any:
    """``policy`` if it is one; a ValueError (one line) if not."""
    if callable(policy) or policy in POLICIES:
        return policy
    raise InvalidValue(f"unknown approval policy {policy!r}; use never, risky, always or a callable (proposal) -> decision")


def policy_label(policy: Any) -> str:
    return policy if isinstance(policy, str) else f"callable {getattr(policy, '__name__', type(policy).__name__)}"


@dataclass
class _Question:
    proposal: Proposal
    run: Any = None
    done: threading.Event = field(default_factory=threading.Event)
    decision: Decision | None = None
    no_stdin: bool = False
    taken: bool = False  # the run's thread is asking it
    withdrawn: bool = False  # the asking thread asks itself
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Approver:
    """The root run's approval: its policy and rules, how to ask, and what was decided so far."""

    policy: Any = "never"
    rules: frozenset[str] = field(default_factory=parse_rules)
    ask: Callable[[str], str] | None = None  # None: no stdin
    out: Any = None  # where the question is shown (the cell's stdout when the run started)
    workspace: str | None = None
    tool_rules: dict[str, str] = field(default_factory=dict)  # the agent's tools' own rules (`risk.tool_rules`)
    approve_all: bool = False
    stopped: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    home: int = field(default_factory=threading.get_ident)  # the run's own thread: where questions are asked
    approved: weakref.WeakKeyDictionary = field(default_factory=weakref.WeakKeyDictionary)  # run -> rules of its block
    pending: queue.Queue = field(default_factory=queue.Queue)  # questions from sub-agents' threads

    def review(self, run: Any, code: str, user_names: Iterable[str] = ()) -> str | None:
        """None: run the block. Else the refusal the agent reads. Raises `StopRun` on ``q``."""
        if self.stopped:
            raise StopRun(self.stopped)
        self.approved.pop(run, None)
        if self.policy == "never":
            return None
        reasons = analyse(code, user_names=user_names, workspace=self.workspace, rules=self.rules,
                          tool_rules=self.tool_rules)
        if self.policy == "risky" and not reasons:
            return None
        refusal = self._decide(run, self._proposal(run, code, reasons))
        if refusal is None and run is not None:  # the user saw the code and these reasons: not asked again
            self.approved[run] = frozenset(risk.rule for risk in reasons)
        return refusal

    def review_action(self, run: Any, rule: str, question: str, code: str = "") -> str | None:
        """A runtime check (`interpreters/runtime_checks`): the agent's code is about to act (``question``:
        "write /home/me/notes.md? outside the workspace"). None: go ahead; else the refusal it reads.
        Asked under every policy but ``never``, for the rules switched on; `StopRun` on ``q``."""
        if self.stopped:
            raise StopRun(self.stopped)
        if self.policy == "never" or rule not in self.rules:
            return None
        return self._decide(run, self._proposal(run, code, [Risk(rule, question)], action=question))

    def _proposal(self, run: Any, code: str, reasons: list[Risk], action: str | None = None) -> Proposal:
        step = run.open_step.index if run is not None and run.open_step is not None else None
        return Proposal(code, reasons, run.id if run is not None else "", step, label(run),
                        run.depth if run is not None else 0, action)

    def _decide(self, run: Any, proposal: Proposal) -> str | None:
        if self.approve_all:
            return self._record(run, proposal, Decision("run"), "approve-all")
        if callable(self.policy):
            decision, who = self._from_policy(proposal), "policy"
        else:
            decision, who = self._from_user(run, proposal)
        if decision.action == "all":
            self.approve_all = True
        if decision.action == "quit":
            self._record(run, proposal, decision, who)
            self.stopped = f"stopped by the user at {proposal.agent}'s step {proposal.step}"
            raise StopRun(self.stopped)
        return self._record(run, proposal, decision, who)

    # ------------------------------------------------------------ deciding
    def _from_policy(self, proposal: Proposal) -> Decision:
        try:
            answer = self.policy(proposal)
        except Exception as exc:  # the user's policy function may raise anything: a policy fault, said in one line
            return self._policy_fault(f"raised {type(exc).__name__}: {one_line(exc)}")
        decision = Decision.parse(answer)
        if decision is None:
            return self._policy_fault(f"returned {short(answer)}, not a decision (y, n [reason], a, q, True, False)")
        return decision

    def _policy_fault(self, what: str) -> Decision:
        self._show(f"deepagent: your approval policy {what}; the block was not run.\n")
        return Decision("refuse", f"the approval policy {what}")

    def _from_user(self, run: Any, proposal: Proposal) -> tuple[Decision, str]:
        started = time.monotonic()
        chain = []
        each = run
        while each is not None:
            chain.append(each)
            each = each.parent
        for each in chain:
            each.waiting_since = started  # `waited` counts the wait while it lasts (a sub-agent's time limit)
        try:
            if self.ask is None:
                raise NoStdin()
            if threading.get_ident() == self.home:
                with self.lock:
                    return self._ask(proposal, run), "user"
            return self._relay(chain, proposal), "user"
        except NoStdin:
            self._show(no_stdin_line(proposal))
            return Decision("refuse", NO_STDIN), "no stdin"
        finally:
            finished = time.monotonic()
            for each in chain:
                each.waited_seconds = getattr(each, "waited_seconds", 0.0) + (finished - started)
                each.waiting_since = None

    def _relay(self, chain: list[Any], proposal: Proposal) -> Decision:
        """From a sub-agent's thread: the run's own thread asks, between its looks at its sub-agents (a stop
        button's KeyboardInterrupt lands there). Not taken up within `RELAY_WAIT` (delegate called from a
        thread of the agent's own), this thread asks itself."""
        question = _Question(proposal, chain[0] if chain else None)
        self.pending.put(question)
        waited = 0.0
        while not question.done.wait(RELAY_POLL):
            waited += RELAY_POLL
            with question.lock:
                if not question.taken and (waited >= RELAY_WAIT or self.stopped):
                    question.withdrawn = True
            if question.withdrawn:
                if self.stopped:
                    raise StopRun(self.stopped)
                with self.lock:
                    return self._ask(proposal, chain[0] if chain else None)
            if any(each.ended_at is not None for each in chain):
                return Decision("refuse", "the run ended before the user answered")
        if question.no_stdin:
            raise NoStdin()
        return question.decision or Decision("refuse", "no answer")

    def serve(self) -> None:
        """On the run's own thread (the root's `delegate` calls it while it waits): ask the questions
        sub-agents have queued. Raises `StopRun` once the user has stopped the run."""
        if threading.get_ident() != self.home:
            return
        while True:
            try:
                question = self.pending.get_nowait()
            except queue.Empty:
                break
            with question.lock:
                if question.withdrawn:
                    continue
                question.taken = True
            try:
                with self.lock:
                    question.decision = self._ask(question.proposal, question.run)
            except NoStdin:
                question.no_stdin = True
            except BaseException:  # a KeyboardInterrupt while asking: the sub-agent is refused, the run interrupted
                question.decision = Decision("refuse", "interrupted")
                raise
            finally:
                question.done.set()
        if self.stopped:
            raise StopRun(self.stopped)

    def _ask(self, proposal: Proposal, run: Any = None) -> Decision:
        if self.ask is None or getattr(getattr(self.ask, "__self__", None), "_allow_stdin", True) is False:
            raise NoStdin()  # ipykernel knows the frontend sent no stdin with this cell: do not even ask
        if run is not None:  # before the question: whoever answers for the user (an ACP client) reads what it is
            run.emit(APPROVAL_ASKED, agent=proposal.agent, step=proposal.step, code=scrub(proposal.code),
                     reasons=scrub([str(r) for r in proposal.reasons]), action=scrub(proposal.action))
        self._show(question(proposal))
        for _ in range(MAX_ANSWERS):
            try:
                answer = self.ask(prompt(proposal))
            except (EOFError, OSError, RuntimeError) as exc:  # StdinNotImplementedError is a RuntimeError
                raise NoStdin() from exc
            decision = Decision.parse(answer)
            if decision is not None:
                return decision
            self._show("Answer y, n (optionally followed by a reason), a or q.\n")
        return Decision("refuse", f"no readable answer after {MAX_ANSWERS} tries")

    def _show(self, text: str) -> None:
        out = self.out or sys.stdout
        try:
            out.write(text)
            out.flush()
        except Exception:  # the cell's output may be closed or gone by now: nothing left to show it on
            pass

    # ------------------------------------------------------------ recording
    def _record(self, run: Any, proposal: Proposal, decision: Decision, who: str) -> str | None:
        entry = {
            "time": time.time(), "run": proposal.run_id, "step": proposal.step, "agent": proposal.agent,
            "decision": {"run": "approved", "refuse": "refused", "all": "approved_all", "quit": "stopped"}[decision.action],
            "who": who, "policy": policy_label(self.policy), "reasons": scrub([str(r) for r in proposal.reasons]),
            "note": scrub(decision.reason),
        }
        if proposal.action is not None:
            entry["action"] = scrub(proposal.action)
        if run is not None:
            run.approvals.append(entry)
            run.emit(APPROVAL, **entry)
        if decision.action in ("run", "all"):
            return None
        return refusal(proposal, decision, who)


# ------------------------------------------------------------ the approver of a run tree
def stdin_asker() -> Callable[[str], str] | None:
    """The ``input`` to ask with, taken now (agent code that replaces ``builtins.input`` later changes
    nothing); None when a plain process's stdin is not a terminal."""
    ask = builtins.input
    if getattr(ask, "__module__", None) == "builtins" and getattr(ask, "__name__", "") == "input":
        stdin = sys.stdin
        try:
            if stdin is None or not stdin.isatty():
                return None
        except (ValueError, OSError):
            return None
    return ask


def waited(run: Any, now: float | None = None) -> float:
    """Seconds ``run`` (or a sub-agent under it) has spent waiting for the user's answers, including
    a wait still going on: what a time limit or time cap leaves out (``time.monotonic`` clock)."""
    since = getattr(run, "waiting_since", None)
    current = (time.monotonic() if now is None else now) - since if since is not None else 0.0
    return getattr(run, "waited_seconds", 0.0) + max(current, 0.0)


def attach(run: Any, approver: Approver) -> None:
    """Make ``approver`` the one of ``run``'s tree (the root run attaches it)."""
    run.tree.approver = approver


def approver_of(run: Any) -> Approver | None:
    """The approver of ``run``'s tree (None: nothing needs approval)."""
    tree = tree_of(run)
    return tree.approver if tree is not None else None


def serve(run: Any) -> None:
    """Ask the questions queued by ``run``'s sub-agents, if this is the thread that asks (`Approver.serve`)."""
    approver = approver_of(run)
    if approver is not None:
        approver.serve()


def review(run: Any, code: str, user_names: Iterable[str] = ()) -> str | None:
    """The interpreters' hook: None to run ``code``, else the refusal text; `StopRun` to stop."""
    approver = approver_of(run)
    return approver.review(run, code, user_names) if approver is not None else None


def review_action(run: Any, rule: str, question: str, code: str = "") -> str | None:
    """A runtime check's question (`Approver.review_action`): None to go ahead, else the refusal."""
    approver = approver_of(run)
    return approver.review_action(run, rule, question, code) if approver is not None else None


def approved_rules(run: Any) -> frozenset[str]:
    """The rules the user approved for ``run``'s current block when it was reviewed (its code shown)."""
    approver = approver_of(run)
    return approver.approved.get(run, frozenset()) if approver is not None else frozenset()


def checking(run: Any) -> Approver | None:
    """``run``'s approver when it asks anything (its policy is not ``never``), else None."""
    approver = approver_of(run)
    return approver if approver is not None and approver.policy != "never" else None
