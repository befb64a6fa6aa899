"""The quality benchmark end to end, offline: each suite's loader, the data wired into the notebook
(variables and workspace files, as a user would have them), the suite's scoring and the report.

Each suite is a small synthetic copy in the suite's exact file layout and schema (`bench_data`), in a
temporary cache the loader reads as if it had come from the hub. A scripted model that answers right
scores 1, one that answers wrong 0, one whose provider fails is counted as a failure.
"""

from __future__ import annotations

import json
import re

import pytest

from deepagent_magics.testing import ScriptedLM
from deepagent_magics.tuning.bench import run_suite
from deepagent_magics.tuning.suites import SuiteUnavailable, get_suite

from tests.adversarial import bench_data

ROWS = "rows = payments.to_dict('records') if hasattr(payments, 'to_dict') else list(payments)\n"


def dabstep_policy(right: bool, seen: list):
    """Answers computed from the notebook variables; checks the workspace files through the file tools."""

    def policy(request):
        task = request.task
        seen.append(request.system + request.user)
        check = ("files = glob('*')\nassert 'payments.csv' in files and 'manual.md' in files, files\n"
                 "assert 'fraudulent dispute' in manual and 'fraudulent dispute' in read_file('manual.md')\n"
                 "assert fees[0]['card_scheme'] == 'NexPay' and merchant_data[0]['account_type'] == 'F'\n"
                 "write_file('payments.csv', 'overwritten by the agent')\n" + ROWS)
        if "How many transactions" in task:
            answer = "str(len(rows))" if right else "str(len(rows) + 1)"
            code = "payments.clear() if isinstance(payments, list) else None\n"  # vandalise this task's copy
            return ("Count.", check + f"result = {answer}\n" + code + "SUBMIT(result=result)")
        if "total eur_amount" in task:
            answer = "f\"{sum(float(r['eur_amount']) for r in rows):,.2f}\"" if right else "'3731.75'"
            return ("Sum.", check + f"SUBMIT(result={answer})")
        if "most transactions" in task:
            answer = ("max(set(r['merchant'] for r in rows), key=[r['merchant'] for r in rows].count).lower()"
                      if right else "'Belles_cookbook_store'")
            return ("Top.", check + f"SUBMIT(result={answer})")
        if right:
            return ("List.", check + "SUBMIT(result='; '.join(sorted({r['issuing_country'] for r in rows}, reverse=True)))")
        raise RuntimeError("provider down: 503 Service Unavailable")

    return policy


def cot_replies(prompt):
    if "next_tool_name" in prompt:
        return {"next_thought": "Finish.", "next_tool_name": "finish", "next_tool_args": "{}"}
    return {"reasoning": "Guess.", "result": "42"}


def test_dabstep_right_and_wrong_with_the_data_as_a_user_has_it(tmp_path):
    answers = bench_data.dabstep(tmp_path / "cache")
    cache_payments = (tmp_path / "cache/dabstep/data/context/payments.csv").read_text()
    seen: list[str] = []
    right = run_suite("dabstep", ScriptedLM(dabstep_policy(True, seen), replies=cot_replies), baselines=["cot"],
                      threads=3, cache_dir=tmp_path / "cache", out=tmp_path / "out")
    summary = right.summary()
    assert {key: summary["deep agent"][key] for key in ("accuracy", "failures", "tasks")} == {
        "accuracy": 1.0, "failures": 0, "tasks": 4}
    assert summary["cot"]["accuracy"] == 0.0 and summary["cot"]["tasks"] == 4
    assert all(row["tokens"] > 0 for row in right.rows)
    # The agent overwrote its copy of payments.csv and emptied its payments: the cache and the other tasks kept theirs.
    assert (tmp_path / "cache/dabstep/data/context/payments.csv").read_text() == cache_payments
    deep = {row["task_id"]: row for row in right.rows if row["system"] == "deep agent"}
    assert deep["2"]["answer"] == "3,730.75" and deep["4"]["answer"] == "NL; BE" and answers["4"] == "BE, NL"
    assert all("payments.csv" in prompt for prompt in seen)  # the task names the files

    wrong = run_suite("dabstep", ScriptedLM(dabstep_policy(False, []), replies=cot_replies), threads=2,
                      cache_dir=tmp_path / "cache", out=tmp_path / "out")
    summary = wrong.summary()["deep agent"]
    assert summary["accuracy"] == 0.0 and summary["failures"] == 1 and summary["scored"] == 4
    failure = next(row for row in wrong.rows if row["error"])
    assert failure["task_id"] == "4" and "provider down" in failure["error"]
    assert "provider down" in wrong.to_markdown() and "\n- deep agent, task 4:" in wrong.to_markdown()


