"""core/loop/capability.py: a capability is one object (its tools, their lines in the prompt, its hooks,
settings and events), the standard ones are built with it, and a user adds one with ``extensions=[...]``."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from deepagent_magics import Capability, DeepAgent, Extensions, ToolLine, standard_extensions
from deepagent_magics.core.loop.extensions import NoToolServers
from deepagent_magics.core.model.compaction import CompactedHistory
from deepagent_magics.core.run.event_kinds import KINDS
from deepagent_magics.settings import SETTINGS
from deepagent_magics.standard import STANDARD
from deepagent_magics.testing import ScriptedLM


def shout(text: str) -> str:
    """Say it loud."""
    return text.upper()


def whisper(text: str) -> str:
    """Say it softly."""
    return text.lower()


def tools_listed(system: str) -> list[str]:
    block = system.split("## Tools", 1)[1].split("\n\n", 1)[0]
    return [line.split("`")[1].split("(")[0] for line in block.splitlines() if line.startswith("- `")]


def first_request(tmp_path, **kwargs) -> dict:
    lm = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
    agent = DeepAgent(lm=lm, workspace=tmp_path, **kwargs)
    agent.record_runs = False
    run = agent.run("go", namespace={})
    assert run.status == "finished", run.error
    return lm.requests[0]


def first_system(tmp_path, **kwargs) -> str:
    return first_request(tmp_path, **kwargs)["system"]


def test_a_users_capability_adds_its_tools_where_its_lines_say(tmp_path):
    loud = Capability("loud", tools=[shout, whisper],
                      lines={"shout": ToolLine(order=5), "whisper": ToolLine(order=5, beside="shout")})
    system = first_system(tmp_path, extensions=[loud])
    listed = tools_listed(system)
    assert listed[0] == "shout" and "whisper" not in listed  # first (5 < write_todos' 10), whisper on its line
    assert "- `shout(text)`: Say it loud; `whisper(text)`: Say it softly." in system
    assert "write_todos" in listed and "delegate" in listed  # a list adds to the standard capabilities


def test_a_tool_without_a_line_goes_in_the_middle_in_the_order_offered(tmp_path):
    listed = tools_listed(first_system(tmp_path, extensions=[Capability("mine", tools=[whisper, shout])]))
    assert listed.index("review") < listed.index("whisper") < listed.index("shout") < listed.index("remember")


def test_an_extensions_object_is_exactly_its_capabilities(tmp_path):
    from deepagent_magics.interpreters import ROOT_INTERPRETER

    system = first_system(tmp_path, extensions=Extensions(ROOT_INTERPRETER, Capability("loud", tools=[shout])))
    assert tools_listed(system) == ["llm_query", "shout", "SUBMIT"]
    assert "## Sub-agents" not in system and "## Skills" not in system


def test_a_capability_s_hooks_and_prompt_text_reach_the_run(tmp_path):
    seen = []

    class Audited(Capability):
        name = "audited"

        def on_run(self, agent, run, lms):
            seen.append(("run", run.task, lms["lm"] is not None))

        def context(self, agent, task, namespace, root):
            return "AUDIT-CONTEXT: every step is audited."

        def instructions(self, agent, root):
            return "## Audit\nSay what you changed."

    lm = ScriptedLM([("Done.", "SUBMIT(result='ok')")])
    DeepAgent(lm=lm, workspace=tmp_path, extensions=[Audited()]).run("the task", namespace={})
    assert seen == [("run", "the task", True)]
    request = lm.requests[0]
    # what the run has is said in each request, after its inputs: the system message is the same for every run
    assert "## Audit\nSay what you changed." in request["user"] and "## Audit" not in request["system"]
    assert "AUDIT-CONTEXT: every step is audited." in request["user"]


def test_a_broken_capability_hook_for_prompt_text_adds_nothing_and_breaks_nothing(tmp_path):
    def broken(agent, root):
        raise RuntimeError("boom")

    request = first_request(tmp_path, extensions=[Capability("broken", instructions=broken),
                                                  Capability("kept", instructions=lambda agent, root: "## Kept\nyes")])
    assert "## Kept\nyes" in request["user"] and "## Kept" not in request["system"]  # what the run has: per request


def test_not_a_capability_is_refused_in_one_line():
    with pytest.raises(TypeError, match="is not a Capability"):
        DeepAgent(lm="openai/x", extensions=[shout])
    with pytest.raises(TypeError, match="list of Capability objects or an Extensions"):
        DeepAgent(lm="openai/x", extensions="todos")


def test_tool_servers_without_a_capability_for_them_say_so(tmp_path):
    from deepagent_magics.interpreters import ROOT_INTERPRETER

    with pytest.raises(NoToolServers, match="no tool servers"):
        DeepAgent(lm="openai/x", workspace=tmp_path, extensions=Extensions(ROOT_INTERPRETER),
                  mcp_servers=["python -m nothing"])


# ------------------------------------------------------------ the standard capabilities
def test_every_standard_tool_has_a_line_from_its_own_capability():
    for capability in STANDARD:
        names = {tool.__name__ for tool in capability.offered()}
        assert names == set(capability.lines), capability.name  # each of its tools placed, nothing else


def test_the_standard_capabilities_settings_and_events_are_the_tables_and_event_kinds():
    owners = {setting.owner for setting in SETTINGS.values()} - {""}
    assert owners <= {capability.name for capability in STANDARD}  # every owner named in the table exists
    delegation = next(c for c in STANDARD if c.name == "delegation")
    assert {"max_subagents", "subagent_timeout", "max_parallel"} <= set(delegation.settings)
    for capability in STANDARD:
        assert set(capability.settings) <= set(SETTINGS), capability.name
        assert set(capability.events) <= KINDS, capability.name
    assert Capability("mine", settings=("my_limit",)).settings == ("my_limit",)  # a user's names its own


def test_a_compacted_history_says_where_the_steps_are_only_when_a_capability_offers_it():
    without = CompactedHistory(entries=[], summary="S", summarized=4).format()
    assert without.startswith("Steps 1-4, compacted:\nS")
    note = standard_extensions().note("compacted")
    assert note == "history() returns every step in full"
    assert CompactedHistory(entries=[], summary="S", summarized=4, where=note).format().startswith(
        "Steps 1-4, compacted; history() returns every step in full:\nS")


# ------------------------------------------------------------ the magics
def test_a_notebook_capability_is_given_to_every_agent_with_the_flag(ip):
    ip.user_ns["lm"] = ScriptedLM([("Shout.", "SUBMIT(result=shout('hi'))")])
    ip.user_ns["loud"] = Capability("loud", tools=[shout])
    ip.run_line_magic("deepagent_config", "--extensions loud")
    result = ip.run_cell("%%deepagent --lm lm --out said\nSay hi loudly")
    assert result.error_in_exec is None and ip.user_ns["said"] == "HI"
    assert "shout" in ip.user_ns["lm"].requests[0]["system"]


def test_a_flag_naming_no_capability_is_one_usage_error_line(ip):
    ip.user_ns["loud"] = shout
    for line, said in (("--extensions nothing", "there is no notebook variable"),
                       ("--extensions loud", "is a function, not a deepagent_magics.Capability")):
        with pytest.raises(UsageError, match=said) as caught:
            ip.run_line_magic("deepagent_config", line)
        assert type(caught.value) is UsageError and "\n" not in str(caught.value)


# ------------------------------------------------------------ a layer of the user's around every model call
def house_style(seen: list) -> Capability:
    """docs/capabilities.md's example: every model call counted, every query and step given a house rule."""
    from deepagent_magics import Layer

    def wrap(call, next_call):
        def run(**inputs):
            seen.append(call.kind)
            if call.kind == "query":
                inputs = {**inputs, "prompt": "HOUSE RULE: one line. " + inputs["prompt"]}
            elif call.kind == "step":
                inputs = {**inputs, "variables_info": inputs["variables_info"] + "\n\nHOUSE RULE: be brief."}
            return next_call(**inputs)
        return run

    return Capability("house style", layers=[Layer("house style", "every call counted; a rule added to each",
                                                   lambda call: True, wrap)])


