"""Skills (issue 16, part 3): listed by name and description only, read on demand, confined, malformed ones skipped.

The promise: the agent's prompt names each skill with its one-line description (bounded: fifty
skills cost a bounded number of lines, never their documents); the agent reads a skill's
instructions and files when it needs them, from the workspace or from the user-wide folder, and
from a sub-agent's kernel too; ``read_skill`` cannot be talked out of the skill's folder (``..``,
absolute paths, ``~``, symlinks out, NUL bytes, another skill's name as a path); a folder that is
not a well-formed skill is reported in one line and skipped, and never hides the good ones.
Every folder is a temporary one (the user-wide folder comes from ``DEEPAGENT_SKILLS_DIR``).
"""

from __future__ import annotations

import os
import re

import pytest
from IPython.core.error import UsageError

from deepagent_magics import DeepAgent
from deepagent_magics.core.workspace.skills import MAX_DESCRIPTION, Skill, SkillError, find_skills, front_matter
from deepagent_magics.tools.skills import LISTED, LISTED_CHARS, listing
from deepagent_magics.testing import ScriptedLM

SECRET = "TOP-SECRET-OUTSIDE-THE-SKILL"
BODY = "STEP-BY-STEP-CLEANUP-RECIPE"


def make_skill(root, name, description="Clean messy CSV exports.", body=BODY, front=None):
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    text = front if front is not None else f"---\nname: {name}\ndescription: {description}\n---\n"
    (folder / "SKILL.md").write_text(text + f"# {name}\n{body}\n")
    return folder


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    workspace, user = tmp_path / "ws", tmp_path / "user-skills"
    workspace.mkdir()
    user.mkdir()
    monkeypatch.setenv("DEEPAGENT_SKILLS_DIR", str(user))
    (tmp_path / "secret.txt").write_text(SECRET)
    return workspace, user, tmp_path


def test_a_skill_is_listed_in_the_prompt_and_read_on_demand(dirs):
    workspace, user, _ = dirs
    folder = make_skill(workspace / "skills", "csv-cleanup", "Clean messy CSV exports: dates, separators.")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "clean.py").write_text("def clean(row):\n    return row.strip()  # HELPER-CODE\n")
    make_skill(user, "house-style", "Write reports in the house style.", body="USER-WIDE-STYLE-GUIDE")
    lm = ScriptedLM([
        ("See the skills.", "print(list_skills())"),
        ("Read the one I need.", "a = read_skill('csv-cleanup')\nb = read_skill('csv-cleanup', 'scripts/clean.py')\n"
                                 "c = read_skill('house-style')\nd = read_skill('csv-cleanup', 'scripts')\nprint(a, b, c, d)"),
        ("Done.", "SUBMIT(result='\\n'.join([a, b, c, d]))")])
    run = DeepAgent(lm=lm, workspace=workspace, max_depth=0).run("Clean the CSV", namespace={})
    assert run.status == "finished", run.error
    first = lm.requests[0]["system"] + "\n" + lm.requests[0]["user"]
    assert "- csv-cleanup: Clean messy CSV exports: dates, separators." in first
    assert "- house-style: Write reports in the house style." in first
    assert BODY not in first and "USER-WIDE-STYLE-GUIDE" not in first  # names and descriptions only
    assert BODY not in lm.requests[0]["user"]
    assert BODY in run.result and "HELPER-CODE" in run.result and "USER-WIDE-STYLE-GUIDE" in run.result
    assert "clean.py" in run.result  # a folder path lists its files
    assert "'where': 'user'" in run.steps[0].output and "'where': 'workspace'" in run.steps[0].output


def test_a_whole_description_reaches_the_model_up_to_the_specs_limit(dirs):
    workspace, _, _ = dirs
    description = ("Procedure for testing whether a numeric variable differs between two groups (assumption checks, "
                   "Welch t-test or Mann-Whitney U, effect size, reporting). " + "Detail. " * 100
                   + "Use when asked to compare two groups or samples.")
    assert len(description) <= MAX_DESCRIPTION
    make_skill(workspace / "skills", "compare-two-groups", description)
    lm = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
    DeepAgent(lm=lm, workspace=workspace, max_depth=0).run("Compare two groups", namespace={})
    assert f"- compare-two-groups: {description}\n" in lm.requests[0]["user"] + "\n"  # whole, "Use when..." kept


