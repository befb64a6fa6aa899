"""Each peer playing the scripted trajectory once, with the model's own time taken out.

A `Play` records when each model call started and how long the stand-in model
took, so a step's harness time is the gap between two model calls less the
model's share: prompt formatting, parsing, the interpreter, tools, events and
display all stay in; the scripted answer does not.

Peers:
    rlm_local     dspy.RLM + DSPy's LocalInterpreter (a worker subprocess)
    rlm_shell     the same dspy.RLM + our ShellInterpreter (the live namespace)
    deepagent     DeepAgent.run on a fresh namespace (ShellInterpreter + Run events + tools)
    rlm_kernel    the same dspy.RLM + KernelInterpreter (a pooled kernel), when it exists
    deepagents    LangChain deepagents with a fake chat model
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import dspy

from . import langchain_peer
from .trajectory import Action, dspy_steps

TASK = "Compute the partial sums and report."


@dataclass
class Play:
    peer: str
    wall: float = 0.0  # the whole run, model included
    call_starts: list[float] = field(default_factory=list)
    model_seconds: list[float] = field(default_factory=list)
    prompt_chars: list[int] = field(default_factory=list)  # what each call sent
    result: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return len(self.call_starts)

    @property
    def step_seconds(self) -> float:
        """Mean harness time of one step: model call k start to call k+1 start, less model k."""
        if self.calls < 2:
            return float("nan")
        span = self.call_starts[-1] - self.call_starts[0] - sum(self.model_seconds[:-1])
        return span / (self.calls - 1)

    @property
    def run_seconds_per_step(self) -> float:
        """The whole run (start-up and shutdown included) less the model, per model call."""
        return (self.wall - sum(self.model_seconds)) / max(self.calls, 1)


# ------------------------------------------------------------------ DSPy peers
def _timed_lm(steps: list[tuple[str, str]], play: Play, latency: float = 0.0):
    from deepagent_magics.testing import ScriptedLM

    lm = ScriptedLM(steps, latency=latency)
    engine = lm.script_engine
    complete = engine.complete

    def timed_complete(request):
        started = time.perf_counter()
        play.call_starts.append(started)
        try:
            return complete(request)
        finally:
            play.model_seconds.append(time.perf_counter() - started)
            last = engine.requests[-1] if engine.requests else None
            if last is not None:
                play.prompt_chars.append(len(last["system"]) + len(last["user"]))

    engine.complete = timed_complete
    return lm


def _plain_write_file(root: str) -> Callable[[str, str], str]:
    def write_file(path: str, content: str) -> str:
        """Write `content` to the workspace file `path` (relative), replacing it."""
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as handle:
            handle.write(content)
        return f"Wrote {len(content)} chars to {path}"

    return write_file


def _deepagent_instructions() -> str:
    from deepagent_magics.core.loop.profiles import load_profile

    return load_profile("default").instructions()


def plain_rlm(peer: str, script: list[Action], factory: Any, workspace: str | None = None,
              notebook_variables: str = "(the notebook has no user variables yet)") -> Play:
    """``dspy.RLM`` with DeepAgent's signature and instructions on ``factory``."""
    from deepagent_magics.core.loop.agent import build_signature

    play = Play(peer)
    workspace = workspace or tempfile.mkdtemp(prefix="bench-ws-")
    lm = _timed_lm(dspy_steps(script), play)
    rlm = dspy.RLM(build_signature(_deepagent_instructions()), max_iters=len(script) + 5,
                   tools=[_plain_write_file(workspace)], interpreter_factory=factory)
    started = time.perf_counter()
    with dspy.context(lm=lm):
        prediction = rlm(task=TASK, context="", notebook_variables=notebook_variables)
    play.wall = time.perf_counter() - started
    play.result = prediction.result
    return play


def rlm_local(script: list[Action]) -> Play:
    from dspy.primitives.local_interpreter import LocalInterpreter

    return plain_rlm("rlm_local", script, LocalInterpreter)


def rlm_shell(script: list[Action]) -> Play:
    from deepagent_magics.interpreters.shell import ShellInterpreterFactory

    return plain_rlm("rlm_shell", script, ShellInterpreterFactory({}, None))


def deepagent(script: list[Action], namespace: dict[str, Any] | None = None, latency: float = 0.0,
              listeners=(), extensions: Any = None, **settings: Any) -> Play:
    """``DeepAgent.run`` as the magic calls it, on a fresh namespace unless one is given (``extensions``: the
    agent's capabilities, default the standard ones; ``settings``: more of its keywords)."""
    from deepagent_magics import DeepAgent

    play = Play("deepagent")
    lm = _timed_lm(dspy_steps(script), play, latency=latency)
    workspace = tempfile.mkdtemp(prefix="bench-ws-")
    agent = DeepAgent(lm=lm, workspace=workspace, max_iters=len(script) + 5, extensions=extensions, **settings)
    started = time.perf_counter()
    run = agent.run(TASK, namespace={} if namespace is None else namespace, listeners=listeners)
    play.wall = time.perf_counter() - started
    play.result = run.result
    play.extra["status"] = run.status
    play.extra["tools"] = len(agent.builtin_tools() + agent.extra_tools)
    play.extra["run"] = run
    return play


# ------------------------------------------------------------------ LangChain deepagents
def deepagents(script: list[Action]) -> Play:
    play = Play("deepagents")
    agent, model = langchain_peer.build(script)
    started = time.perf_counter()
    state = langchain_peer.play(agent)
    play.wall = time.perf_counter() - started
    play.result = state["messages"][-1].content
    play.call_starts = [call["started"] for call in model.calls]
    play.model_seconds = [call["seconds"] for call in model.calls]
    play.prompt_chars = [call["message_chars"] for call in model.calls]
    play.extra["messages"] = [call["messages"] for call in model.calls]
    play.extra["tool_schema_chars"] = model.calls[0]["tool_schema_chars"] if model.calls else 0
    return play