def test_dabstep_withheld_answers_are_not_scored_and_the_answers_file_fits_the_leaderboard(tmp_path):
    bench_data.dabstep(tmp_path / "cache")
    report = run_suite("dabstep", ScriptedLM(dabstep_policy(True, [])), split="default", limit=2,
                       cache_dir=tmp_path / "cache", out=tmp_path / "out")
    assert report.summary()["deep agent"]["accuracy"] is None and report.summary()["deep agent"]["scored"] == 0
    assert "n/a (answers withheld)" in report.to_markdown()
    lines = (tmp_path / "out/dabstep-default.deep-agent.answers.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{"task_id": "1", "agent_answer": "3"},
                                                    {"task_id": "2", "agent_answer": "3,730.75"}]


def dabench_policy(right: bool):
    def policy(request):
        if "mean fare" in request.task:
            value = "sum(float(r['Fare']) for r in rows) / len(rows)" if right else "0"
            table = "test_ave"
            return ("Mean.", (f"rows = {table}.to_dict('records') if hasattr({table}, 'to_dict') else {table}\n"
                              f"assert 'test_ave.csv' in glob('*')\nm = {value}\nSUBMIT(result=f'@mean_fare[{{m:.2f}}]')"))
        table = "t_2014_q4"  # the file 2014_q4.csv, as a variable name
        parts = ("f'@mean_close_price[{sum(v)/len(v):.2f}] @max_close_price[{max(v):g}]'" if right
                 else "f'@mean_close_price[{sum(v)/len(v):.2f}] @max_close_price[8]'")
        return ("Stats.", (f"rows = {table}.to_dict('records') if hasattr({table}, 'to_dict') else {table}\n"
                           f"v = [float(r['Close Price']) for r in rows]\nSUBMIT(result={parts})"))

    return policy


def react_replies(prompt):
    """ReAct reads the task's file through read_file, then answers from what it read."""
    if "next_tool_name" in prompt:
        if "observation_0" not in prompt:
            name = re.search(r"in the file (\S+\.csv)", prompt).group(1)
            return {"next_thought": "Read it.", "next_tool_name": "read_file", "next_tool_args": {"path": name}}
        return {"next_thought": "Done.", "next_tool_name": "finish", "next_tool_args": {}}
    if "[[ ## trajectory ## ]]" in prompt:
        fares = [float(x) for x in re.findall(r"\d+\t(\d+\.\d+),\d+", prompt)]
        return {"reasoning": "Read.", "result": f"@mean_fare[{sum(fares) / len(fares):.2f}]" if fares else "none"}
    return {"reasoning": "Guess.", "result": "@mean_fare[10.00]"}


def test_dabench_right_wrong_and_react_reading_the_workspace_file(tmp_path):
    bench_data.dabench(tmp_path / "cache")
    right = run_suite("dabench", ScriptedLM(dabench_policy(True), replies=react_replies), baselines="react,cot",
                      threads=2, cache_dir=tmp_path / "cache", out=tmp_path / "out")
    summary = right.summary()
    assert list(summary) == ["react", "cot", "deep agent"]
    assert summary["deep agent"]["accuracy"] == 1.0 and summary["deep agent"]["failures"] == 0
    react = {row["task_id"]: row for row in right.rows if row["system"] == "react"}
    assert react["0"]["score"] == 1.0 and react["0"]["answer"] == "@mean_fare[20.00]" and react["0"]["steps"] == 2
    assert summary["cot"]["accuracy"] == 0.0
    wrong = run_suite("dabench", ScriptedLM(dabench_policy(False)), cache_dir=tmp_path / "cache")
    assert wrong.summary()["deep agent"]["accuracy"] == 0.0 and wrong.files == []  # no --out: nothing written


def oolong_policy(right: bool, prompts: list):
    def policy(request):
        prompts.append(request.system + request.user + "".join(text for _, text in request.messages))
        # The RLM way: split the context, have the sub-LM label each chunk (llm_query_batched), count in code.
        count = ("import json\nfrom collections import Counter\n"
                 "assert 'context.txt' in glob('*')\n"
                 "lines = context.splitlines()[1:]\n"
                 "chunks = ['\\n'.join(lines[i:i + 500]) for i in range(0, len(lines), 500)]\n"
                 "replies = llm_query_batched(['Label each instance, as a JSON list:\\n' + c for c in chunks])\n"
                 "labels = Counter(label for reply in replies for label in json.loads(reply))\n")
        if "most common" in request.task:
            return ("Count.", count + ("SUBMIT(result='Label: ' + labels.most_common(1)[0][0])" if right
                                       else "SUBMIT(result='Label: location')"))
        return ("Count.", count + ("SUBMIT(result=f\"Answer: {labels['location']}\")" if right
                                   else "SUBMIT(result=f\"Answer: {labels['location'] + 2}\")"))

    return policy


