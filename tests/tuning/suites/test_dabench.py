"""tuning/suites/dabench.py: InfiAgent-DABench's ``@name[value]`` answers, scored by its own rule (the suite run
end to end: tests/adversarial/test_bench_suites.py)."""

from __future__ import annotations

from deepagent_magics.tuning.suites.dabench import DABench, extract, is_equal, sub_answers
from tests.adversarial import bench_data


def test_answers_are_read_from_their_at_name_brackets():
    assert extract("The mean is @mean_fare[34.65] and @median[7] @median[8]") == {"mean_fare": "34.65", "median": "8"}
    assert extract(None) == {}
    assert is_equal("7.000", "7") and is_equal("x", "x") and not is_equal("7.1", "7") and not is_equal(None, "7")
    assert sub_answers("@a[1] @b[3]", {"a": "1.0", "b": "2"}) == {"a": True, "b": False}


def test_tasks_from_the_local_copy_are_scored_all_parts_right(tmp_path):
    right = bench_data.dabench(tmp_path)
    tasks = {task.id: task for task in DABench().load(tmp_path)}
    suite = DABench()
    assert suite.score(tasks["9"], right["9"]) == 1.0
    assert suite.score(tasks["9"], "@mean_close_price[7.00] @max_close_price[10]") == 0.0
    variables = tasks["0"].prepare(tmp_path / "ws")
    assert "test_ave" in variables and (tmp_path / "ws" / "test_ave.csv").is_file()
