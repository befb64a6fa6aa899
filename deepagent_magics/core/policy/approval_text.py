"""What approval says: the question shown to the user, the prompt, the refusal the agent reads, who asks.

Two kinds of question (`core/policy/approval.py` decides when each is asked): a *block* before it
runs (the code, highlighted, and why it is risky), and an *action* the agent's code is about to
take while a block runs (a runtime check: "write /home/me/notes.md? outside the workspace").
"""

from __future__ import annotations

from typing import Any

from ..run.secrets import scrub

BLOCK_PROMPT = "Run it? [y]es / [n]o [reason] / [a]ll the rest / [q]uit the run: "
ACTION_PROMPT = "Allow it? [y]es / [n]o [reason] / [a]ll the rest / [q]uit the run: "
PROMPT = BLOCK_PROMPT
NO_STDIN = ("no one can answer here (no stdin: a notebook run by nbclient or papermill, CI, %deepagent_eval); "
            "do without this block, or tell the user what you would run and why")


def prompt(proposal: Any) -> str:
    return ACTION_PROMPT if proposal.action else BLOCK_PROMPT


def reasons(proposal: Any) -> str:
    return "; ".join(risk.reason for risk in proposal.reasons)


def question(proposal: Any) -> str:
    """The text shown above the prompt."""
    if proposal.action:
        return (f"\n── deepagent: {proposal.agent}'s code, running step {proposal.step}, wants to ──\n"
                f"  • {proposal.reasons[0].rule}: {proposal.action}\n")
    head = f"\n── deepagent: {proposal.agent} asks to run step {proposal.step} ──\n"
    why = "".join(f"  • {risk.rule}: {risk.reason}\n" for risk in proposal.reasons) or "  (no risk found)\n"
    return head + _highlight(proposal.code) + "\nWhy it asks:\n" + why


def no_stdin_line(proposal: Any) -> str:
    what = f"to {proposal.action}" if proposal.action else "to run a block that needs your approval"
    return f"deepagent: {proposal.agent} wants {what} ({reasons(proposal)}), but there is no stdin to ask on: refused.\n"


def refusal(proposal: Any, decision: Any, who: str) -> str:
    """What the agent reads (as the step's output for a block; in a PermissionError for an action)."""
    reason = decision.reason.rstrip()
    why = f" Reason given: {reason}{'' if reason[-1:] in '.!?' else '.'}" if reason else ""
    thing = "this action" if proposal.action else "this block"
    if decision.reason == NO_STDIN:
        return f"Not {'allowed' if proposal.action else 'run'}: {thing} needs the user's approval ({reasons(proposal)}), and {NO_STDIN}."
    by = "the user" if who == "user" else "the user's approval policy"
    if proposal.action:
        return (f"Not allowed: {by} refused this action ({proposal.reasons[0].rule}: {proposal.action}).{why} "
                "It did not happen; do not retry it unchanged.")
    return (f"Not run: {by} refused this block ({reasons(proposal) or 'no risk found'}).{why} "
            "Nothing in it ran; do not retry it unchanged.")


def _highlight(code: str) -> str:
    try:
        from pygments import highlight
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import PythonLexer

        return highlight(code, PythonLexer(), TerminalFormatter())
    except Exception:  # pygments missing or failing on odd code: the code shown plain
        return code + "\n"


def label(run: Any) -> str:
    if run is None or run.parent is None:
        return "the agent"
    head = run.task.strip().splitlines()[0][:60] if run.task.strip() else ""
    return f"sub-agent {run.id} (depth {run.depth}: {head})"


def one_line(text: Any) -> str:
    line = next((line.strip() for line in str(text).splitlines() if line.strip()), "")
    return scrub(line[:200])


def short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # a value's own __repr__ may raise anything: its type instead
        text = f"a {type(value).__name__}"
    return scrub(text[:80])
