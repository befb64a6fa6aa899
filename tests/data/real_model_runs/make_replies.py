"""Rebuild replies.json and raw_replies.json from ../shared/real-model-runs (run from the repository root; not
needed by the tests).

    python tests/data/real_model_runs/make_replies.py ../shared/real-model-runs

Keeps, per request, only what a replay needs: which agent asked, the first 80 characters of
its task, and the model's reply (reasoning and code as the step ran; for an ``llm_query`` the
prompt and the answer). Where the code that ran differs from the stored reply (0012-0014: the
stored reply has the quotes fixed, the step that ran had ``t[\\"...\\"]`` inside an f-string,
as the next request's REPL history shows), the code as it ran is kept and ``as_run`` says so.
``saw`` is the first line of the output the model read after the step, when that was an error.

raw_replies.json keeps every agent step's reply exactly as the model sent it (both sessions: ``1/0001``,
``2/0001``), for the tests that cut replies at the end marker; its ``local/...`` entries (what the local
model wrote, from ``python -m bench.local_model``) are kept as they are.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\[\[ ## |\Z)", re.S)
STEP = re.compile(r"\n=== Step (\d+) ===\n")
CODE_OUTPUT = re.compile(r"Code:\n(```python\n.*?\n```)\nOutput(?: \([\d,]+ chars\))?:\n(.*)", re.S)


def fields(reply: str) -> dict[str, str]:
    return {name: value.strip() for name, value in FIELD.findall(reply)}


def history(user: str) -> list[tuple[str, str]]:
    """(code as it ran with its fences, output) of each step in a request's REPL history."""
    text = user[user.find("[[ ## repl_history ## ]]"):user.find("[[ ## iteration ## ]]")]
    parts = STEP.split(text)
    steps = []
    for body in parts[2::2]:
        match = CODE_OUTPUT.search(body)
        steps.append((match.group(1), match.group(2).strip()) if match else ("", ""))
    return steps


def main(source: Path) -> None:
    rows = list(csv.reader(open(source / "index.tsv", encoding="utf-8"), delimiter="\t"))[1:]
    requests = {row[0]: json.loads((source / "req" / f"{row[0]}.json").read_text()) for row in rows}
    replies = {row[0]: (source / "resp" / f"{row[0]}.txt").read_text() for row in rows}
    by_agent: dict[tuple[str, str], list[str]] = {}
    for number, agent, task, *_ in rows:
        by_agent.setdefault((agent, task), []).append(number)
    out = []
    for number, agent, task, *_ in rows:
        if agent == "llm_query":
            prompt = requests[number]["messages"][-1]["content"]
            out.append({"id": number, "agent": agent, "prompt": prompt, "reply": replies[number].strip()})
            continue
        entry = {"id": number, "agent": agent, "task": task, **fields(replies[number])}
        entry.pop("completed", None)
        same = by_agent[(agent, task)]
        later = same[same.index(number) + 1:]
        if later:  # the next request of this agent shows this step as it ran and what it printed
            ran, output = history(requests[later[0]]["messages"][-1]["content"])[-1]
            if ran and ran != entry["code"]:
                entry["code"], entry["as_run"] = ran, True
            if output.startswith("[Error]"):
                lines = [line for line in output.splitlines() if line.strip()]
                entry["saw"] = lines[-1] if "Traceback" in output else lines[0]
        out.append(entry)
    (HERE / "replies.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def raw(source: Path) -> None:
    """Every step reply of both sessions as sent (not ``llm_query`` answers: they have no markers)."""
    out = []
    for session, folder in (("1", source), ("2", source / "session2")):
        for path in sorted((folder / "resp").glob("*.txt")):
            text = path.read_text(encoding="utf-8")
            if "[[ ## code ## ]]" in text:
                out.append({"id": f"{session}/{path.stem}", "model": "capable", "text": text})
    target = HERE / "raw_replies.json"
    kept = [each for each in json.loads(target.read_text(encoding="utf-8")) if each["id"].startswith("local/")] \
        if target.exists() else []
    target.write_text(json.dumps(out + kept, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/real-model-runs"))
    raw(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/real-model-runs"))
