"""The scripted trajectory every peer plays, so that only the harness differs.

One abstract script: ``steps`` agent steps, each a small piece of Python that
computes and prints (the REPL's usual work); every tenth step writes a workspace
file through the agent's ``write_file`` tool instead; the last step submits.
Each peer plays it in its own idiom:

- DSPy peers (`dspy.RLM` with any interpreter, `DeepAgent`): ``(reasoning, code)``
  pairs for `ScriptedLM`.
- LangChain ``deepagents``: AI messages with one tool call per step (``run_python``
  with the same code, or deepagents' own ``write_file``), then a final answer.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Action:
    reasoning: str
    code: str | None = None  # Python to run
    path: str | None = None  # or: a file to write through the write_file tool
    content: str = ""
    final: str | None = None  # or: the final answer


def actions(steps: int = 50, touch: str | None = None) -> list[Action]:
    """The script: ``steps`` actions ending with the final answer.

    ``touch`` names a notebook variable every code step looks at (its length),
    for the prompt-size benchmark.
    """
    out: list[Action] = []
    for i in range(1, steps):
        reasoning = f"Step {i}: compute the next partial sum and look at it."
        if i % 10 == 0:
            out.append(Action(f"Step {i}: save the progress so far.", path=f"notes/step{i}.txt", content=f"partial sums up to {i}"))
            continue
        code = f"v{i} = sum(range({i} * 100))\nprint(f'step {i}: {{v{i}}}')"
        if touch:
            code += f"\nprint(len({touch}))"
        out.append(Action(reasoning, code=code))
    out.append(Action("Everything is computed: report it.", final=f"done after {steps} steps"))
    return out


def dspy_steps(script: list[Action]) -> list[tuple[str, str]]:
    """The script as ScriptedLM ``(reasoning, code)`` steps."""
    steps = []
    for action in script:
        if action.final is not None:
            code = f"SUBMIT(result={action.final!r})"
        elif action.path is not None:
            code = f"print(write_file({action.path!r}, {action.content!r}))"
        else:
            code = action.code
        steps.append((action.reasoning, code))
    return steps
