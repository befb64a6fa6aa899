"""Spend caps: the most a whole run tree (the root agent and every sub-agent) may spend.

``DeepAgent(max_cost=USD, max_tokens=N, max_time=SECONDS)`` (``--max-cost``, ``--max-tokens``,
``--max-time`` on the magics) gives the root run one `SpendBudget`; every sub-agent's run finds
the same one through its parents (`budget_of`), so the caps hold for the tree together.

Checked *before* each LM call starts, under one lock, exact under concurrency:

- the agent's steps (`core.loop.pipeline.StepPredict`) and ``llm_query``/``llm_query_batched`` (the
  session's tool wrapper) ask the budget to `admit` them; a refused call never starts
  (`CapReached`);
- a call admitted *reserves* what it is expected to cost (the largest call the tree has made so
  far, times the prompts in a batch) until it returns, by which time its real usage is counted
  (DSPy records the history entry the run's `UsageSink` reads before the call returns);
- so a call starts only while what is spent *plus what calls in flight are expected to spend* is
  under every cap; when only the calls in flight keep it from fitting, the asker waits for them
  and decides on what they really cost. Four sub-agents asking at once start exactly the calls
  one agent asking in turn would have started;
- a step (or ``llm_query``) admitted once may make more requests: a reply no one can read is asked
  for again (`attempts`), a provider fault is retried (`retries`). Before each such retry the caps
  are checked as a step's admission checks them first (`check_retry`), and a retry's wait looks at
  them as it goes, so retries cannot carry the tree past a cap by more than the one request that
  crossed it.

Cost and tokens are what the provider reports through DSPy/LiteLLM (each history entry's
``usage`` and ``cost``). A provider that reports no cost (a local model, a custom engine) cannot
be held to ``max_cost`` (nor one that reports a cost that is not a number of USD of 0 or more:
negative, NaN, infinite): such calls count $0, each is counted in ``unknown_cost_calls`` and the run
gets one warning (``run.config["spend_warnings"]``); ``max_tokens`` still holds. Time is the
run's wall-clock time less the seconds it spent waiting for the user's approval
(``waited_seconds`` on any run of the tree).
"""

from __future__ import annotations

import contextlib
import logging
import math
import numbers
import threading
import time
from collections.abc import Iterator
from typing import Any

from ...errors import DeepAgentError, InvalidValue
from ...settings import MAX_SECONDS  # a week: longer is a mistake
from ..run.run_tree import tree_of

log = logging.getLogger(__name__)

CAPS = ("max_cost", "max_tokens", "max_time")
WAIT_SLICE = 0.25  # seconds between re-checks while calls in flight decide whether a call fits
UNKNOWN_COST_WARNING = ("the provider reported no cost for {model}: --max-cost cannot hold for its calls "
                        "(they count $0); cap tokens with --max-tokens")
# Tools that call the LM: name -> the argument holding a batch. ``__dspy_call__`` (a predictor the agent's
# code built with DSPy's sandbox facade) is not one: each LM call the predictor makes is admitted on its
# own where it reaches the host LM (`model.facade_requests.RequestLM`), so a facade-built ReAct or RLM
# cannot run past a cap on one admission.
LM_TOOLS = {"llm_query": None, "llm_query_batched": "prompts"}


class CapReached(DeepAgentError, RuntimeError):
    """No further LM call may start: a spend cap of the run's tree is reached (the message says which)."""


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_cap(name: str, value: Any) -> float | int | None:
    """``value`` as a cap: None (no cap), else a finite number above 0 (tokens: a whole number).

    Strings are read as numbers (a magic's flag); anything else is a one-line `ValueError`."""
    if value is None:
        return None
    shown = repr(value) if isinstance(value, str) else str(value)
    what = "a whole number of tokens above 0" if name == "max_tokens" else (
        f"a number of seconds above 0 and at most {MAX_SECONDS:g}" if name == "max_time" else "a number of USD above 0")
    if isinstance(value, str):
        try:
            value = float(value.strip().lstrip("$")) if name == "max_cost" else float(value.strip())
        except ValueError:
            raise InvalidValue(f"{_flag(name)} must be {what}, not {shown}") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidValue(f"{_flag(name)} must be {what}, not {type(value).__name__} {shown}")
    number = float(value)
    if not math.isfinite(number) or number <= 0 or (name == "max_time" and number > MAX_SECONDS):
        raise InvalidValue(f"{_flag(name)} must be {what}, not {shown}")
    if name == "max_tokens":
        if number != int(number):
            raise InvalidValue(f"{_flag(name)} must be {what}, not {shown}")
        return int(number)
    return number


