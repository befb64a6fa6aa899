"""The robustness corpus: what real models and providers send that goes wrong, and what a run does about it.

Each `Case` is served by the local OpenAI-compatible server (`testing_provider.FakeProvider`) to
a real `DeepAgent` whose LM is DSPy's real client. The task is always "What is 6 times 7?";
``GOOD`` is the well-formed reply that answers it. A case ``recovers`` when the run finishes
with ``42``; it ``fails`` when the run ends ``failed`` with a one-line error containing
``error``. ``via`` says what made it so (the docs table, docs/robustness.md, is built from
this list: `table`).

A reply the adapter cannot read costs two requests (DSPy's ChatAdapter, then its JSON
fallback), so `twice` scripts such a reply for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from deepagent_magics.testing_provider import Reply

TASK = "What is 6 times 7?"
ANSWER = "42"
SUBMIT = "SUBMIT(result=str(6 * 7))"
GOOD = Reply.fields(reasoning="Compute it in Python and submit.", code=f"```python\n{SUBMIT}\n```")
F = Reply.fields


def twice(reply: Reply) -> list[Reply]:
    return [reply, reply]


def text(content: str, **kwargs: Any) -> Reply:
    return Reply(content=content, **kwargs)


@dataclass
class Case:
    name: str
    sent: str  # what the model or provider sent, for the table
    script: list[Reply]
    outcome: str  # "recovers" | "fails"
    via: str  # what made it so
    error: str = ""  # for "fails": a fragment of run.error
    lm: dict[str, Any] = field(default_factory=dict)  # extra dspy.LM arguments
    max_iters: int = 4
    history: int = 0  # steps of plain work scripted before the case (context-length cases)
    minimum_wait: float = 0.0  # seconds the run must have waited (Retry-After honoured)
    not_run: str = ""  # a variable the case's partial code would have set: it must not exist
    steps: int = 0  # the steps the run must record (0: not checked); a reply asked again for is no step


RATE_LIMIT = {"error_type": "rate_limit_error"}
CONTEXT = {"error_code": "context_length_exceeded"}
CONTEXT_MESSAGE = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens."
PROSE = "The answer is 42."
REFUSAL = "I'm sorry, but I can't help with that request."
ECHO = ("[[ ## variables_info ## ]]\nVariable: `task`\n\n[[ ## repl_history ## ]]\nYou have not interacted with the "
        "REPL environment yet.\n\n[[ ## iteration ## ]]\n1/20\n\nRespond with the corresponding output fields.")
TEMPLATE = "[[ ## reasoning ## ]]\n{reasoning}\n\n[[ ## code ## ]]\n{code}\n\n[[ ## completed ## ]]"
CUT = "[[ ## reasoning ## ]]\nFirst I will carefully consider every possible way to multiply"
HUGE = "I considered this at length. " * 8000  # ~230 KB of reasoning

REPLIES = [
    # ---- shapes DSPy reads as they are
    Case("no_completed_marker", "both fields, no `[[ ## completed ## ]]`",
         [text(f"[[ ## reasoning ## ]]\nMultiply.\n\n[[ ## code ## ]]\n{SUBMIT}")], "recovers", "DSPy reads it"),
    Case("fields_in_wrong_order", "`code` before `reasoning`",
         [text(f"[[ ## code ## ]]\n{SUBMIT}\n\n[[ ## reasoning ## ]]\nMultiply.\n\n[[ ## completed ## ]]")],
         "recovers", "DSPy reads it"),
    Case("code_without_fences", "bare Python in the code field", [F(reasoning="Multiply.", code=SUBMIT)],
         "recovers", "RLM runs unfenced code"),
    Case("chatter_around_fields", "a greeting before the fields and a sign-off after",
         [text(f"Sure! Here you go.\n\n{GOOD.content}\n\nLet me know if you need anything else!")],
         "recovers", "DSPy reads it"),
    Case("json_instead_of_markers", "a JSON object with reasoning and code",
         twice(text('{"reasoning": "Multiply.", "code": "' + SUBMIT + '"}')), "recovers", "DSPy's JSON fallback"),
    Case("json_in_a_fence", "a ```json block holding the fields",
         twice(text('```json\n{"reasoning": "Multiply.", "code": "' + SUBMIT + '"}\n```')), "recovers",
         "DSPy's JSON fallback"),
    Case("think_then_fields", "`<think>…</think>` then well-formed fields",
         [text(f"<think>6 times 7, easy.</think>\n{GOOD.content}")], "recovers", "DSPy reads it"),
    # ---- shapes the repairing adapter reads (core/model/replies.py)
    Case("prose_and_one_code_block", "prose and a ```python block, no markers",
         [text(f"I will compute it.\n\n```python\n{SUBMIT}\n```")], "recovers", "repair: the block is the code"),
    Case("markdown_headers", "`## Reasoning` / `## Code` headers instead of markers",
         [text(f"## Reasoning\nMultiply.\n\n## Code\n```python\n{SUBMIT}\n```")], "recovers", "repair: headers read as markers"),
    Case("bold_labels", "`**Reasoning:**` / `**Code:**` labels",
         [text(f"**Reasoning:** Multiply.\n\n**Code:**\n```python\n{SUBMIT}\n```")], "recovers", "repair: labels read as markers"),
    Case("plain_labels", "`Reasoning:` / `Code:` lines",
         [text(f"Reasoning: Multiply.\nCode:\n```python\n{SUBMIT}\n```")], "recovers", "repair: labels read as markers"),
    Case("squashed_markers", "`[[## reasoning ##]]` without DSPy's spaces",
         [text(f"[[## reasoning ##]]\nMultiply.\n[[## code ##]]\n{SUBMIT}\n[[## completed ##]]")], "recovers",
         "repair: markers normalised"),
    Case("draft_markers_inside_think", "a `<think>` block drafting wrong fields, then the real ones",
         [text("<think>\n[[ ## reasoning ## ]]\ndraft\n[[ ## code ## ]]\nSUBMIT(result='41')\n</think>\n" + GOOD.content)],
         "recovers", "repair: <think> blocks dropped first"),
    Case("reasoning_only_in_think", "reasoning inside `<think>`, then only the code field",
         [text(f"<think>Multiply six by seven.</think>\n[[ ## code ## ]]\n{SUBMIT}")], "recovers",
         "repair: the think block is the reasoning"),
    Case("only_submit_no_reasoning", "`SUBMIT(...)` alone, no reasoning field", [text(f"[[ ## code ## ]]\n{SUBMIT}")],
         "recovers", "repair: empty reasoning"),
    Case("several_fences", "the code split over two ```python blocks",
         [F(reasoning="Two parts.", code="```python\nx = 6 * 7\n```\nthen\n```python\nSUBMIT(result=str(x))\n```")],
         "recovers", "repair: blocks joined (RLM would run only the first)"),
    Case("code_in_reasoning_field", "the ```python block in the reasoning, prose in the code field",
         [F(reasoning=f"Multiply:\n```python\n{SUBMIT}\n```", code="See the code above.")], "recovers",
         "repair: the block moves to the code field"),
    Case("xml_code_tags", "`<code>…</code>` tags instead of markers",
         [text(f"Multiply.\n<code>\n{SUBMIT}\n</code>")], "recovers", "repair: the tag is the code"),
    Case("zero_width_in_markers", "zero-width spaces inside the field markers",
         [text(f"[[ ## reason\u200bing ## ]]\nMultiply.\n[[ ## co\u200bde ## ]]\n{SUBMIT}")], "recovers",
         "repair: zero-width characters removed"),
    Case("zero_width_in_code", "a zero-width space and a BOM inside the code",
         [text("\ufeff[[ ## reasoning ## ]]\nMultiply.\n[[ ## code ## ]]\nSUBMIT(result=str(6\u200b * 7))")],
         "recovers", "repair: zero-width characters removed"),
    Case("huge_reply", "~230 KB of reasoning before the code", [F(reasoning=HUGE, code=SUBMIT)], "recovers",
         "DSPy reads it"),
    # ---- replies nothing can read: the model is told what was wrong and asked again (core/loop/attempts.py)
    Case("empty_reply", "an empty message", [*twice(text("")), GOOD], "recovers", "retry saying the reply was empty", steps=1),
    Case("whitespace_reply", "only spaces and newlines", [*twice(text("  \n\n ")), GOOD], "recovers",
         "retry saying the reply was empty", steps=1),
    Case("only_a_think_block", "`<think>…</think>` and nothing else",
         [*twice(text("<think>Let me think about multiplication.</think>")), GOOD], "recovers",
         "retry saying the reply was empty", steps=1),
    Case("empty_code_field", "both markers, the code field empty (DSPy issue 9632)",
         [F(reasoning="Multiply.", code=""), GOOD], "recovers", "retry saying the code was empty", steps=1),
    Case("json_null_code", '`{"reasoning": null, "code": null}` (DSPy issue 9632)',
         [*twice(text('{"reasoning": null, "code": null}')), GOOD], "recovers", "retry saying the code was empty", steps=1),
    Case("prose_only", "an answer in prose, no code", [*twice(text(PROSE)), GOOD], "recovers",
         "retry saying there was no code", steps=1),
    Case("refusal", "a refusal", [*twice(text(REFUSAL)), GOOD], "recovers", "retry saying it refused", steps=1),
    Case("repeats_the_prompt", "the input fields echoed back", [*twice(text(ECHO)), GOOD], "recovers",
         "retry saying it repeated the prompt", steps=1),
    Case("repeats_the_template", "the format template with `{reasoning}` / `{code}` placeholders",
         [*twice(text(TEMPLATE)), GOOD], "recovers", "retry saying it repeated the prompt", steps=1),
    Case("cut_off_in_reasoning", "cut off at the token limit (`finish_reason=length`) mid-reasoning",
         [*twice(text(CUT, finish_reason="length")), GOOD], "recovers", "retry saying it was cut off", steps=1),
    Case("cut_off_in_code", "fields complete up to half a code block, `finish_reason=length`",
         [text("[[ ## reasoning ## ]]\nMultiply.\n[[ ## code ## ]]\nhalf_done = 1\nprint(6 *", finish_reason="length"),
          GOOD], "recovers", "retry saying it was cut off; the half block never runs", not_run="half_done", steps=1),
    # ---- code the REPL rejects: RLM shows the error to the model, which fixes it next step
    Case("python2_print", "`print 'hi'`", [F(reasoning="Print.", code="print 'hi'"), GOOD], "recovers",
         "RLM feeds the SyntaxError back"),
    Case("shell_command_fence", "a ```bash block", [F(reasoning="Shell.", code="```bash\necho 42\n```"), GOOD],
         "recovers", "RLM feeds the error back"),
    Case("bare_shell_command", "`ls -la` as the code", [F(reasoning="List.", code="ls -la"), GOOD], "recovers",
         "RLM feeds the error back"),
    Case("prose_in_code_field", "a sentence in the code field", [F(reasoning="Hm.", code="I will now multiply."), GOOD],
         "recovers", "RLM feeds the SyntaxError back"),
    Case("smart_quotes", "curly quotes in the code", [F(reasoning="Quote.", code="SUBMIT(result=\u201c42\u201d)"), GOOD],
         "recovers", "RLM feeds the SyntaxError back"),
    Case("submit_missing_field", "`SUBMIT()` with no fields", [F(reasoning="Done.", code="SUBMIT()"), GOOD],
         "recovers", "the REPL says which field is missing"),
    Case("submit_wrong_field", "`SUBMIT(answer=...)`", [F(reasoning="Done.", code="SUBMIT(answer='42')"), GOOD],
         "recovers", "the REPL says which field is missing"),
    Case("submit_extra_field", "`SUBMIT(result=..., confidence=...)`",
         [F(reasoning="Done.", code="SUBMIT(result='42', confidence=0.9)"), GOOD], "recovers",
         "the REPL refuses the extra field"),
    # ---- replies that never get better: the run fails and says why
    Case("empty_forever", "empty replies, every time", [text("")] * 6, "fails", "3 tries per step, then fail",
         error="UnreadableReply: the model sent 3 unreadable replies in a row (last: the reply was empty)"),
    Case("prose_forever", "prose answers, every time", [text(PROSE)] * 6, "fails", "3 tries per step, then fail",
         error="no [[ ## code ## ]] section"),
    Case("refusal_forever", "refusals, every time", [text(REFUSAL)] * 6, "fails", "3 tries per step, then fail",
         error="the model refused"),
    Case("cut_off_forever", "cut off at the token limit, every time", [text(CUT, finish_reason="length")] * 6,
         "fails", "3 tries per step, then fail naming max_tokens", error="raise the limit: dspy.LM(..., max_tokens=",
         lm={"max_tokens": 64}),
    Case("content_filter_forever", "no content, `finish_reason=content_filter`, every time",
         [text("", finish_reason="content_filter")] * 6, "fails", "3 tries per step, then fail naming the filter",
         error="content filter stopped the reply"),
    Case("garbage_until_max_iters", "code that only errors, until max_iters; then an invented answer",
         [F(reasoning="Try.", code="print(undefined_name)")] * 3 + [F(reasoning="Guess.", result="I made this up")],
         "fails", "RLM's extract answer from nothing is refused", error="MaxItersExhausted", max_iters=3),
]

FAULTS = [
    Case("rate_limit_retry_after", "429 with `Retry-After: 1`",
         [Reply.failure(429, "Rate limit reached", headers={"Retry-After": "1"}, **RATE_LIMIT), GOOD], "recovers",
         "waits the Retry-After, then retries", minimum_wait=0.9),
    Case("rate_limit_no_retry_after", "429 without `Retry-After`",
         [Reply.failure(429, "Rate limit reached", **RATE_LIMIT), GOOD], "recovers", "backoff, then retry"),
    Case("rate_limit_too_long", "429 with `Retry-After: 3600`",
         [Reply.failure(429, "Rate limit reached", headers={"Retry-After": "3600"}, **RATE_LIMIT), GOOD], "fails",
         "fails at once: longer than RetryPolicy.max_wait", error="Retry-After 3600 s"),
    Case("rate_limit_forever", "429 on every request",
         [Reply.failure(429, "Rate limit reached", headers={"Retry-After": "0"}, **RATE_LIMIT)] * 3, "fails",
         "retries, then fails", error="rate limited (429"),
    Case("server_error", "a 500", [Reply.failure(500, "Internal error", error_type="server_error"), GOOD], "recovers",
         "backoff, then retry"),
    Case("server_error_forever", "500 on every request",
         [Reply.failure(500, "Internal error", error_type="server_error")] * 3, "fails", "retries, then fails",
         error="server error (500): Internal error, gave up after 3 attempts"),
    Case("timeout", "a reply that stalls past the client timeout", [Reply(delay=2.5), GOOD], "recovers",
         "backoff, then retry", lm={"timeout": 1}),
    Case("timeout_forever", "every reply stalls", [Reply(delay=2.5)] * 3, "fails", "retries, then fails",
         error="did not answer in time", lm={"timeout": 1}),
    Case("connection_reset", "the connection dropped (RST)", [Reply(reset=True), GOOD], "recovers",
         "backoff, then retry"),
    Case("connection_reset_forever", "every connection dropped", [Reply(reset=True)] * 3, "fails",
         "retries, then fails", error="connection failed"),
    Case("proxy_502_html", "a 502 HTML page from a proxy in front of the provider",
         [Reply(status=502, body="<html><body><h1>502 Bad Gateway</h1></body></html>"), GOOD], "recovers",
         "backoff, then retry"),
    Case("html_instead_of_json", "a 200 HTML login page (a wrong `api_base`)",
         # Twice: a streamed request's odd answer is asked once more plainly (some servers ignore `stream`).
         [Reply(status=200, body="<html><body>Please log in</body></html>")] * 2, "fails", "fails at once (not transient)",
         error="is not JSON"),
    Case("bad_request", "a 400 the provider will never accept",
         [Reply.failure(400, "Unsupported parameter: 'foo'")], "fails", "fails at once (not transient)",
         error="LMInvalidRequestError"),
    Case("auth_error", "a 401 (bad key)", [Reply.failure(401, "Incorrect API key provided", error_type="auth_error")],
         "fails", "fails at once (not transient)", error="LMAuthError"),
    Case("context_length_first_step", "a context-length error on the first step (nothing to compact)",
         [Reply.failure(400, CONTEXT_MESSAGE, **CONTEXT)], "fails", "fails saying how to raise the limit",
         error="ContextTooLong"),
    Case("context_length_long_history", "a context-length error after 4 steps",
         [Reply.failure(400, CONTEXT_MESSAGE, **CONTEXT), text("Summary: steps 1-4 printed numbers."), GOOD],
         "recovers", "compaction, then retry", history=4, max_iters=8),
]

CASES = REPLIES + FAULTS


def table() -> str:
    """The Markdown table of docs/robustness.md (tests/adversarial/test_what_models_send.py keeps them equal)."""
    rows = ["| case | what was sent | outcome | how |", "|---|---|---|---|"]
    for case in CASES:
        outcome = "recovers: `finished`, 42" if case.outcome == "recovers" else f"`failed`: {case.error}"
        rows.append(f"| `{case.name}` | {case.sent} | {outcome} | {case.via} |")
    return "\n".join(rows) + "\n"