def sub_lm(prompt):
    """The sub-LM behind llm_query: labels the instances it is shown."""
    return json.dumps([bench_data.label_of(int(n)) for n in re.findall(r"Instance: question (\d+)", prompt)])


def test_oolong_context_is_a_variable_far_larger_than_the_prompt(tmp_path):
    answers = bench_data.oolong(tmp_path / "cache")
    prompts: list[str] = []
    inline: list[str] = []

    def replies(prompt):
        if "Label each instance" in prompt:
            return sub_lm(prompt)
        inline.append(prompt)
        return {"reasoning": "Skim.", "result": "Label: human being" if "most common" in prompt else "Answer: none"}

    right = run_suite("oolong", ScriptedLM(oolong_policy(True, prompts), replies=replies), baselines="cot",
                      cache_dir=tmp_path / "cache", out=tmp_path / "out")
    deep = {row["task_id"]: row for row in right.rows if row["system"] == "deep agent"}
    assert deep["1"]["answer"] == answers["1"] and deep["2"]["answer"] == answers["2"]
    assert right.summary()["deep agent"]["accuracy"] == 1.0
    context = json.loads((tmp_path / "cache/oolong/oolong-synth/validation.jsonl").read_text().splitlines()[0])[
        "context_window_text"]
    assert prompts and all(len(prompt) < len(context) / 3 and "question 3999" not in prompt for prompt in prompts)
    assert inline and all("question 3999" in prompt for prompt in inline)  # the tool-less baseline reads it inline
    assert right.summary()["cot"]["accuracy"] == 0.0

    assert right.summary()["deep agent"]["tokens_per_task"] > 0
    wrong = run_suite("oolong", ScriptedLM(oolong_policy(False, []), replies=sub_lm), cache_dir=tmp_path / "cache")
    scores = {row["task_id"]: row["score"] for row in wrong.rows}
    assert scores == {"1": 0.0, "2": pytest.approx(0.75 ** 2)}  # partial credit on a count, as OOLONG gives
    assert wrong.summary()["deep agent"]["accuracy"] == pytest.approx(0.75 ** 2 / 2)


def test_the_report_files_hold_the_table(tmp_path):
    bench_data.dabench(tmp_path / "cache")
    report = run_suite("dabench", ScriptedLM(dabench_policy(True), replies=cot_replies), baselines="cot", limit=1,
                       cache_dir=tmp_path / "cache", out=tmp_path / "out")
    names = sorted(path.name for path in (tmp_path / "out").iterdir())
    assert names == ["dabench-dev.cot.answers.jsonl", "dabench-dev.cot.steps.jsonl", "dabench-dev.deep-agent.answers.jsonl",
                     "dabench-dev.deep-agent.steps.jsonl", "dabench-dev.done.jsonl", "dabench-dev.json", "dabench-dev.md"]
    assert len((tmp_path / "out/dabench-dev.done.jsonl").read_text().splitlines()) == 2  # each row as it was done
    data = json.loads((tmp_path / "out/dabench-dev.json").read_text())
    assert data["suite"] == "dabench" and data["split"] == "dev" and data["lm"].startswith("scripted")
    assert set(data["summary"]["deep agent"]) == {
        "tasks", "scored", "accuracy", "solved", "steps_per_task", "tokens_per_task", "prompt_tokens_per_task",
        "completion_tokens_per_task", "tokens_per_solved", "prompt_tokens_per_solved", "completion_tokens_per_solved",
        "cost", "cost_per_task", "seconds_per_task", "failures", "endings", "right_endings"}
    assert data["machine"]["cpus"] and data["machine"]["wall_seconds"] >= 0
    assert len(data["rows"]) == 2 and {row["task_id"] for row in data["rows"]} == {"0"}
    markdown = (tmp_path / "out/dabench-dev.md").read_text()
    assert markdown == report.to_markdown()
    assert "| deep agent | 100.0% (1 scored) |" in markdown and "| cot | 0.0% (1 scored) |" in markdown


