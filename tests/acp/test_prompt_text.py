"""An ACP prompt's blocks as the task (`deepagent_magics.acp.prompt_text`): text, files named, text inlined, the
rest refused with an ACP error."""

from __future__ import annotations

import pytest

pytest.importorskip("acp")
from acp import RequestError  # noqa: E402
from acp.schema import (AudioContentBlock, BlobResourceContents, EmbeddedResourceContentBlock,  # noqa: E402
                        ResourceContentBlock, TextContentBlock, TextResourceContents)

from deepagent_magics.acp.prompt_text import task_text  # noqa: E402


def text(value):
    return TextContentBlock(type="text", text=value)


def test_text_is_the_task_and_an_attached_file_is_named_for_the_agent(tmp_path):
    data = tmp_path / "sales data.csv"
    data.write_text("a,b\n")
    task = task_text([text("Sum the sales"), ResourceContentBlock(type="resource_link", name="s", uri=data.as_uri()),
                      EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(
                          uri="file:///notes.md", text="remember Q3"))])
    assert task.startswith("Sum the sales\n\nfile:///notes.md:\nremember Q3")
    assert task.endswith(f"Files the user attached (open them from your code):\n- {data}")


@pytest.mark.parametrize("blocks, words", [
    ([], "no text"),
    ([text(" \n ")], "no text"),
    ([text("x"), AudioContentBlock(type="audio", data="AAAA", mime_type="audio/wav")], "not audio"),
    ([text("x"), EmbeddedResourceContentBlock(type="resource", resource=BlobResourceContents(
        uri="file:///a.bin", blob="AAAA"))], "not text"),
    ([text("x"), ResourceContentBlock(type="resource_link", name="r", uri="file:///no/such/file")], "no such file"),
    ([text("x"), ResourceContentBlock(type="resource_link", name="r", uri="file://otherhost/etc/passwd")],
     "only local files"),
    ([text("x"), ResourceContentBlock(type="resource_link", name="r", uri="relative/path")], "not an absolute"),
    ([text("x"), ResourceContentBlock(type="resource_link", name="r", uri="file:///tmp")], "no such file"),
])
def test_what_the_agent_cannot_read_is_an_invalid_params_error(blocks, words):
    with pytest.raises(RequestError) as caught:
        task_text(blocks)
    assert caught.value.code == -32602 and words in caught.value.data["message"]
