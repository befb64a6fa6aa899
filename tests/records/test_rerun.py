"""records/rerun.py: what an exported run reads that its cells do not make, and the setup lines that give it or
stop in one line naming it (never running the code to find out)."""

from __future__ import annotations

import json

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.records.rerun import MISSING, Plan, earlier_turns, needed_names, plan
from deepagent_magics.records.store import list_records


def test_needed_names_are_those_read_and_bound_nowhere():
    cells = ["total = sum(sales)\nprint(len(x))", "def f(a):\n    return a + total\nimport numpy as np\nnp.zeros(k)"]
    assert needed_names(cells) == {"sales", "x", "k"}


def test_every_way_of_binding_counts():
    code = ("for i in range(3): pass\nwith open('f') as fh: pass\ntry:\n    pass\nexcept Exception as e:\n    e\n"
            "match z:\n    case {'a': 1, **rest}: rest\n    case [first, *others]: others\nclass C: pass\nC\n"
            "[y for y in fh]\nglobal g\ng = 1\ndisplay(get_ipython())")
    assert needed_names([code]) == {"z"}


def test_a_star_import_means_the_names_cannot_be_known():
    assert needed_names(["from os import *\npath"]) is None
    assert needed_names(["this is (not python"]) == set()


def test_imports_come_back_and_anything_else_is_named_with_where_it_came_from():
    record = {"id": "r1", "config": {"imports": ["pd=pandas", "np=numpy", "load=sklearn.datasets:load_iris",
                                                 "class=bad", "odd=a:b.c"],
                                     "loaded": ["sales=sales.csv"]}}
    made = plan(record, None, ["df = pd.DataFrame(sales)\nx = load()\nprint(user_thing)\nodd"])
    assert made.imports == ["from sklearn.datasets import load_iris as load", "import pandas as pd"]
    assert made.needed == {"odd": "odd (a variable of the notebook run r1 ran in)",
                           "sales": "sales (deepagent run --load sales=sales.csv made it)",
                           "user_thing": "user_thing (a variable of the notebook run r1 ran in)"}
    assert made.resume == ""


def test_a_name_a_checkpoint_restored_is_loaded_again_by_resuming_it():
    record = {"id": "r1", "config": {"resumed": "mine", "resumed_names": ["model"], "resumed_from": "/ws {x}"}}
    made = plan(record, None, ["model.predict(1)"])
    assert made.resume == "%deepagent_resume mine --workspace '/ws {{x}}'"  # braces: not a {name} to interpolate
    assert made.needed == {"model": "model (checkpoint 'mine' holds it: %deepagent_resume above did not restore it)"}
    assert plan(record, None, ["print(1)"]).resume == ""  # not read: not resumed


def test_the_setup_lines_import_resume_and_stop_with_one_line_naming_what_is_missing():
    lines = Plan(imports=["import numpy as np"], resume="%deepagent_resume mine",
                 needed={"sales": "sales (a variable)"}).setup_lines()
    assert lines.splitlines()[:3] == ["import numpy as np", "%load_ext deepagent_magics", "%deepagent_resume mine"]
    assert f"_needed = {json.dumps({'sales': 'sales (a variable)'}, indent=4)}" in lines and MISSING.strip() in lines
    assert Plan().setup_lines() == ""


def test_earlier_turns_of_the_conversation_come_from_the_hosts_records(tmp_path):
    first = DeepAgent(lm=ScriptedLM([("a", "data = [1, 2]\nSUBMIT(result='loaded')")]), workspace=tmp_path).run(
        "Load", namespace={})
    second = DeepAgent(lm=ScriptedLM([("b", "SUBMIT(result=str(sum(data)))")]), workspace=tmp_path).run(
        "Sum", namespace={"data": [1, 2]}, thread=first.id)
    records = {record["id"]: record for record in list_records([tmp_path])}
    assert [turn["id"] for turn in earlier_turns(records[second.id], tmp_path)] == [first.id]
    made = plan(records[second.id], tmp_path, ["print(sum(data))"])
    assert made.needed == {"data": f"data (made by run {first.id}, an earlier turn of this conversation: run that "
                                   "run's export first)"}