def check_caps(**caps: Any) -> dict[str, Any]:
    """Each of ``max_cost``, ``max_tokens``, ``max_time`` checked (`check_cap`); unknown names refused."""
    unknown = set(caps) - set(CAPS)
    if unknown:
        raise InvalidValue(f"unknown spend cap {min(unknown)!r}; the caps are {', '.join(CAPS)}")
    return {name: check_cap(name, caps.get(name)) for name in CAPS}


class SpendBudget:
    """What one run tree may still spend, and what it has spent (see the module docstring)."""

    def __init__(self, max_cost: Any = None, max_tokens: Any = None, max_time: Any = None, run: Any = None,
                 clock: Any = time.monotonic):
        caps = check_caps(max_cost=max_cost, max_tokens=max_tokens, max_time=max_time)
        self.max_cost, self.max_tokens, self.max_time = caps["max_cost"], caps["max_tokens"], caps["max_time"]
        self.run = run  # the root run: its tree's waited_seconds are not spent time
        self.clock = clock
        self.started = clock()
        self.calls = 0
        self.tokens = 0
        self.cost = 0.0
        self.unknown_cost_calls = 0
        self.in_flight = 0
        self.reached: str | None = None  # why the first call was refused (sticky)
        self._reserved_tokens = 0
        self._reserved_cost = 0.0
        self._largest_tokens = 0
        self._largest_cost = 0.0
        self._warned = False
        self._cond = threading.Condition()
        self._held = threading.local()  # how many calls the current thread has in flight

    @property
    def capped(self) -> bool:
        return any(cap is not None for cap in (self.max_cost, self.max_tokens, self.max_time))

    # ------------------------------------------------------------ time
    def waited(self) -> float:
        """Seconds the tree spent waiting for the user (approval): not counted against ``max_time``."""
        run = self.run
        if run is None:
            return 0.0
        total = 0.0
        for each in run.walk():
            try:
                total += float(getattr(each, "waited_seconds", 0) or 0)
            except (TypeError, ValueError):
                continue
        return total

    def elapsed(self) -> float:
        return max(0.0, self.clock() - self.started - self.waited())

    # ------------------------------------------------------------ admitting calls
    def _over(self) -> str | None:
        """Why no call may start now, counting only what is spent (None: under every cap)."""
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"the token cap is reached: {self.tokens:,} of {self.max_tokens:,} tokens spent"
        if self.max_cost is not None and self.cost >= self.max_cost:
            return f"the cost cap is reached: ${self.cost:.4f} of ${self.max_cost:g} spent"
        if self.max_time is not None and self.elapsed() >= self.max_time:
            return f"the time cap is reached: {self.elapsed():.1f} of {self.max_time:g} s"
        return None

    def _fits(self) -> bool:
        """Whether what is spent plus what calls in flight are expected to spend is under the caps."""
        if self.max_tokens is not None and self.tokens + self._reserved_tokens >= self.max_tokens:
            return False
        return self.max_cost is None or self.cost + self._reserved_cost < self.max_cost

    def admit(self, n: int = 1) -> tuple[int, float]:
        """Let ``n`` LM calls start (one request, or a batch of ``n``) or raise `CapReached`; returns the
        reservation to `release` when they have returned."""
        n = max(1, int(n))
        with self._cond:
            while True:
                self._refuse_if_over()
                # Calls this thread itself has in flight (a predictor built in the sandbox that calls
                # llm_query) will not return while it waits here: only the others' are waited for.
                if self._fits() or self.in_flight - getattr(self._held, "n", 0) <= 0:
                    break
                self._cond.wait(WAIT_SLICE)  # the calls in flight decide: wait for what they really cost
            reservation = (n * self._largest_tokens, n * self._largest_cost)
            self._reserved_tokens += reservation[0]
            self._reserved_cost += reservation[1]
            self.in_flight += n
            self._held.n = getattr(self._held, "n", 0) + n
            return reservation

    def _refuse_if_over(self) -> None:
        reason = self._over()
        if reason is not None:
            self.reached = self.reached or reason
            raise CapReached(f"spend cap: {reason}; no further LM call starts")

    def holding(self) -> bool:
        """Whether this thread has admitted calls in flight (an LM call inside one is part of it)."""
        return getattr(self._held, "n", 0) > 0

    def check(self) -> None:
        """`CapReached` (the reason `admit` gives) when what is spent already reaches a cap; else nothing."""
        with self._cond:
            self._refuse_if_over()

    def release(self, reservation: tuple[int, float], n: int = 1) -> None:
        with self._cond:
            self._reserved_tokens -= reservation[0]
            self._reserved_cost -= reservation[1]
            self.in_flight -= max(1, int(n))
            self._held.n = getattr(self._held, "n", 0) - max(1, int(n))
            self._cond.notify_all()

    @contextlib.contextmanager
    def calls_allowed(self, n: int = 1) -> Iterator[None]:
        """``with budget.calls_allowed(n): make the calls``: admitted first, the reservation released after."""
        reservation = self.admit(n)
        try:
            yield
        finally:
            self.release(reservation, n)

    # ------------------------------------------------------------ counting
    def add(self, tokens: int, cost: float | None, model: str = "lm") -> None:
        """One LM call's usage, as the provider reported it (the run's usage sink calls this)."""
        warn = False
        tokens, cost = _count(tokens), reported_cost(cost)
        with self._cond:
            self.calls += 1
            self.tokens += tokens
            self._largest_tokens = max(self._largest_tokens, tokens)
            if cost is None:
                self.unknown_cost_calls += 1
                warn = self.max_cost is not None and not self._warned
                self._warned = self._warned or warn
            else:
                self.cost += float(cost)
                self._largest_cost = max(self._largest_cost, float(cost))
            self._cond.notify_all()
        if warn:
            message = UNKNOWN_COST_WARNING.format(model=model)
            log.warning(message)
            if self.run is not None:
                self.run.config.setdefault("spend_warnings", []).append(message)

    # ------------------------------------------------------------ reading
    def to_dict(self) -> dict[str, Any]:
        return {"max_cost": self.max_cost, "max_tokens": self.max_tokens, "max_time": self.max_time,
                "calls": self.calls, "tokens": self.tokens, "cost": round(self.cost, 6),
                "elapsed": round(self.elapsed(), 3), "unknown_cost_calls": self.unknown_cost_calls,
                "reached": self.reached}

    def describe(self) -> str:
        """Spend against each cap, for a status line: ``1,200/5,000 tokens · $0.0100/$0.05 · 3.2/60 s``."""
        parts = []
        if self.max_tokens is not None:
            parts.append(f"{self.tokens:,}/{self.max_tokens:,} tokens")
        if self.max_cost is not None:
            unknown = f" ({self.unknown_cost_calls} calls of unknown cost)" if self.unknown_cost_calls else ""
            parts.append(f"${self.cost:.4f}/${self.max_cost:g}{unknown}")
        if self.max_time is not None:
            parts.append(f"{self.elapsed():.1f}/{self.max_time:g} s")
        return " · ".join(parts)