def test_fifty_skills_cost_a_bounded_listing_ranked_by_the_task_never_a_cut_sentence(dirs):
    workspace, _, _ = dirs
    for n in range(50):
        make_skill(workspace / "skills", f"skill-{n:02d}", f"Does thing {n}. " + "x" * 900 + " Use when it fits.",
                   body="DOC-" * 500)
    make_skill(workspace / "skills", "zz-invoices", "Reconcile supplier invoices against the ledger. " + "y" * 900
               + " Use when asked about invoices.")
    lm = ScriptedLM([("Count.", "n = len(list_skills())\nprint(n)"), ("Done.", "SUBMIT(result=str(n))")])
    run = DeepAgent(lm=lm, workspace=workspace, max_depth=0).run("Reconcile the invoices of March", namespace={})
    assert run.result == "51"
    first = lm.requests[0]["system"] + "\n" + lm.requests[0]["user"]
    described = [line for line in first.splitlines() if re.match(r"- [a-z0-9-]+: ", line)]
    assert described[0].startswith("- zz-invoices: Reconcile") and described[0].endswith("Use when asked about invoices.")
    assert all(line.endswith("Use when it fits.") for line in described[1:])  # whole, or not described at all
    assert sum(map(len, described)) <= LISTED_CHARS and "…" not in first
    also = next(line for line in first.splitlines() if line.startswith("- also (`list_skills()` describes them): "))
    named = also.split(": ", 1)[1].split(", ")
    assert len(described) + len(named) == 51  # every skill at least named
    assert "DOC-DOC" not in first


def test_a_very_long_list_of_skills_says_how_many_more_there_are():
    from pathlib import Path as _Path

    skills = [Skill(f"s-{n:03d}", "Short.", _Path("."), "workspace") for n in range(LISTED + 7)]
    text = listing(skills, "anything")
    assert text.count("s-") == LISTED and f"- ... 7 more: `list_skills()` lists them all" in text


HOSTILE_PATHS = ["sibling/SKILL.md", "../secret.txt", "../../secret.txt", "/etc/passwd", "~/.bashrc", "scripts/../../secret.txt",
                 "link-out", "dir-out/secret.txt", "a\x00b", "../other/SKILL.md", "loop"]


def test_read_skill_cannot_leave_the_skill_folder(dirs):
    workspace, user, tmp = dirs
    folder = make_skill(user, "csv-cleanup")
    make_skill(user, "other", body=SECRET)
    (folder / "link-out").symlink_to(tmp / "secret.txt")
    (folder / "dir-out").symlink_to(tmp)
    (folder / "loop").symlink_to(folder / "loop")
    (folder / "sibling").symlink_to(user / "other")
    code = ("out = {}\nfor p in " + repr(HOSTILE_PATHS) + ":\n    out[p] = read_skill('csv-cleanup', p)\n"
            "out['name'] = read_skill('../secret.txt')\nout['abs'] = read_skill('/etc')\nprint(out)")
    lm = ScriptedLM([("Try to escape.", code), ("Done.", "SUBMIT(result=repr(out))")])
    run = DeepAgent(lm=lm, workspace=workspace, max_depth=0).run("escape", namespace={})
    assert run.status == "finished", run.error
    out = eval(run.result)  # noqa: S307 - our own repr
    assert len(out) == len(HOSTILE_PATHS) + 2
    for path, value in out.items():
        assert value.startswith("Error:"), (path, value)
        assert SECRET not in value and "root:" not in value
    assert "the skills are: csv-cleanup, other" in out["name"]


MALFORMED = {
    "no-skill-md": None,
    "no-front": "# Just a heading\n",
    "unclosed": "---\nname: unclosed\ndescription: never closed\n",
    "no-name": "---\ndescription: nameless\n---\n",
    "Bad_Name": "---\nname: Bad_Name\ndescription: capitals\n---\n",
    "mismatch": "---\nname: something-else\ndescription: wrong folder\n---\n",
    "no-description": "---\nname: no-description\n---\n",
    "twice": "---\nname: twice\nname: twice\ndescription: d\n---\n",
    "open-quote": "---\nname: open-quote\ndescription: \"never closed\n---\n",
    "garbage": "---\nname: garbage\nthis line is not yaml\ndescription: d\n---\n",
    "too-long": "---\nname: too-long\ndescription: " + "y" * 1100 + "\n---\n",
}


