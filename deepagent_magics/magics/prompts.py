"""Prompts in place: read and hand-tune the agent's instructions from the notebook.

    %deepagent_prompt                      # the instructions and tools as the LM sees them
    %deepagent_prompt --last               # the last request of the last run, as it was sent
    %%deepagent_prompt                     # the cell body becomes the profile's instructions
    %deepagent_prompt --diff | --reset | --save tuned.json | --load tuned.json

The agents are built by ``%%deepagent``'s own `build_agent` (same settings, same
tools); `tuning.programs` holds what hand-tuning and optimisation changed (imported, with the agent,
when the magic is first used).
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..core.run.secrets import scrub
from ..core.loop.profiles import load_profile, packaged_text
from . import agents
from .inputs.flags import one_line, parse_flags
from .inputs.folders import expand_path
from .configured import AgentMagicsBase

RLM_TOOLS = ("llm_query", "llm_query_batched", "SUBMIT")
TYPES_KEY = "deepagent_subagent_types"


class _Dry:
    """Where a dry run of `agents.load_types` registers: nowhere that matters."""


@magics_class
class PromptMagics(AgentMagicsBase):
    """``%deepagent_prompt``: show, edit, diff, reset, save and load the agent's program."""

    @magic_arguments()
    @argument("--profile", help="the profile to show or tune (default: the configured one)")
    @argument("--reset", action="store_true", help="restore the packaged instructions (undoes edits and optimisation)")
    @argument("--diff", action="store_true", help="show the change against the packaged instructions")
    @argument("--save", metavar="PATH", help="store the active program (instructions and demos) as DSPy JSON")
    @argument("--load", metavar="PATH", help="make a program saved with --save the active one")
    @argument("--edit", action="store_true", help="put the profile's text in a new %%%%deepagent_prompt cell")
    @argument("--last", action="store_true", help="the last request of the last run, as the model read it")
    @line_cell_magic
    def deepagent_prompt(self, line: str, cell: str | None = None) -> None:
        """Show the agent's prompt; as a cell magic, replace its instructions with the cell body."""
        from ..tuning import programs

        args = parse_flags(self.deepagent_prompt, line)
        profile = self._profile(args.profile)
        if cell is not None:
            if not cell.strip():
                raise UsageError("the cell is empty: write the new instructions in the cell body (or use --reset)")
            if agents.is_type(self._core(), profile):  # one of the user's sub-agent types
                agents.set_type_instructions(self._core(), profile, cell.strip() + "\n")
            else:
                programs.set_instructions(profile, cell.strip() + "\n")
            agent = self._agent(profile, need_lm=False)
            print(f"deepagent_prompt: profile {profile!r} now uses this cell's instructions "
                  f"(prompt hash {agent.prompt_hash}); --diff shows the change, --reset undoes it.")
            return
        if args.reset:
            if agents.is_type(self._core(), profile):
                agents.reset_type(self._core(), profile)
                programs.drop(profile)
                print(f"deepagent_prompt: sub-agent type {profile!r} is back to the instructions it was defined with")
            else:
                programs.reset(profile)
                print(f"deepagent_prompt: profile {profile!r} is back to prompts/{profile}.md")
        elif args.diff:
            print(self.diff(profile))
        elif args.save:
            self.save(profile, args.save)
        elif args.load:
            self.load(profile, args.load)
        elif args.last:
            print(last_request(self._core().last_run))
        elif args.edit:
            self.shell.set_next_input(f"%%deepagent_prompt --profile {profile}\n{self._texts(profile)[1]}",
                                      replace=False)
        else:
            print(self.describe(profile))

    def describe(self, profile: str) -> str:
        agent = self._agent(profile, need_lm=False)
        full = agent.prompt_instructions
        own = agent.instructions
        if full.startswith(own):
            parts = [("Instructions (the profile's text; edit with %%deepagent_prompt)", own),
                     ("Added for the model: the REPL's rules and the tools offered (core/loop/instructions.py)",
                      full[len(own):].strip())]
        else:
            parts = [("Instructions (tuned; the whole action prompt)", full)]
        tools = [tool.__name__ for tool in agent.builtin_tools() + agent.extra_tools] + list(RLM_TOOLS)
        lines = [f"Profile {profile!r}: {self._source(profile)}; prompt hash {agent.prompt_hash}",
                 "Tools: " + ", ".join(tools)]
        extra = agent.extensions.extra_instructions(agent, agent.workspace)
        if extra:  # the sub-agent types and skills, found again at each run (agents.py, core/workspace/skills.py)
            parts.append(("Added at each run: the workspace, the sub-agent types and the skills", extra))
        for title, text in parts:
            lines += ["", f"=== {title} ===", text]
        demos = agent.rlm.generate_action.demos
        if demos:
            lines += ["", f"=== Demos: {len(demos)} example steps shown before each request ==="]
            for demo in demos:
                lines.append(f"- {' '.join(str(demo.get('reasoning', '')).split())[:100]}  |  "
                             f"{' '.join(str(demo.get('code', '')).split())[:100]}")
        return "\n".join(lines)

    def diff(self, profile: str) -> str:
        """Unified diffs: the profile's text against its file, and a tuned action prompt against the text's."""
        from ..tuning import programs

        out = []
        packaged, current = self._texts(profile)
        if current != packaged:
            source = f"{profile} (as defined)" if agents.is_type(self._core(), profile) else f"prompts/{profile}.md (packaged)"
            out += difflib.unified_diff(packaged.splitlines(), current.splitlines(),
                                        source, f"{profile} (edited in this kernel)", lineterm="")
        program = programs.tuned(profile)
        if program is not None:
            agent = self._agent(profile, need_lm=False)
            with programs.untuned():
                base = self._agent(profile, need_lm=False)
            if agent.prompt_instructions != base.prompt_instructions:
                out += difflib.unified_diff(base.prompt_instructions.splitlines(),
                                            agent.prompt_instructions.splitlines(),
                                            f"{profile} action prompt (from the profile text)",
                                            f"{profile} action prompt ({program.source})", lineterm="")
            demos = len(agent.rlm.generate_action.demos)
            if demos:
                out.append(f"+ {demos} demos ({program.source})")
        return "\n".join(out) if out else f"(no changes: profile {profile!r} is prompts/{profile}.md)"

    def save(self, profile: str, path: str) -> None:
        if not path.endswith(".json"):
            raise UsageError(f"--save {path}: give a .json path (the program is saved as DSPy's JSON)")
        path = expand_path(path)
        agent = self._agent(profile, need_lm=False)
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            agent.save(path)
            types = agents.saved_types(self._core())
            if types:  # the user's sub-agent types go with the program (DSPy's load ignores the key)
                data = json.loads(Path(path).read_text(encoding="utf-8"))
                data[TYPES_KEY] = types
                Path(path).write_text(json.dumps(data, indent=2), encoding="utf-8")
        except Exception as exc:  # DSPy wraps the OSError of a missing or unwritable folder
            raise UsageError(f"--save {path}: {one_line(getattr(exc, 'strerror', None) or exc)}") from None
        kept = f" with sub-agent types {', '.join(t['name'] for t in types)}" if types else ""
        print(f"deepagent_prompt: saved profile {profile!r} ({self._source(profile)}){kept} to {path}")

    def load(self, profile: str, path: str) -> None:
        from ..tuning import programs

        path = expand_path(path)
        if not Path(path).is_file():
            raise UsageError(f"--load {path}: no such file")
        types = self._saved_types(path)
        with programs.untuned():
            agent = self._agent(profile, need_lm=False)
        try:
            agent.load(path)
        except Exception as exc:
            reason = " ".join(str(exc).split())[:200]
            raise UsageError(f"--load {path}: not a saved deep agent program ({type(exc).__name__}: {reason})") from None
        programs.install(profile, agent, f"loaded from {path}")
        names = agents.load_types(self._core(), types, self.shell.user_ns, f"--load {path}") if types else []
        kept = f"; sub-agent types {', '.join(names)} are defined again" if names else ""
        print(f"deepagent_prompt: profile {profile!r} now runs the program in {path} "
              f"(prompt hash {agent.prompt_hash}){kept}")

    # ------------------------------------------------------------ the user's sub-agent types (agents.py)
    def _texts(self, profile: str) -> tuple[str, str]:
        """(packaged or as defined, as now): the profile's or the user's type's instructions."""
        if agents.is_type(self._core(), profile):
            return agents.type_texts(self._core(), profile)
        return packaged_text(profile), load_profile(profile).text

    def _source(self, profile: str) -> str:
        from ..tuning import programs

        if not agents.is_type(self._core(), profile):
            return programs.describe(profile)
        packaged, current = self._texts(profile)
        program = programs.tuned(profile)
        parts = ["your sub-agent type"] + (["text edited in this kernel"] if current != packaged else [])
        parts += [program.source + (f", {program.demos} demos" if program.demos else "")] if program else []
        return "; ".join(parts)

    def _saved_types(self, path: str) -> Any:
        """The sub-agent types saved with the program in ``path`` (checked before anything is loaded)."""
        try:
            types = json.loads(Path(path).read_text(encoding="utf-8")).get(TYPES_KEY)
        except (OSError, ValueError, AttributeError):
            return None  # DSPy's load says what is wrong with the file
        if types is not None:
            agents.load_types(_Dry(), types, self.shell.user_ns, f"--load {path}")  # all or nothing
        return types


def last_request(run: Any) -> str:
    """The last action request ``run``'s tree sent, as the model read it: its messages rendered again from
    what the step pipeline kept (`core.loop.pipeline.last_request`)."""
    if run is None:
        raise UsageError("no agent run in this kernel session yet: run a %%deepagent cell first")
    from ..core.loop import pipeline

    messages = pipeline.last_request(run)
    if not messages:
        raise UsageError(f"run {run.id} sent no request for a step")
    lines = [f"The last request of run {run.id} ({sum(len(m['content']) for m in messages):,} characters):"]
    for message in messages:
        lines += ["", f"=== {message['role']} ({len(message['content']):,} characters) ===", message["content"]]
    return scrub("\n".join(lines))
