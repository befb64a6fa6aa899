"""LangChain's deepagents as a baseline of the quality benchmark: the same files (its file tools on the task's
workspace) and the same variables (``run_python`` in a namespace that holds them), scored by the suite's rule;
when it cannot run (not installed, no LangChain model for the LM) that is one line before anything runs."""

from __future__ import annotations

import pytest

pytest.importorskip("deepagents", reason="needs the bench extra: pip install -e '.[bench]'")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402

from deepagent_magics.cli import main  # noqa: E402
from deepagent_magics.testing import ScriptedLM  # noqa: E402
from deepagent_magics.tuning import bench, bench_arguments, langchain_baseline  # noqa: E402
from tests.adversarial import bench_data  # noqa: E402

CODE = {
    "mean fare": "import os\nassert os.path.exists(os.path.join(workspace, 'test_ave.csv'))\n"
                 "rows = test_ave.to_dict('records') if hasattr(test_ave, 'to_dict') else test_ave\n"
                 "m = sum(float(r['Fare']) for r in rows) / len(rows)\nprint(f'@mean_fare[{m:.2f}]')",
    "Close Price": "rows = t_2014_q4.to_dict('records') if hasattr(t_2014_q4, 'to_dict') else t_2014_q4\n"
                   "v = [float(r['Close Price']) for r in rows]\nprint(f'@mean_close_price[{sum(v)/len(v):.2f}] "
                   "@max_close_price[{max(v) + 1:g}]')",  # wrong on purpose
}
USAGE = {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}


class DataChatModel(GenericFakeChatModel):
    """Calls run_python with the task's code, then answers with what it printed."""

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        last = messages[-1]
        if last.type == "tool":
            reply = AIMessage(content=str(last.content).strip(), usage_metadata=USAGE)
        else:
            task = next(str(message.content) for message in messages if message.type == "human")
            code = next(code for key, code in CODE.items() if key in task)
            reply = AIMessage(content="", usage_metadata=USAGE,
                              tool_calls=[{"name": "run_python", "args": {"code": code}, "id": "call_1"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def agent_policy(request):
    return ("Answer.", "SUBMIT(result='@mean_fare[20.00]')")


def test_deepagents_runs_beside_the_agent_on_the_same_data(tmp_path):
    bench_data.dabench(tmp_path / "cache")
    report = bench.run_suite("dabench", ScriptedLM(agent_policy), baselines="deepagents", threads=2,
                             cache_dir=tmp_path / "cache", langchain_model=DataChatModel(messages=iter(())))
    assert report.systems == ["deepagents", "deep agent"]
    rows = {row["task_id"]: row for row in report.rows if row["system"] == "deepagents"}
    assert rows["0"]["answer"] == "@mean_fare[20.00]" and rows["0"]["score"] == 1.0 and rows["0"]["error"] is None
    assert rows["9"]["answer"] == "@mean_close_price[7.00] @max_close_price[10]" and rows["9"]["score"] == 0.0
    assert rows["0"]["tokens"] == 240 and rows["0"]["steps"] == 1
    assert report.summary()["deepagents"]["accuracy"] == 0.5


def test_deepagents_without_a_langchain_model_for_the_lm_is_one_line(tmp_path):
    bench_data.dabench(tmp_path / "cache")
    with pytest.raises(bench.BenchError) as caught:
        bench.run_suite("dabench", ScriptedLM(agent_policy), baselines="deepagents", cache_dir=tmp_path / "cache")
    assert "cannot make a LangChain model for scripted/" in str(caught.value) and "\n" not in str(caught.value)


def test_deepagents_not_installed_is_one_line_before_anything_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench_arguments, "available", lambda: "ModuleNotFoundError: No module named 'deepagents'")
    bench_data.dabench(tmp_path / "cache")
    status = main(["bench", "dabench", "--lm", "openai/gpt-4o-mini", "--baselines", "cot,deepagents",
                   "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "pip install 'deepagent-magics[bench]'" in err
    assert not (tmp_path / "out").exists()


def test_model_ids_become_langchain_ids(monkeypatch):
    seen = []
    import langchain.chat_models

    monkeypatch.setattr(langchain.chat_models, "init_chat_model", lambda name: seen.append(name) or "model")
    assert langchain_baseline.chat_model_for("anthropic/claude-sonnet-4-5") == "model"
    assert seen == ["anthropic:claude-sonnet-4-5"]
