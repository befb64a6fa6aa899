"""core/loop/instructions.py: the action instructions: the profile, the REPL's rules, each offered tool once on its
line, SUBMIT last (word for word per role: tests/core/loop/test_prompts_per_role.py)."""

from __future__ import annotations

from deepagent_magics.core.loop.capability import ToolLine
from deepagent_magics.core.loop.instructions import (
    DOC_CHARS,
    TOOLS_HEAD,
    compose,
    first_paragraph,
    signature,
    submit_line,
    tool_lines,
    workspace_line,
)


def read_file(path: str, offset: int = 0, limit: int = 2000) -> str:
    """Read a file.

    More detail that help() shows."""


def write_file(path: str, content: str) -> str:
    """Write a file."""


def delegate(task: str) -> str:
    """Start a sub-agent."""


write_file.writes = True
delegate.starts_subagents = True
TOOLS = [("read_file", read_file), ("write_file", write_file), ("delegate", delegate)]


def test_the_instructions_are_the_profile_the_repl_rules_then_the_tools():
    text = compose("You are an agent.", TOOLS, "Code runs here.", {"result": "the answer"})
    profile, repl, tools = text.split("\n\n")
    assert profile == "You are an agent." and repl == "## Your REPL\nCode runs here."
    assert tools.startswith(TOOLS_HEAD) and tools.endswith("- `SUBMIT(result=...)`: finish; `result`: the answer")


def test_each_tool_once_in_its_place_sharing_a_line_where_its_capability_says():
    lines = tool_lines(TOOLS, {}, lines={"write_file": ToolLine(order=5, beside="read_file"),
                                         "read_file": ToolLine(order=1), "delegate": ToolLine(order=50)})
    assert lines[0] == ("- `read_file(path, offset=0, limit=2000)`: Read a file; `write_file(path, content)`: "
                        "Write a file.")
    assert [line.split("`")[1].split("(")[0] for line in lines] == ["read_file", "llm_query", "delegate", "SUBMIT"]
    assert "llm_query_batched(prompts)" in lines[1]


def test_nothing_is_said_of_a_tool_the_agent_is_not_offered():
    quiet = "\n".join(tool_lines(TOOLS, {}, can_delegate=False, read_only=True))
    assert "delegate" not in quiet and "write_file" not in quiet and "read_file" in quiet
    needs = tool_lines([("read_todos", read_file)], {}, lines={"read_todos": ToolLine(needs="write_todos")})
    assert not any("read_todos" in line for line in needs)


def test_signatures_and_first_paragraphs_as_a_caller_reads_them():
    assert signature("read_file", read_file) == "read_file(path, offset=0, limit=2000)"
    assert signature("read_file", read_file, required_only=True) == "read_file(path, ...)"
    assert signature("f", lambda *a, **k: None) == "f(*a, **k)"
    assert first_paragraph(read_file) == "Read a file."
    assert first_paragraph(lambda: None) == "(no description)"
    long = type("T", (), {"__doc__": "word " * 200})
    assert len(first_paragraph(long)) == DOC_CHARS
    assert submit_line({}) == "- `SUBMIT(result=...)`: finish"


def test_the_workspace_line_says_whether_it_is_also_the_working_directory(tmp_path):
    assert workspace_line(tmp_path, tmp_path) == f"Workspace (working directory): {tmp_path}"
    assert workspace_line(tmp_path, tmp_path.parent) == f"Workspace: {tmp_path}; your working directory: {tmp_path.parent}"
