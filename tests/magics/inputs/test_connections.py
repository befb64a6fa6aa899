"""magics/inputs/connections.py: a kernel spec and MCP servers are checked by reaching them when the flag is given."""

from __future__ import annotations

import sys

import pytest
from IPython.core.error import UsageError

from deepagent_magics.magics.inputs.connections import check_kernel_name, check_mcp_servers


def test_an_installed_kernel_spec_passes_and_none_is_not_checked():
    check_kernel_name("python3")
    check_kernel_name(None)
    check_kernel_name("")


def test_a_kernel_spec_that_is_not_installed_names_those_that_are():
    with pytest.raises(UsageError) as caught:
        check_kernel_name("no-such-kernel")
    assert "no kernel spec named 'no-such-kernel'; installed:" in str(caught.value) and "python3" in str(caught.value)


def test_mcp_off_is_no_servers():
    assert check_mcp_servers(["off"]) == []
    assert check_mcp_servers([" OFF "]) == []
    assert check_mcp_servers([]) == []


@pytest.mark.subprocess
def test_a_server_that_cannot_start_is_one_usage_error_line(tmp_path):
    missing = tmp_path / "no_server.py"
    with pytest.raises(UsageError) as caught:
        check_mcp_servers([f'"{sys.executable} {missing}"'])  # quoted as typed on the magic line
    assert type(caught.value) is UsageError and "\n" not in str(caught.value)
