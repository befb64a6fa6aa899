"""Memory across sessions: remember/recall over SQLite FTS5, offered at the start of a run,
``%deepagent_memory``, parallel writers, and a locked or damaged store."""

from __future__ import annotations

import multiprocessing
import sqlite3
import sys
import time
import types

import pytest
from IPython.core.error import UsageError

from deepagent_magics import DeepAgent, ScriptedLM
from deepagent_magics.core.run.run import Run
from deepagent_magics.core.run.session import Session, activate, deactivate
from deepagent_magics.core.workspace.workspace import Workspace
from deepagent_magics.tools.memory import MemoryStore, MemoryStoreError, memory_path, offer_memories, recall, remember


@pytest.fixture
def session(tmp_path, monkeypatch):
    monkeypatch.delenv("DEEPAGENT_MEMORY", raising=False)
    run = Run("test")
    session = Session(run, Workspace(tmp_path))
    token = activate(session)
    yield session
    deactivate(token)


def test_remember_then_recall_returns_filterable_dicts_with_the_run(session, tmp_path):
    events = []
    session.run.subscribe(events.append)
    assert "memory #1" in remember("Sales amounts are in cents, divide by 100", tags=["sales", "units"])
    remember("The user prefers bar charts over pie charts", tags="preference")
    found = recall("sales cents")
    assert found[0]["text"].startswith("Sales amounts are in cents")
    assert set(found[0]) == {"id", "text", "tags", "when", "run", "author"} and found[0]["author"] == "root"
    assert found[0]["tags"] == ["sales", "units"] and found[0]["run"] == session.run.id
    assert [m for m in recall("charts") if "preference" in m["tags"]]
    assert (tmp_path / ".deepagent" / "memory.db").exists()
    assert [e.data["name"] for e in events if e.kind == "tool_call"] == ["remember", "remember", "recall", "recall"]


def test_hostile_queries_and_texts_are_plain_words_never_fts_syntax(session):
    remember('He said "DROP TABLE memories;" -- NEAR(x y) * AND OR NOT')
    for query in ['"', "NEAR(", "*", "AND OR NOT", "memories; DROP TABLE memories", "col:val", "(((", "-", "'"]:
        assert isinstance(recall(query), list)  # never an FTS5 syntax error
    assert recall("DROP")[0]["text"].startswith("He said")
    assert recall("")  # no words: the newest
    assert len(recall("x", k=0)) == 0


def test_bad_tool_arguments_come_back_as_error_text(session):
    assert remember("   ").startswith("Error:")
    assert remember("x" * 10_000).startswith("Error:")
    assert remember("ok", tags=42).startswith("Error:")
    assert recall("anything") == []  # nothing stored yet is not an error


def test_memories_matching_the_task_are_offered_bounded_in_the_context(tmp_path, monkeypatch):
    monkeypatch.delenv("DEEPAGENT_MEMORY", raising=False)
    store = MemoryStore(memory_path(tmp_path))
    store.add("Sales amounts are in cents, divide by 100", ["sales"])
    store.add("Unrelated: the cat is called Tom")
    for i in range(20):
        store.add(f"sales fact number {i} " + "padding " * 200)
    seen = {}

    def policy(request):
        seen["user"] = request.user
        return ("done", "SUBMIT(result='ok')")

    run = DeepAgent(lm=ScriptedLM(policy), workspace=tmp_path, max_depth=0).run("total the sales by region")
    assert run.status == "finished"
    context = seen["user"].split("[[ ## notebook_variables ## ]]")[0]
    assert "Sales amounts are in cents" in context and "remember(" in context
    assert "the cat is called Tom" not in context
    block = offer_memories(None, "total the sales by region", {}, tmp_path)
    assert 1 <= block.count("\n- #") <= 5 and len(block) <= 1000  # bounded: fits the prompt's preview
    assert block.splitlines()[1].startswith("- #1 ") and all(line in context for line in block.splitlines())


def test_a_workspace_without_memories_adds_nothing_and_creates_no_store(tmp_path, monkeypatch):
    monkeypatch.delenv("DEEPAGENT_MEMORY", raising=False)
    seen = {}

    def policy(request):
        seen["user"] = request.user
        return ("done", "SUBMIT(result='ok')")

    DeepAgent(lm=ScriptedLM(policy), workspace=tmp_path, max_depth=0).run("anything")
    assert "Notes from earlier runs" not in seen["user"]
    assert not (tmp_path / ".deepagent" / "memory.db").exists()


def test_the_agent_remembers_in_one_run_and_recalls_in_the_next(tmp_path, monkeypatch):
    monkeypatch.delenv("DEEPAGENT_MEMORY", raising=False)
    agent = DeepAgent(lm=ScriptedLM([("note it", "remember('region codes are ISO-3166', tags=['regions'])"),
                                     ("done", "SUBMIT(result='ok')")]), workspace=tmp_path, max_depth=0)
    assert agent.run("learn about regions").status == "finished"
    later = DeepAgent(lm=ScriptedLM([("look", "hits = recall('region codes'); SUBMIT(result=hits[0]['text'])")]),
                      workspace=tmp_path, max_depth=0).run("what do we know")
    assert later.result == "region codes are ISO-3166"


