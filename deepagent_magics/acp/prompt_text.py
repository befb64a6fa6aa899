"""An ACP prompt as the task's text: its text blocks, and what its resource blocks point at.

Text blocks are the task. A ``resource_link`` to a local file (``file://``, as jupyter-ai sends a
chat's attachments) is named in the task for the agent to open; an embedded text ``resource`` is
added inline. Anything the agent could not read (an image, audio, a binary blob, a link that is not
a readable local file) and a prompt with no text are refused with an ACP error (invalid params), never
dropped in silence: the initialize response says which blocks are taken (no images, no audio).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp import RequestError, schema

MAX_EMBEDDED = 100_000  # characters of an embedded resource taken into the task


def refused(message: str) -> RequestError:
    return RequestError.invalid_params({"message": message})


def task_text(blocks: list[Any]) -> str:
    """The task the prompt's blocks say; `RequestError` for a block that cannot be read or no text at all."""
    texts: list[str] = []
    attached: list[str] = []
    for block in blocks or []:
        if isinstance(block, schema.TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, schema.ResourceContentBlock):
            attached.append(f"- {linked_file(block.uri)}")
        elif isinstance(block, schema.EmbeddedResourceContentBlock):
            texts.append(embedded(block.resource))
        else:
            raise refused(f"this agent reads text and files, not {getattr(block, 'type', type(block).__name__)} "
                          "blocks")
    if not "".join(texts).strip():
        raise refused("the prompt has no text: say what the agent should do")
    task = "\n\n".join(part for part in texts if part.strip())
    if attached:
        task += "\n\nFiles the user attached (open them from your code):\n" + "\n".join(attached)
    return task


def linked_file(uri: str) -> str:
    """The local path a ``file://`` link names, if it is a file this process can read."""
    parsed = urlparse(uri or "")
    if parsed.scheme not in ("file", "") or (parsed.netloc not in ("", "localhost")):
        raise refused(f"cannot read the resource {uri!r}: only local files (file://) are read")
    path = Path(unquote(parsed.path))
    if "\x00" in str(path) or not path.is_absolute():
        raise refused(f"cannot read the resource {uri!r}: not an absolute file path")
    try:
        if not path.is_file():
            raise refused(f"cannot read the resource {uri!r}: no such file")
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise refused(f"cannot read the resource {uri!r}: {exc.strerror or exc}") from None
    return str(path)


def embedded(resource: Any) -> str:
    if isinstance(resource, schema.TextResourceContents):
        body = resource.text if len(resource.text) <= MAX_EMBEDDED else resource.text[:MAX_EMBEDDED] + "\n[cut]"
        return f"{resource.uri}:\n{body}"
    raise refused(f"cannot read the embedded resource {getattr(resource, 'uri', '')!r}: it is not text")
