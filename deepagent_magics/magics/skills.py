"""``%deepagent_skills``: the skills the agent would be offered, and the folders skipped (one line each).

Skills are found in ``<workspace>/skills/`` and in the user-wide folder (``%deepagent_config
--skills-dir``, else ``DEEPAGENT_SKILLS_DIR``, else ``~/.deepagent/skills``): `core.workspace.skills`.

Finding and reading skills is core/workspace/skills.py; the agent's tools are tools/skills.py.
"""

from __future__ import annotations

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..core.workspace.skills import find_skills, roots
from .inputs.flags import parse_flags
from .inputs.folders import check_workspace
from .configured import AgentMagicsBase

WIDTH = 100


@magics_class
class SkillMagics(AgentMagicsBase):
    """List the skills."""

    @magic_arguments()
    @argument("--workspace", help="the workspace whose skills/ folder to read (default: the configured one)")
    @line_magic
    def deepagent_skills(self, line: str) -> None:
        """List the skills (name, where, description); a folder that is not a skill is one line, skipped."""
        args = parse_flags(self.deepagent_skills, line)
        core = self._core()
        workspace = check_workspace(args.workspace or core.workspace)
        skills, problems = find_skills(workspace, core.skills_dir)
        folders = " and ".join(str(root) for _, root in roots(workspace, core.skills_dir))
        if not skills:
            print(f"No skills in {folders}.")
        else:
            rows = [("name", "where", "description")] + [(s.name, s.where, s.description) for s in skills]
            widths = [max(len(row[i]) for row in rows) for i in range(2)]
            for name, where, description in rows:
                text = description if len(description) <= WIDTH else description[: WIDTH - 1] + "…"
                print(f"{name.ljust(widths[0])}  {where.ljust(widths[1])}  {text}")
        for problem in problems:
            print(f"skipped: {problem}")
