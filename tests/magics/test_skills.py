"""magics/skills.py: ``%deepagent_skills`` lists the skills the agent would be offered and the folders skipped."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError


def skill(folder, name, description):
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n# Do it\n")


def test_no_skills_names_the_folders_it_looked_in(ip, tmp_path, capsys):
    ip.run_line_magic("deepagent_config", f"--skills-dir {tmp_path / 'user-skills'}")
    capsys.readouterr()
    ip.run_line_magic("deepagent_skills", "")
    out = capsys.readouterr().out
    assert out.startswith("No skills in ") and str(tmp_path / "skills") in out and "user-skills" in out


def test_skills_are_listed_with_where_they_are_and_a_bad_folder_is_skipped_in_one_line(ip, tmp_path, capsys):
    ip.run_line_magic("deepagent_config", f"--skills-dir {tmp_path / 'user-skills'}")
    skill(tmp_path / "skills" / "csv-cleanup", "csv-cleanup", "Clean messy CSV exports. " + "x" * 200)
    skill(tmp_path / "user-skills" / "plots", "plots", "Make plots.")
    (tmp_path / "skills" / "not-a-skill").mkdir()
    capsys.readouterr()
    ip.run_line_magic("deepagent_skills", "")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "where", "description"]
    rows = {line.split()[0]: line for line in lines[1:] if not line.startswith("skipped")}
    assert rows["csv-cleanup"].split()[1] == "workspace" and rows["csv-cleanup"].endswith("…")
    assert rows["plots"].split()[1] == "user"
    assert [line for line in lines if line.startswith("skipped: ")] and "not-a-skill" in "\n".join(lines)


def test_a_workspace_that_cannot_be_one_is_one_line(ip, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="is a file, not a folder"):
        ip.run_line_magic("deepagent_skills", f"--workspace {tmp_path / 'file'}")
