"""core/run/secrets.py: secrets, and any 8-character piece of one or of its encodings, out of every text a run keeps
(the hostile leak attempts: tests/adversarial/test_secrets.py)."""

from __future__ import annotations

import base64
import logging

import pytest

from deepagent_magics.core.run.secrets import (
    REDACTED,
    Redactor,
    is_secret_name,
    protect_logs,
    register_lm_secrets,
    register_secret,
    scrub,
    secret_values,
)

SECRET = "abcdefghij-secret-0123456789"


@pytest.mark.parametrize("name, secret", [("OPENAI_API_KEY", True), ("GITHUB_TOKEN", True), ("DB_PASSWORD", True),
                                          ("KEYBOARD_LAYOUT", False), ("AUTHOR", False), ("PATH", False)])
def test_credential_names_are_told_from_others_by_their_words(name, secret):
    assert is_secret_name(name) is secret


def test_a_secret_and_every_piece_of_it_or_its_encodings_are_hidden():
    redact = Redactor([SECRET])
    assert redact(f"x {SECRET} y") == f"x {REDACTED} y"
    assert redact(f"cut: {SECRET[5:15]}") == f"cut: {REDACTED}"
    assert REDACTED in redact(SECRET[::-1])
    assert REDACTED in redact(base64.b64encode(SECRET.encode()).decode())
    assert REDACTED in redact(SECRET.encode().hex())
    assert redact("nothing to hide here") == "nothing to hide here"


def test_structures_are_scrubbed_through_and_key_shapes_anywhere():
    redact = Redactor([SECRET])
    assert redact({"k": [SECRET, 3], SECRET: "v"}) == {"k": [REDACTED, 3], REDACTED: "v"}
    assert REDACTED in redact("token ghp_" + "a" * 36)


def test_short_values_and_paths_to_credential_files_are_not_secrets(tmp_path):
    credentials = tmp_path / "creds.json"
    credentials.write_text("{}")
    values = secret_values(environ={"API_KEY": "1", "GOOGLE_APPLICATION_CREDENTIALS": str(credentials),
                                    "MY_TOKEN": "real-token-value-1234"})
    assert "real-token-value-1234" in values and "1" not in values and str(credentials) not in values


def test_the_keys_of_an_lm_are_secrets_and_a_bearer_header_hides_the_bare_key():
    class LM:
        api_key = None
        kwargs = {"api_key": "lm-key-aaaa-bbbb-cccc", "headers": {"Authorization": "Bearer lm-bearer-zzzz-9999"},
                  "temperature": 0.5}

    values = secret_values(LM(), environ={})
    assert {"lm-key-aaaa-bbbb-cccc", "lm-bearer-zzzz-9999"} <= values
    register_lm_secrets(LM())
    assert "lm-bearer-zzzz-9999" not in scrub("sent lm-bearer-zzzz-9999")


def test_a_secret_set_in_the_environment_mid_run_is_picked_up(monkeypatch):
    assert scrub("LqTz81xwPvm3Nd") == "LqTz81xwPvm3Nd"
    monkeypatch.setenv("LATE_API_KEY", "LqTz81xwPvm3Nd")
    assert scrub("LqTz81xwPvm3Nd") == REDACTED


def test_a_registered_value_is_hidden_from_then_on():
    register_secret("typed-token-31415926")
    assert scrub("x typed-token-31415926") == f"x {REDACTED}"


def test_the_packages_log_records_are_scrubbed(caplog):
    register_secret("log-secret-2718281828")
    logger = logging.getLogger("deepagent_magics.test_secrets")  # the package's loggers as they are when installed
    protect_logs()
    with caplog.at_level(logging.INFO, logger="deepagent_magics.test_secrets"):
        logger.info("calling with %s", "log-secret-2718281828")
    assert "log-secret-2718281828" not in caplog.text and REDACTED in caplog.text
