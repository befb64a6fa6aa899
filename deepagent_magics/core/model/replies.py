"""Reading what real models send: repair a reply whose intent is plain, name what is wrong with one that is not.

DSPy's ChatAdapter wants ``[[ ## reasoning ## ]]`` and ``[[ ## code ## ]]`` sections; when they
are missing it asks the model again through the JSONAdapter, then gives up with an
``AdapterParseError``. Real models often answer in a shape whose meaning is still plain:
Markdown headers or ``Reasoning:`` labels instead of markers, a ``<think>`` block before the
answer (sometimes with a draft of the markers inside it), zero-width characters in the
markers, prose with one ```` ```python ```` block and no markers at all, the code in the
reasoning field, several code blocks of which RLM would run only the first, only the code and
no reasoning. `ChatAdapter` here reads those the way the model meant them, before DSPy spends
a second call on the JSON fallback.

What no repair can read (an empty reply, prose only, a refusal, a reply that repeats the
prompt, one cut off at the token limit) is named by `diagnose`: `core.loop.attempts` tells the model
what was wrong and asks again, and a run that still gets nothing readable fails with that name.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

import dspy
from dspy.adapters.utils import parse_value
from dspy.utils.exceptions import AdapterParseError

ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))
THINK = re.compile(r"<(think|thinking|reasoning)>(.*?)(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE)
FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.DOTALL | re.MULTILINE)
XML_CODE = re.compile(r"<code>(.*?)</code>", re.DOTALL | re.IGNORECASE)
PYTHON_LANGS = {"python", "py", "python3", "py3", ""}
COMPLETED = "[[ ## completed ## ]]"
INPUT_MARKERS = ("[[ ## variables_info ## ]]", "[[ ## repl_history ## ]]", "[[ ## iteration ## ]]")
REFUSAL = re.compile(r"^\W*(i'?m sorry|i am sorry|sorry,|i can(no|')t|i won'?t|i will not|i'?m (not able|unable)|"
                     r"i am (not able|unable)|as an ai\b|i must decline|unfortunately,? i can)", re.IGNORECASE)


def marker_line(name: str) -> re.Pattern[str]:
    """A line that heads field ``name`` in any shape models use for it."""
    word = re.escape(name).replace("_", "[ _]")
    return re.compile(
        rf"^(?:[ \t]*\[\[\s*#*\s*{word}\s*#*\s*\]\]|[ \t]*#{{1,6}}[ \t]*{word}|[ \t]*\*\*{word}:?\*\*|{word}[ \t]*:)(?!\w)[ \t]*:?[ \t]*",
        re.IGNORECASE | re.MULTILINE)


def clean(text: str) -> tuple[str, str]:
    """``text`` without zero-width characters and ``<think>`` blocks, and what the think blocks said."""
    text = (text or "").translate(ZERO_WIDTH)
    thoughts = "\n".join(match.group(2).strip() for match in THINK.finditer(text))
    return THINK.sub("", text).strip(), thoughts


def python_blocks(text: str) -> list[str]:
    return [body.strip("\n") for lang, body in FENCE.findall(text) if lang.lower() in PYTHON_LANGS]


def join_blocks(code: str) -> str:
    """Several Python blocks in one code field become one (RLM would silently run only the first)."""
    blocks = python_blocks(code or "")
    if len(blocks) < 2:
        return code
    return "```python\n" + "\n\n".join(blocks) + "\n```"


def sections(text: str, names: list[str]) -> dict[str, str]:
    """The fields of ``text`` headed by a marker of any shape (`marker_line`), in order of appearance."""
    heads = []
    for name in [*names, "completed"]:
        match = marker_line(name).search(text)
        if match:
            heads.append((match.start(), match.end(), name))
    heads.sort()
    found = {}
    for index, (_, end, name) in enumerate(heads):
        stop = heads[index + 1][0] if index + 1 < len(heads) else len(text)
        if name != "completed":
            found[name] = text[end:stop].strip()
    return found


def repair(completion: str, names: list[str]) -> dict[str, str] | None:
    """The action fields (``reasoning``, ``code``) the model meant, or None when its intent is not plain."""
    if set(names) != {"reasoning", "code"}:
        return None
    text, thoughts = clean(completion)
    if not text or echoes_prompt(text) or text.lstrip().startswith("{"):
        return None  # nothing, the prompt, or JSON (the JSON fallback's job)
    fields = sections(text, names)
    if not python_blocks(fields.get("code", "")) and python_blocks(fields.get("reasoning", "")):
        fields.pop("code", None)  # the code sits in the reasoning field
    tagged = XML_CODE.search(text)
    if "code" not in fields and tagged:
        fields["code"] = tagged.group(1).strip()
        fields.setdefault("reasoning", XML_CODE.sub("", text).strip())
    if "code" not in fields:
        blocks = python_blocks(text)
        if not blocks:
            return None
        fields["code"] = "```python\n" + "\n\n".join(blocks) + "\n```"
        prose = FENCE.sub("", fields.get("reasoning", text)).strip()
        fields["reasoning"] = marker_line("reasoning").sub("", prose, count=1).strip()
    if not fields["code"].strip():
        return None
    fields.setdefault("reasoning", "")
    if not fields["reasoning"]:
        fields["reasoning"] = thoughts
    fields["code"] = join_blocks(fields["code"])
    return fields


def relocate(fields: dict[str, Any]) -> None:
    """Code the model put in the reasoning field goes to the code field; several blocks become one."""
    code, reasoning = fields.get("code") or "", fields.get("reasoning") or ""
    blocks = python_blocks(reasoning) if isinstance(reasoning, str) else []
    if blocks and not python_blocks(code) and (not code.strip() or not _compiles(code)):
        fields["code"] = "```python\n" + "\n\n".join(blocks) + "\n```"
        fields["reasoning"] = FENCE.sub("", reasoning).strip()
    fields["code"] = join_blocks(fields["code"])


def _compiles(code: str) -> bool:
    try:
        compile(code, "<reply>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def echoes_prompt(text: str) -> bool:
    """The reply repeats the prompt: input sections, or the format template's placeholders."""
    return any(marker in text for marker in INPUT_MARKERS) or bool(
        re.search(r"\[\[ ## reasoning ## \]\]\s*\{[^}\n]*\}\s*\[\[ ## code ## \]\]", text))