def _count(tokens: Any) -> int:
    """Tokens as reported; what is not a count of 0 or more counts 0 (a misbehaving provider)."""
    try:
        number = float(tokens or 0)
    except (TypeError, ValueError):
        return 0
    return int(number) if math.isfinite(number) and number > 0 else 0


def reported_cost(cost: Any) -> float | None:
    """A reported cost in USD, or None when there is none that could count: a missing, negative,
    NaN, infinite or unreadable cost would otherwise let a cap never be reached (NaN compares false)."""
    if cost is None or isinstance(cost, bool):
        return None
    try:
        number = float(cost)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def budget_of(run: Any) -> SpendBudget | None:
    """The spend budget of ``run``'s tree (None: no caps)."""
    tree = tree_of(run)
    return tree.spend if tree is not None else None


def budget_of_session(session: Any) -> SpendBudget | None:
    return budget_of(getattr(session, "run", None)) if session is not None else None


def check_retry(run: Any) -> None:
    """Before one retry request of a call already admitted (`attempts`, `retries`): `CapReached` when what
    the tree has spent reaches a cap (the check `admit` makes first, with its reason). The call's
    reservation, made when it was admitted, stands for its retries: a retry replaces a request, so it
    neither reserves again nor waits for calls in flight (in ``llm_query_batched``'s worker threads one of
    those is its own call)."""
    budget = budget_of(run)
    if budget is not None and budget.capped:
        budget.check()


def guard_tool(session: Any, name: str, args: tuple, kwargs: dict) -> contextlib.AbstractContextManager:
    """Around an agent's call of tool ``name``: the budget's admission when the tool calls the LM."""
    if name not in LM_TOOLS:
        return contextlib.nullcontext()
    budget = budget_of_session(session)
    if budget is None or not budget.capped:
        return contextlib.nullcontext()
    n = 1
    if LM_TOOLS[name] is not None:
        prompts = kwargs.get(LM_TOOLS[name], args[0] if args else None)
        try:
            n = max(1, len(prompts))  # type: ignore[arg-type]
        except TypeError:
            n = 1
    return budget.calls_allowed(n)