def test_user_wide_store_when_configured(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DEEPAGENT_MEMORY", "user")
    assert memory_path(tmp_path / "ws") == tmp_path / "home" / ".deepagent" / "memory.db"
    monkeypatch.setenv("DEEPAGENT_MEMORY", str(tmp_path / "shared.db"))
    assert memory_path(tmp_path / "ws") == tmp_path / "shared.db"


def _writer(path: str, worker: int, count: int) -> None:
    store = MemoryStore(path)
    for i in range(count):
        store.add(f"worker {worker} memory {i}", [f"w{worker}"], run=f"run-{worker}")


@pytest.mark.subprocess
def test_parallel_writers_in_several_processes_never_corrupt_the_store(tmp_path, monkeypatch):
    # A spawned child is told how to import the parent's __main__, read from its __spec__; an IPython shell an
    # earlier test made may have left sys.modules["__main__"] its user module with __spec__ reset away. A bare
    # __main__ (spec None, no file) has the child import nothing of it; the writer comes from this module.
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    path = str(tmp_path / "memory.db")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(path, worker, 40)) for worker in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(120)
        assert process.exitcode == 0
    store = MemoryStore(path)
    assert store.count() == 160
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        db.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")  # the index matches
    assert len(store.search("worker 3", 200, tag="w3")) == 40


def test_a_locked_store_is_one_line_saying_what_to_do(tmp_path):
    path = tmp_path / "memory.db"
    MemoryStore(path).add("first")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        with pytest.raises(MemoryStoreError) as caught:
            MemoryStore(path, timeout=0.2).add("second")
        assert time.monotonic() - started < 10
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    message = str(caught.value)
    assert "\n" not in message and "locked" in message and "try again" in message
    assert MemoryStore(path).count() == 1  # nothing lost; the next write works
    MemoryStore(path).add("second")


@pytest.mark.parametrize("damage", [b"this is not a database at all" * 100, b"SQLite format 3\x00" + b"\xff" * 4000])
def test_a_damaged_store_is_one_line_and_is_never_overwritten(tmp_path, damage):
    path = tmp_path / "memory.db"
    path.write_bytes(damage)
    for action in (lambda s: s.add("x"), lambda s: s.search("x"), lambda s: s.count()):
        with pytest.raises(MemoryStoreError) as caught:
            action(MemoryStore(path))
        assert "\n" not in str(caught.value) and "damaged" in str(caught.value) and "mv " in str(caught.value)
    assert path.read_bytes() == damage


def test_a_damaged_store_does_not_end_the_run(tmp_path, monkeypatch):
    monkeypatch.delenv("DEEPAGENT_MEMORY", raising=False)
    (tmp_path / ".deepagent").mkdir()
    (tmp_path / ".deepagent" / "memory.db").write_bytes(b"garbage" * 500)
    agent = DeepAgent(lm=ScriptedLM([("try", "r = remember('a fact')\nprint(r)"), ("done", "SUBMIT(result=r)")]),
                      workspace=tmp_path, max_depth=0)
    run = agent.run("a task")
    assert run.status == "finished" and run.result.startswith("Error:") and "damaged" in run.result


# ------------------------------------------------------------------ %deepagent_memory
def test_memory_magic_adds_lists_searches_and_forgets(ip, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DEEPAGENT_MEMORY", raising=False)
    ip.run_line_magic("deepagent_memory", '--add "Quarterly data lives in q3.csv" --tags data,files')
    ip.run_line_magic("deepagent_memory", "--add 'The user likes terse answers'")
    assert "memory #1" in capsys.readouterr().out
    ip.run_line_magic("deepagent_memory", "")
    listing = capsys.readouterr().out
    assert "#1" in listing and "#2" in listing and "data,files" in listing
    ip.run_line_magic("deepagent_memory", "terse")
    found = capsys.readouterr().out
    assert "terse" in found and "q3.csv" not in found
    ip.run_line_magic("deepagent_memory", "--forget 1")
    assert "Forgot memory #1" in capsys.readouterr().out
    assert MemoryStore(memory_path(tmp_path)).count() == 1


def test_memory_magic_mistakes_are_one_usage_error_line(ip, tmp_path, monkeypatch):
    monkeypatch.delenv("DEEPAGENT_MEMORY", raising=False)
    for line in ("--forget 99", "--forget abc", "--add ''", "--add \"  \"", "--limit 0", "--bogus"):
        with pytest.raises(UsageError) as caught:
            ip.run_line_magic("deepagent_memory", line)
        assert "\n" not in str(caught.value).strip(), line
    (tmp_path / ".deepagent").mkdir(exist_ok=True)
    (tmp_path / ".deepagent" / "memory.db").write_bytes(b"garbage" * 500)
    with pytest.raises(UsageError, match="damaged"):
        ip.run_line_magic("deepagent_memory", "")