def diagnose(completion: str | None, finish_reason: str | None = None) -> str:
    """What is wrong with a reply no repair could read, in a few words the user and the model both understand."""
    text, thoughts = clean(completion or "")
    if finish_reason == "content_filter":
        return "the provider's content filter stopped the reply (finish_reason=content_filter)"
    if finish_reason == "length":
        return "the reply was cut off at the token limit (finish_reason=length) before it was complete"
    if not text:
        return "the reply was empty" + (" (only a <think> block)" if thoughts else "")
    if echoes_prompt(text):
        return "the reply repeats the prompt instead of answering it"
    if REFUSAL.search(text[:300]):
        return f"the model refused: {one_line(text, 120)!r}"
    if "```" in text:
        langs = sorted({lang or "plain" for lang, _ in FENCE.findall(text)} - PYTHON_LANGS)
        if langs:
            return f"the reply has a {langs[0]} block but no Python code"
    return f"the reply has no [[ ## code ## ]] section and no Python code block: {one_line(text, 120)!r}"


def one_line(text: str, limit: int = 200) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class ChatAdapter(dspy.ChatAdapter):
    """DSPy's ChatAdapter that also reads the shapes `repair` knows, before any JSON fallback.

    Named ``ChatAdapter`` on purpose: DSPy's stream listeners look their field markers up by the
    adapter's class name, so a streamed step reads exactly as with DSPy's own adapter.
    """

    def format_system_message(self, signature: Any) -> str:
        """For the action step: the instructions, then the form of the answer, each output with what it holds.
        (DSPy's lists every field twice before the instructions; the inputs' markers are in each request.)"""
        if not _is_action(signature):
            return super().format_system_message(signature)
        fields = "".join(f"[[ ## {name} ## ]]\n{{{_desc(field)}}}\n" for name, field in signature.output_fields.items())
        return f"{textwrap.dedent(signature.instructions).strip()}\n\nAnswer in this form:\n{fields}{COMPLETED}"

    def user_message_output_requirements(self, signature: Any) -> str | None:
        """Nothing for the action step: the system message gives the answer's form, once."""
        if not _is_action(signature):
            return super().user_message_output_requirements(signature)
        return None

    def parse(self, signature: Any, completion: str) -> dict[str, Any]:
        names = list(signature.output_fields)
        text, _ = clean(completion)
        if text != (completion or "").strip() and text:
            completion = text  # a draft inside <think> must not win over the answer after it
        if echoes_prompt(completion or ""):
            raise AdapterParseError("ChatAdapter", signature, completion, message=diagnose(completion))
        try:
            fields = super().parse(signature, completion)
        except AdapterParseError:
            repaired = repair(completion, names)
            if repaired is None:
                raise
            fields = {name: parse_value(repaired[name], signature.output_fields[name].annotation) for name in names}
        if set(names) == {"reasoning", "code"} and isinstance(fields.get("code"), str):
            relocate(fields)
        return fields


def _is_action(signature: Any) -> bool:
    return set(signature.output_fields) == {"reasoning", "code"} and "variables_info" in signature.input_fields


def _desc(field: Any) -> str:
    return str((field.json_schema_extra or {}).get("desc", ""))


def action_adapter(current: Any) -> Any:
    """The adapter for the agent's action step: ours in place of DSPy's default ChatAdapter, else the user's."""
    if current is None:
        return ChatAdapter()
    if type(current) is dspy.ChatAdapter:
        return ChatAdapter(callbacks=current.callbacks, use_json_adapter_fallback=current.use_json_adapter_fallback)
    return current
