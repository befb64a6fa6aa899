"""The scripted demo behind `make demo` and the quickstart notebook.

When no real LM is configured (``DEEPAGENT_LM`` unset), the quickstart plays this
script instead of calling a model, and says so. Everything else is real: the
code runs in the notebook's kernel, the files land in the workspace. With a real
model (``DEEPAGENT_LM=local make demo``: the bundled model on this CPU) the cells'
output is shown as it comes, with the run's text display, since a step takes tens
of seconds.

    python -m deepagent_magics.demos.quickstart notebooks/01_quickstart.ipynb
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..testing import ScriptedLM

NOTICE = "No DEEPAGENT_LM set: running the scripted demo (a ScriptedLM plays the agent; no model is called)."

QUICKSTART_STEPS = [
    (
        "I should look at the `sales` table first and plan the work.",
        "print(len(sales), 'rows; columns:', list(sales[0]))\n"
        "print(sales[:2])\n"
        "write_todos([\n"
        "    {'content': 'Compute the Q2 -> Q3 change per region', 'status': 'in_progress'},\n"
        "    {'content': 'Rank the regions that fell', 'status': 'pending'},\n"
        "    {'content': 'Write report.md', 'status': 'pending'},\n"
        "])",
    ),
    (
        "Compute the change per region and keep the ranking in a notebook variable.",
        "changes = {row['region']: row['q3'] - row['q2'] for row in sales}\n"
        "ranking = sorted((r for r in changes if changes[r] < 0), key=lambda r: changes[r])\n"
        "print(changes)\n"
        "print('fell most:', ranking)\n"
        "write_todos([\n"
        "    {'content': 'Compute the Q2 -> Q3 change per region', 'status': 'completed'},\n"
        "    {'content': 'Rank the regions that fell', 'status': 'completed'},\n"
        "    {'content': 'Write report.md', 'status': 'in_progress'},\n"
        "])",
    ),
    (
        "Write the report as a Markdown table, then read it back to verify.",
        "lines = ['# Q3 sales report', '', '| region | Q2 | Q3 | change |', '|---|---:|---:|---:|']\n"
        "for row in sorted(sales, key=lambda row: changes[row['region']]):\n"
        "    lines.append(f\"| {row['region']} | {row['q2']:,} | {row['q3']:,} | {changes[row['region']]:+,} |\")\n"
        "write_file('report.md', '\\n'.join(lines) + '\\n')\n"
        "print(read_file('report.md'))",
    ),
    (
        "The report checks out. Mark the plan done and submit a summary.",
        "write_todos([\n"
        "    {'content': 'Compute the Q2 -> Q3 change per region', 'status': 'completed'},\n"
        "    {'content': 'Rank the regions that fell', 'status': 'completed'},\n"
        "    {'content': 'Write report.md', 'status': 'completed'},\n"
        "])\n"
        "worst = ranking[0]\n"
        "SUBMIT(result=(\n"
        "    f'**{len(ranking)} of {len(sales)} regions fell in Q3.** The largest drop was {worst} '\n"
        "    f'({changes[worst]:+,}). Ranking: {\", \".join(ranking)}. '\n"
        "    'The full table is in `report.md`; the per-region changes are in `changes`.\\n\\n'\n"
        "    '_(scripted demo: no LM was called)_'\n"
        "))",
    ),
]


def quickstart_lm(announce: bool = True) -> ScriptedLM:
    """The scripted LM for the quickstart notebook."""
    if announce:
        print(NOTICE)
    return ScriptedLM(QUICKSTART_STEPS, replies="(scripted demo reply)")


def run_notebook(path: str | Path, timeout: int | None = 300, keep: bool = False, echo: Any = None) -> Any:
    """Execute a notebook headless in a real kernel, in the notebook's folder; return the text of its
    `demo-result` cells (or, with ``keep``, the executed notebook). The kernel talks over unix
    sockets (no TCP port, no warning about one) and is shut down before this returns.

    With ``echo`` (a text stream), what the cells print goes there as it is printed, and runs show
    the text display (a line per step, and one rewritten while the model reads and writes), so a
    terminal sees a slow real model at work instead of a silent wait."""
    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    class Echoing(NotebookClient):
        def output(self, outs: Any, msg: Any, display_id: Any, cell_index: int) -> Any:
            if msg["msg_type"] == "stream":
                echo.write(msg["content"].get("text", ""))
                echo.flush()
            return super().output(outs, msg, display_id, cell_index)

    path = Path(path)
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient if echo is None else Echoing
    text_display = [] if echo is None else ["--DeepAgentMagics.display_mode=text"]
    with tempfile.TemporaryDirectory(prefix="deepagent-demo-") as sockets:
        manager = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "kernel"))
        try:
            client(notebook, timeout=timeout, kernel_name="python3", km=manager, extra_arguments=text_display,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
        finally:
            # nbclient leaves a kernel it was handed running: shut it down (its sub-agent pool with it) while
            # this process waits, not after it is gone ("Parent appears to have exited" on the way out).
            if manager.has_kernel:
                manager.shutdown_kernel()
    if keep:
        return notebook
    texts = []
    for cell in notebook.cells:
        if "demo-result" not in cell.get("metadata", {}).get("tags", []):
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stdout":
                texts.append(output["text"])
            elif "data" in output:
                texts.append(output["data"].get("text/markdown") or output["data"].get("text/plain", ""))
    return "".join(texts).strip()


def main(argv: list[str] | None = None) -> int:
    """Run the quickstart from a temporary copy (the repository stays as it was) and print its result."""
    args = sys.argv[1:] if argv is None else argv
    source = Path(args[0] if args else "notebooks/01_quickstart.ipynb")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "true")  # offline: DSPy's bundled model prices
    real = bool(os.environ.get("DEEPAGENT_LM", "").strip())  # a real model is slow: show it working
    print(f"Running {source} in a fresh kernel ...", flush=True)
    with tempfile.TemporaryDirectory(prefix="deepagent-demo-") as folder:
        copy = Path(folder) / source.name
        shutil.copyfile(source, copy)
        result = run_notebook(copy, timeout=None if real else 300, echo=sys.stderr if real else None)
        print(("\n" if real else "") + result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
