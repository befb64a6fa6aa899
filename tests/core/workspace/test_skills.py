"""core/workspace/skills.py: skills found in the workspace and user-wide; a folder that is not one, one line why."""

from __future__ import annotations

import pytest

from deepagent_magics.core.workspace.skills import SkillError, find_skills, front_matter, load_skill, roots, user_dir


def make(folder, text):
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(text)
    return folder


def test_the_user_wide_folder_is_configured_then_the_environment_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv("DEEPAGENT_SKILLS_DIR", str(tmp_path / "env"))
    assert user_dir(tmp_path / "conf") == tmp_path / "conf"
    assert user_dir() == tmp_path / "env"
    monkeypatch.delenv("DEEPAGENT_SKILLS_DIR")
    assert str(user_dir()).endswith(".deepagent/skills")
    assert roots(tmp_path, tmp_path / "u") == [("workspace", tmp_path / "skills"), ("user", tmp_path / "u")]


def test_a_workspace_skill_wins_over_a_user_one_and_bad_folders_are_one_line_each(tmp_path):
    make(tmp_path / "skills" / "csv-cleanup", "---\nname: csv-cleanup\ndescription: Clean CSVs.\n---\n# Steps")
    make(tmp_path / "user" / "csv-cleanup", "---\nname: csv-cleanup\ndescription: The user's.\n---\n")
    make(tmp_path / "user" / "plots", "---\nname: plots\ndescription: >\n  Make plots\n  that read well.\n---\n")
    make(tmp_path / "skills" / "Wrong_Name", "---\nname: Wrong_Name\ndescription: x\n---\n")
    (tmp_path / "skills" / "empty").mkdir()
    skills, problems = find_skills(tmp_path, tmp_path / "user")
    assert [(s.name, s.where, s.description) for s in skills] == [
        ("csv-cleanup", "workspace", "Clean CSVs."), ("plots", "user", "Make plots that read well.")]
    assert len(problems) == 2 and all("\n" not in problem for problem in problems)
    assert any("no SKILL.md" in problem for problem in problems)
    assert any("is not lowercase letters" in problem for problem in problems)


@pytest.mark.parametrize("text, says", [
    ("no front matter", "does not start with '---'"),
    ("---\nname: x\n", "not closed"),
    ("---\nname: other\ndescription: d\n---\n", "is not the folder's name"),
    ("---\nname: s\n---\n", "has no description"),
    ("---\nname: s\ndescription: " + "d" * 1100 + "\n---\n", "at most 1024"),
    ("---\nname: s\nname: s\n---\n", "gives 'name' twice"),
    ("---\n  name: s\n---\n", "is indented"),
    ("---\nname s\n---\n", "is not 'key: value'"),
    ("---\nname: 's\n---\n", "not closed"),
])
def test_a_malformed_skill_is_one_line_saying_why(tmp_path, text, says):
    folder = make(tmp_path / "s", text)
    with pytest.raises(SkillError, match=says):
        load_skill(folder, "workspace")


def test_a_skill_behind_a_link_is_refused(tmp_path):
    real = make(tmp_path / "real" / "s", "---\nname: s\ndescription: d\n---\n")
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "s").symlink_to(real)
    with pytest.raises(SkillError, match="symbolic link"):
        load_skill(tmp_path / "linked" / "s", "workspace")


def test_front_matter_reads_quotes_blocks_and_comments():
    fields = front_matter('\ufeff---\n# a comment\nname: "q\\"x"\nsingle: \'it\'\'s\'\nlit: |\n  a\n  b\n---\nbody')
    assert fields == {"name": 'q"x', "single": "it's", "lit": "a\nb"}