def test_malformed_skills_are_one_line_each_and_skipped(ip, dirs, capsys):
    workspace, user, tmp = dirs
    skills = workspace / "skills"
    make_skill(skills, "good-one", "The good one.")
    for name, front in MALFORMED.items():
        if front is None:
            (skills / name).mkdir(parents=True)
        else:
            make_skill(skills, name, front=front)
    make_skill(tmp / "elsewhere", "linked")
    (skills / "linked").symlink_to(tmp / "elsewhere" / "linked")
    (skills / "binary").mkdir()
    (skills / "binary" / "SKILL.md").write_bytes(b"---\nname: binary\ndescription: \xff\xfe\n---\n")
    (skills / "md-link").mkdir()
    (skills / "md-link" / "SKILL.md").symlink_to(tmp / "secret.txt")
    (skills / "stray-file.md").write_text("not a folder")
    found, problems = find_skills(workspace)
    assert [s.name for s in found] == ["good-one"]
    assert len(problems) == len(MALFORMED) + 3
    assert all("\n" not in p for p in problems)
    ip.run_line_magic("deepagent_config", f"--workspace {workspace}")
    capsys.readouterr()
    ip.run_line_magic("deepagent_skills", "")
    out = capsys.readouterr().out
    assert "good-one" in out and out.count("skipped: ") == len(MALFORMED) + 3
    for name in list(MALFORMED) + ["linked", "binary", "md-link"]:
        assert f"skill {name}:" in out, name
    assert SECRET not in out


def test_front_matter_reads_the_yaml_the_agent_skills_layout_uses():
    fields = front_matter('---\nname: "quoted-name"\ndescription: >\n  Folded over\n  two lines.\n'
                          "license: Apache-2.0\nmetadata:\n  author: someone\n  version: '1.0'\n"
                          "allowed-tools:\n  - read_file\n# a comment\n---\nbody\n")
    assert fields["name"] == "quoted-name" and fields["description"] == "Folded over two lines."
    assert "author: someone" in fields["metadata"]
    with pytest.raises(SkillError):
        front_matter("---\n  indented: first\n---\n")


def test_a_workspace_skill_wins_over_a_user_wide_one_and_the_setting_is_checked(ip, dirs, tmp_path, capsys):
    workspace, user, _ = dirs
    make_skill(workspace / "skills", "same", "From the workspace.")
    make_skill(user, "same", "From the user folder.")
    found, _ = find_skills(workspace)
    assert [(s.name, s.where, s.description) for s in found] == [("same", "workspace", "From the workspace.")]
    other = tmp_path / "configured"
    make_skill(other, "configured-skill", "Configured.")
    core = ip.magics_manager.registry["DeepAgentMagics"]
    ip.run_line_magic("deepagent_config", f"--skills-dir {other}")
    assert core.skills_dir == str(other)
    assert [s.name for s in find_skills(workspace, core.skills_dir)[0]] == ["configured-skill", "same"]
    ip.run_line_magic("deepagent_config", f"--workspace {workspace}")
    capsys.readouterr()
    ip.run_line_magic("deepagent_prompt", "")  # what the LM sees includes the skills found for a run
    shown = capsys.readouterr().out
    assert "Added at each run" in shown and "- configured-skill: Configured." in shown
    (tmp_path / "afile").write_text("x")
    with pytest.raises(UsageError):
        ip.run_line_magic("deepagent_config", f"--skills-dir {tmp_path / 'afile'}")
    assert core.skills_dir == str(other)
    ip.run_line_magic("deepagent_config", "--skills-dir off")
    assert core.skills_dir is None


@pytest.mark.kernel
def test_a_sub_agent_reads_a_user_wide_skill_from_its_own_kernel(dirs):
    from deepagent_magics.interpreters.pool import KernelPool

    workspace, user, _ = dirs
    make_skill(user, "house-style", "Write reports in the house style.", body="USER-WIDE-STYLE-GUIDE")
    lm = ScriptedLM(scripts={
        "SKILL-ROOT": [("Delegate.", "r = delegate('SKILL-CHILD: use the house style')"), ("Done.", "SUBMIT(result=r)")],
        "SKILL-CHILD": [("Read it.", "import os\ns = read_skill('house-style')\nprint(os.getpid(), s)"),
                        ("Done.", "SUBMIT(result=s)")]})
    with KernelPool(size=1) as pool:
        run = DeepAgent(lm=lm, workspace=workspace, pool=pool, timeout=60).run("SKILL-ROOT: go", namespace={})
    assert run.status == "finished", run.error
    assert "USER-WIDE-STYLE-GUIDE" in run.result
    child_prompt = [r["system"] + r["user"] for r in lm.requests if "SKILL-CHILD" in r["user"]][0]
    assert "- house-style: Write reports in the house style." in child_prompt
    assert os.path.isdir(user)
