"""core/loop/value_kinds.py: what a notebook value is, read from its type without running its code."""

from __future__ import annotations

import io
import json
import socket
import weakref
from collections import OrderedDict

from deepagent_magics.core.loop.value_kinds import dead, imported, imports_of


class Mine:
    pass


def test_closed_files_sockets_dead_references_and_finished_generators_are_dead():
    handle = io.StringIO()
    handle.close()
    sock = socket.socket()
    sock.close()
    ref = weakref.ref(Mine())
    generator = (x for x in [])
    list(generator)
    assert all(dead(value) for value in (handle, sock, ref, generator))
    assert not any(dead(value) for value in (io.StringIO(), [], Mine(), (x for x in [1])))


def test_modules_and_library_functions_and_classes_are_imported_the_users_own_are_not():
    assert imported(json) and imported(json.dumps) and imported(OrderedDict) and imported(len)
    Mine.__module__ = "__main__"
    try:
        assert not imported(Mine) and not imported(3) and not imported(Mine())
    finally:
        Mine.__module__ = __name__


def test_imports_of_a_namespace_say_how_to_import_them_again():
    def local():
        pass

    local.__module__ = "__main__"
    entries = imports_of({"js": json, "dumps": json.dumps, "OD": OrderedDict, "_hidden": json, "local": local,
                          "n": 3}, most=10)
    assert entries == ["js=json", "dumps=json:dumps", "OD=collections:OrderedDict"]
    assert len(imports_of({f"m{i}": json for i in range(10)}, most=3)) == 3


def test_nothing_of_the_values_own_code_runs():
    class Trap(type):
        def __getattribute__(cls, name):
            raise AssertionError("the value's code ran")

    trapped = Trap("Trapped", (), {})
    assert imported(trapped) in (True, False)
    assert isinstance(imports_of({"t": trapped}), list)
