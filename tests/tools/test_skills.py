"""tools/skills.py: the skills listed in the prompt, most relevant first within a budget; ``read_skill`` confined to
the skill's folder (hostile cases: tests/adversarial/test_skills.py)."""

from __future__ import annotations

import pytest

from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import Session, activate, deactivate
from deepagent_magics.core.workspace.skills import Skill
from deepagent_magics.core.workspace.workspace import Workspace
from deepagent_magics.tools.skills import LISTED, LISTED_CHARS, list_skills, listing, ranked, read_skill


def make(root, name, description, extra=None):
    folder = root / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n# Steps\nDo it.\n")
    for path, text in (extra or {}).items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)


@pytest.fixture
def in_run(tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPAGENT_SKILLS_DIR", str(tmp_path / "no-user-skills"))
    token = activate(Session(Run("t"), Workspace(tmp_path)))
    yield tmp_path
    deactivate(token)


def test_skills_are_listed_and_read_inside_their_folder_only(in_run):
    make(in_run, "csv-cleanup", "Clean CSVs.", {"scripts/clean.py": "print('clean')\n"})
    (in_run / "secret.txt").write_text("not the skill's")
    assert list_skills() == [{"name": "csv-cleanup", "description": "Clean CSVs.", "where": "workspace"}]
    assert "Do it." in read_skill("csv-cleanup")
    assert "print('clean')" in read_skill("csv-cleanup", "scripts/clean.py")
    assert "clean.py" in read_skill("csv-cleanup", "scripts")
    escape = read_skill("csv-cleanup", "../../secret.txt")
    assert escape.startswith("Error:") and "outside the skill 'csv-cleanup'" in escape
    assert read_skill("nope").startswith("Error: no skill named 'nope'; the skills are: csv-cleanup")


def test_the_listing_puts_what_the_task_names_first_and_never_cuts_a_description():
    skills = [Skill("plots", "Make plots.", None, "user"), Skill("csv-cleanup", "Clean messy CSV exports.", None, "user")]
    assert [skill.name for skill in ranked(skills, "clean the csv")] == ["csv-cleanup", "plots"]
    assert ranked(skills, "the and") == skills
    text = listing(skills, "clean the csv")
    assert text.splitlines()[0] == '## Skills (before work a skill covers: `print(read_skill("NAME"))`)'
    assert text.index("csv-cleanup") < text.index("plots")
    assert listing([], "x") == ""


def test_past_the_budget_skills_are_named_and_past_the_bound_counted():
    many = [Skill(f"s{i}", "word " * 100, None, "user") for i in range(LISTED + 5)]
    text = listing(many)
    described = [line for line in text.splitlines() if line.startswith("- s")]
    assert sum(len(line) for line in described) <= LISTED_CHARS + len(described)
    assert all(line.endswith("word") for line in described)  # whole descriptions
    assert "- also (`list_skills()` describes them):" in text and "- ... 5 more" in text
