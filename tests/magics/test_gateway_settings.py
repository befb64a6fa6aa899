"""magics/gateway_settings.py: where sub-agent kernels start, and the gateway token kept out of every history."""

from __future__ import annotations

import sqlite3

import pytest
from IPython.core.error import UsageError

from deepagent_magics.core.run.secrets import REDACTED, scrub
from deepagent_magics.magics.gateway_settings import (
    check_gateway,
    forget_typed_flags,
    gateway_url,
    make_gateway,
    shown,
    token_from_environment,
    token_in_effect,
)


def test_the_gateway_in_effect_is_the_configured_one_then_the_environment(monkeypatch):
    monkeypatch.setenv("JUPYTER_GATEWAY_URL", "http://env:8888")
    assert gateway_url("http://configured:1") == "http://configured:1"
    assert gateway_url(None) == "http://env:8888"
    assert gateway_url("off") is None and gateway_url(" none ") is None
    monkeypatch.delenv("JUPYTER_GATEWAY_URL")
    assert gateway_url(None) is None
    assert make_gateway(None, "t") is None


def test_a_url_that_is_not_one_is_one_usage_error_line():
    with pytest.raises(UsageError):
        make_gateway("not a url", None)


def test_nothing_about_the_gateway_being_set_means_nothing_is_checked():
    check_gateway({"max_iters": 3}, "http://127.0.0.1:1", "token")  # would fail if it asked that address


def test_an_unreachable_gateway_is_one_usage_error_line():
    with pytest.raises(UsageError) as caught:
        check_gateway({"gateway_url": "http://127.0.0.1:9"}, None, None)
    assert "\n" not in str(caught.value)


def test_the_settings_list_never_shows_the_token(monkeypatch):
    monkeypatch.setenv("GW_TOKEN_TEST", "t0ken-value-1234")
    monkeypatch.delenv("JUPYTER_GATEWAY_URL", raising=False)
    assert shown("gateway_token", "t0ken-value-1234") == "(set)" and shown("gateway_token", "") is None
    assert shown("gateway_token_env", "GW_TOKEN_TEST") == "GW_TOKEN_TEST (set in the environment)"
    assert shown("gateway_url", None) == "(none: kernels start on this machine)"
    assert shown("lm_options", {"api_key": "k"}) == "api_key=(set)"
    assert shown("max_iters", 3) == 3


def test_a_token_from_the_environment_is_checked_by_name_and_becomes_a_secret(monkeypatch):
    monkeypatch.setenv("GW_TOKEN_SECRET", "env-token-value-98765")
    assert token_from_environment(" GW_TOKEN_SECRET ") == "GW_TOKEN_SECRET"
    assert "env-token-value-98765" not in scrub("it is env-token-value-98765")
    assert token_from_environment("off") is None
    with pytest.raises(UsageError, match="give the name of an environment variable"):
        token_from_environment("a-b")
    with pytest.raises(UsageError, match="the environment has no variable NOPE_NOT_SET"):
        token_from_environment("NOPE_NOT_SET")
    assert token_in_effect("typed", "GW_TOKEN_SECRET") == "env-token-value-98765"
    assert token_in_effect("typed", None) == "typed"


def test_a_typed_token_is_scrubbed_from_the_shells_history_and_its_database(ip, tmp_path):
    manager = ip.history_manager
    secret = "typed-gateway-token-4567"
    line = f"%deepagent_config --gateway-token {secret}"
    manager.store_inputs(9000, line, line)
    manager.writeout_cache()  # in the database already, as a line typed a while ago is
    manager.store_inputs(9001, line, line)  # and in the cache the saving thread has not written yet
    with sqlite3.connect(manager.hist_file) as db:
        assert db.execute("SELECT count(*) FROM history WHERE instr(source_raw, ?) > 0", (secret,)).fetchone()[0]
    ip.user_ns["_i"] = line
    forget_typed_flags(ip, f"--gateway-token={secret} --max-iters 3")
    assert all(secret not in (text or "") for text in manager.input_hist_raw + manager.input_hist_parsed)
    assert secret not in ip.user_ns["_i"] and REDACTED in ip.user_ns["_i"]
    assert all(secret not in source for _, source, _ in manager.db_input_cache)
    with sqlite3.connect(manager.hist_file) as db:
        assert not db.execute("SELECT count(*) FROM history WHERE instr(source_raw, ?) > 0", (secret,)).fetchone()[0]
    assert secret not in scrub(f"now {secret}")