def test_cost_and_time_are_summed_per_system():
    from deepagent_magics.tuning.bench_report import BenchReport

    rows = [{"system": "deep agent", "task_id": str(i), "score": float(i % 2), "scored": True, "answer": "x",
             "tokens": 100 * i, "cost": 0.25, "seconds": 2.0, "steps": 1,
             "error": "RateLimitError: 429" if i == 3 else None} for i in range(4)]
    report = BenchReport("dabench", "InfiAgent-DABench", "dev", "openai/gpt-4o-mini", "accuracy", ["deep agent"], rows)
    each = report.summary()["deep agent"]
    assert {key: each[key] for key in ("tasks", "scored", "accuracy", "steps_per_task", "tokens_per_task", "cost",
                                       "cost_per_task", "seconds_per_task", "failures")} == {
        "tasks": 4, "scored": 4, "accuracy": 0.5, "steps_per_task": 1.0, "tokens_per_task": 150.0, "cost": 1.0,
        "cost_per_task": 0.25, "seconds_per_task": 2.0, "failures": 1}
    assert each["solved"] == 2 and each["tokens_per_solved"] == 300.0  # 600 tokens over the two right answers
    assert "| deep agent | 50.0% (4 scored) | 1.0 | 150 | $1.0000 | $0.2500 | 2.00 | 1/4 |" in report.to_markdown()


def test_the_cache_dir_comes_from_the_environment(tmp_path, monkeypatch):
    bench_data.dabench(tmp_path / "env-cache")
    monkeypatch.setenv("DEEPAGENT_BENCH_CACHE", str(tmp_path / "env-cache"))
    assert [task.id for task in get_suite("dabench").load(limit=1)] == ["0"]


@pytest.mark.parametrize("damage, expected", [
    (lambda root: (root / "da-dev-questions.jsonl").write_text('{"id": 0, "question": \n'), "line 1 is not JSON"),
    (lambda root: (root / "da-dev-tables/test_ave.csv").unlink(), "names test_ave.csv, which is not in"),
    (lambda root: (root / "da-dev-labels.jsonl").write_text('{"id": 0}\n'), "KeyError"),
])
def test_damaged_suite_files_are_one_line(tmp_path, damage, expected):
    bench_data.dabench(tmp_path)
    damage(tmp_path / "dabench")
    with pytest.raises(SuiteUnavailable) as caught:
        get_suite("dabench").load(tmp_path)
    assert expected in str(caught.value) and "\n" not in str(caught.value)


class PricedLM(ScriptedLM):
    """A scripted model whose provider prices every call at $0.001 (as LiteLLM reports a response's cost)."""

    def update_history(self, entry):
        entry["cost"] = 0.001
        super().update_history(entry)


def test_every_system_reports_the_cost_and_time_of_its_own_calls(tmp_path):
    bench_data.dabench(tmp_path / "cache")
    report = run_suite("dabench", PricedLM(dabench_policy(True), replies=react_replies), baselines="cot,react",
                       threads=3, cache_dir=tmp_path / "cache")
    cost = {(row["system"], row["task_id"]): row["cost"] for row in report.rows}
    assert cost[("cot", "0")] == pytest.approx(0.001)  # one call
    assert cost[("react", "0")] == pytest.approx(0.003)  # read_file, finish, extract
    assert cost[("deep agent", "0")] == pytest.approx(0.001)  # one step that submits
    assert all(row["seconds"] > 0 for row in report.rows)
    assert report.summary()["react"]["cost"] == pytest.approx(sum(cost[("react", t)] for t in ("0", "9")))


def test_where_selects_tasks_by_their_details(tmp_path):
    bench_data.dabstep(tmp_path)
    suite = get_suite("dabstep")
    assert [task.id for task in suite.load(tmp_path, where={"level": "hard"})] == ["4"]
    assert [task.id for task in suite.load(tmp_path, where={"level": "easy"}, limit=2)] == ["1", "2"]
    with pytest.raises(SuiteUnavailable, match="no dabstep task in the dev split has level=medium"):
        suite.load(tmp_path, where={"level": "medium"})
    with pytest.raises(SuiteUnavailable, match="dabstep tasks have no 'dataset' to select on; they have: level"):
        suite.load(tmp_path, where={"dataset": "trec_coarse"})
    report = run_suite("dabstep", ScriptedLM(dabstep_policy(True, [])), cache_dir=tmp_path, where={"level": "hard"})
    assert [(row["task_id"], row["level"], row["score"]) for row in report.rows] == [("4", "hard", 1.0)]
