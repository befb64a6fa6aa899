"""Rebuild real_session.json from the shared recording of the second real session (run from the repository
root; the bench does not need it):

    python bench/data/make_real_session.py ../shared/real-model-runs/session2

Keeps, per request, what a replay needs: which agent asked (root, statistician, reviewer, or an
``llm_query``), the first 80 characters of its task, and the model's reply (``reasoning`` and ``code`` as the
model wrote them; for an ``llm_query`` the prompt and the answer). `bench/model_reads.py` replays it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\[\[ ## |\Z)", re.S)
ROLES = {"You are a reviewer": "reviewer", "You are a careful statistician": "statistician"}


def main(source: Path) -> None:
    out = []
    for path in sorted((source / "req").glob("*.json")):
        number = path.stem
        messages = json.loads(path.read_text())["messages"]
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        user = messages[-1]["content"]
        reply = (source / "resp" / f"{number}.txt").read_text()
        if not system:
            out.append({"id": number, "agent": "llm_query", "prompt": user, "reply": reply.strip()})
            continue
        agent = next((role for head, role in ROLES.items() if system.startswith(head)), "root")
        task = re.search(r"Task \(`task`\):\n(.*)", user).group(1)[:80]
        fields = {name: value.strip() for name, value in FIELD.findall(reply)}
        out.append({"id": number, "agent": agent, "task": task, "reasoning": fields.get("reasoning", ""),
                    "code": fields.get("code", "")})
    (HERE / "real_session.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
