"""``%deepagent_memory``: list, search, add and forget the agent's memories (tools/memory.py).

The store is the configured workspace's (or the user-wide one when ``DEEPAGENT_MEMORY=user``).
A locked or damaged store is one `UsageError` line saying what to do. What the user adds here is
stored as the user's (``by: user``); the list shows who wrote each memory.

The agent's tools over the same memories are tools/memory.py.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..safe_text import plain
from .inputs.flags import parse_flags, unquote
from .configured import AgentMagicsBase

LIST_LIMIT = 20
TEXT_WIDTH = 100
TAGS_WIDTH = 40


def memories_table(memories: list[dict[str, Any]]) -> str:
    rows = [("id", "when", "by", "run", "tags", "text")]
    for memory in memories:
        text = " ".join(memory["text"].split())
        tags = ",".join(memory["tags"]) or "-"
        rows.append((f"#{memory['id']}", memory["when"], memory.get("author") or "unknown", str(memory["run"] or "-"),
                     tags if len(tags) <= TAGS_WIDTH else tags[: TAGS_WIDTH - 1] + "…",
                     text if len(text) <= TEXT_WIDTH else text[: TEXT_WIDTH - 1] + "…"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1] for row in rows)


@magics_class
class MemoryMagics(AgentMagicsBase):
    """The agent's memories across sessions."""

    @magic_arguments()
    @argument("query", nargs="*", help="words to search for (none: the newest memories)")
    @argument("--forget", type=int, metavar="ID", help="delete the memory with this id")
    @argument("--add", metavar="TEXT", help="add a memory by hand (quote it)")
    @argument("--tags", help="comma-separated tags for --add")
    @argument("-n", "--limit", type=int, default=LIST_LIMIT, help="most memories to list")
    @argument("--workspace", help="the workspace whose memories to use (default: the configured one)")
    @line_magic
    def deepagent_memory(self, line: str) -> None:
        """List or search the agent's memories; add or forget one."""
        from ..tools.memory import MemoryStoreError, store_for  # the memory tools' room, on first use

        args = parse_flags(self.deepagent_memory, line)
        if args.limit < 1:
            raise UsageError(f"--limit must be at least 1, not {args.limit}")
        store = store_for(args.workspace or self._core().workspace)
        try:
            if args.forget is not None:
                if not store.forget(args.forget):
                    raise UsageError(f"there is no memory #{args.forget} in {store.path}; "
                                     "%deepagent_memory lists them")
                print(f"Forgot memory #{args.forget}.")
                return
            if args.add is not None:
                text = unquote(args.add.strip())
                memory_id = store.add(text, unquote(args.tags) if args.tags else None, author="user")
                print(f"Remembered (memory #{memory_id}) in {store.path}.")
                return
            query = " ".join(args.query)
            found = store.search(query, args.limit)
        except MemoryStoreError as exc:
            raise UsageError(str(exc)) from None
        if not found:
            print(f"No memories match {query!r}." if query else f"No memories yet in {store.path}.")
            return
        print(plain(memories_table(found)))  # a model wrote most of it: no escape sequence reaches the terminal