def test_a_users_layer_sees_and_changes_every_step_and_every_query(tmp_path):
    seen: list = []
    lm = ScriptedLM([("Ask twice.", "a = llm_query('first?')\nb = llm_query_batched(['second?', 'third?'])"),
                     ("Done.", "SUBMIT(result=a + '|' + '|'.join(b))")],
                    replies=lambda prompt: "ANSWER TO " + prompt)
    run = DeepAgent(lm=lm, workspace=tmp_path, extensions=[house_style(seen)]).run("ask", namespace={})
    assert run.status == "finished", run.error
    assert sorted(seen) == ["query", "query", "query", "step", "step"]  # both steps, each prompt of the batch
    assert run.result.count("ANSWER TO HOUSE RULE: one line.") == 3  # each query changed before the model saw it
    steps = [request for request in lm.requests if "[[ ## variables_info ## ]]" in request["user"]]
    assert len(steps) == 2 and all("HOUSE RULE: be brief." in request["user"] for request in steps)


def test_without_the_layer_nothing_is_counted_or_changed(tmp_path):
    lm = ScriptedLM([("Ask.", "a = llm_query('first?')"), ("Done.", "SUBMIT(result=a)")],
                    replies=lambda prompt: "ANSWER TO " + prompt)
    run = DeepAgent(lm=lm, workspace=tmp_path).run("ask", namespace={})
    assert run.result == "ANSWER TO first?" and "HOUSE RULE" not in str(lm.requests)


def test_a_users_layer_is_in_the_pipeline_a_sub_agent_s_calls_go_through(tmp_path):
    """The layer belongs to the agent's capabilities, which its sub-agents share: their calls are seen too
    (no kernel needed to check that a child is given them)."""
    from deepagent_magics.tools.delegation.subagent import SubAgent

    seen: list = []
    parent = DeepAgent(lm=ScriptedLM([]), workspace=tmp_path, extensions=[house_style(seen)])
    child = SubAgent(profile="default", depth=1, max_depth=2, extensions=parent.extensions)
    assert [layer.name for layer in child.extensions.layers()] == ["house style"]
