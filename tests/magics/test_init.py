"""magics/__init__.py: registering every magic (DeepAgentMagics also as a configurable) and unregistering."""

from __future__ import annotations

from deepagent_magics.magics import MAGICS, DeepAgentMagics, register, unregister


def test_every_magic_is_registered_and_the_config_joins_the_configurables(ip):
    registry = ip.magics_manager.registry
    assert {cls.__name__ for cls in MAGICS} <= set(registry)
    assert sum(isinstance(c, DeepAgentMagics) for c in ip.configurables) == 1
    names = ip.magics_manager.magics
    assert {"deepagent_config", "deepagent_why", "deepagent_undo", "deepagent_memory", "deepagent_bench",
            "deepagent_skills", "deepagent_eval"} <= set(names["line"])
    assert {"deepagent", "deepagent_agent"} <= set(names["cell"])


def test_unregistering_leaves_no_configurable_and_stops_watching_the_users_cells(ip):
    changes = ip.magics_manager.registry["ChangesMagics"]
    watcher = changes.user_cells.post_run_cell
    assert watcher in ip.events.callbacks["post_run_cell"]
    try:
        unregister(ip)
        assert not any(isinstance(c, DeepAgentMagics) for c in ip.configurables)
        assert watcher not in ip.events.callbacks["post_run_cell"]
    finally:
        register(ip)  # the session's shell keeps its magics (the next test's fixture configures them)
    assert sum(isinstance(c, DeepAgentMagics) for c in ip.configurables) == 1

