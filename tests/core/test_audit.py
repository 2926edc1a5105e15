"""AuditLog: levels, sinks and redaction of keys and values."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gmchat_nb.core.audit import REDACTED, AuditLog, key_is_secret, redact_text

JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5" * 3 + "abcdef"
OPENAI_KEY = "sk-proj-" + "x" * 24


def audit_log(**settings: Any) -> tuple[AuditLog, list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    settings.setdefault("enabled", True)
    settings.setdefault("level", "all")
    return AuditLog(logger=events.append, **settings), events


# -- levels ----------------------------------------------------------------------------------

EVENT_TYPES = ["user_message", "assistant_message", "tool_call", "tool_result", "planned_plan"]


@pytest.mark.parametrize(
    ("enabled", "level", "sent"),
    [
        pytest.param(False, "all", [], id="disabled"),
        pytest.param(True, "off", [], id="off"),
        pytest.param(True, "messages", ["user_message", "assistant_message"], id="messages"),
        pytest.param(True, "tool_calls", EVENT_TYPES, id="tool_calls"),
        pytest.param(True, "all", EVENT_TYPES, id="all"),
    ],
)
def test_the_level_decides_which_events_are_sent(
    enabled: bool, level: str, sent: list[str]
) -> None:
    log, events = audit_log(enabled=enabled, level=level)

    for event_type in EVENT_TYPES:
        log.emit(event_type, {"message": "hi"})

    assert [event["event_type"] for event in events] == sent
    assert [log.admits(event_type) for event_type in EVENT_TYPES] == [
        event_type in sent for event_type in EVENT_TYPES
    ]


def test_an_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match=r"audit\.level"):
        AuditLog(level="verbose")


def test_the_sink_receives_the_event_type_and_the_payload() -> None:
    log, events = audit_log()

    log.emit("user_message", {"message": "How many parts?", "session_key": "abc123"})

    assert events == [
        {"event_type": "user_message", "message": "How many parts?", "session_key": "abc123"}
    ]


def test_a_payload_cannot_change_the_event_type() -> None:
    log, events = audit_log(level="messages")

    log.emit("user_message", {"event_type": "tool_call", "message": "hi"})

    assert events == [{"event_type": "user_message", "message": "hi"}]


# -- key redaction ---------------------------------------------------------------------------

SECRET_KEYS = [
    "password",
    "secret",
    "token",
    "key",
    "credential",
    "credentials",
    "passwords",
    "api_key",
    "apiKey",
    "APIKey",
    "X-Api-Key",
    "apikey",
    "access_token",
    "accessToken",
    "refresh-token",
    "password_hash",
    "client_secret",
    "secret_key",
    "private_key",
    "Authorization",
    "proxy_authorization",
    "Cookie",
    "set-cookie",
    "aws_credentials",
]
PUBLIC_KEYS = [
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "max_tokens",
    "inputTokens",
    "session_key",
    "sessionKey",
    "conversation_key",
    "primary_key",
    "idempotency_key",
    "cache_key",
    "monkey",
    "keyboard",
    "tokenizer",
    "secretary",
    "message",
    "tool_name",
    "id",
]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_keys_that_name_secrets_are_redacted(key: str) -> None:
    log, events = audit_log()

    log.emit("tool_call", {key: "hunter2", "other": "visible"})

    assert events[0][key] == REDACTED
    assert events[0]["other"] == "visible"
    assert key_is_secret(key)


@pytest.mark.parametrize("key", PUBLIC_KEYS)
def test_counters_identifiers_and_lookalike_words_are_kept(key: str) -> None:
    log, events = audit_log()

    log.emit("tool_call", {key: 1234})

    assert events[0][key] == 1234
    assert not key_is_secret(key)


def test_redaction_recurses_through_dicts_and_lists() -> None:
    log, events = audit_log()

    log.emit(
        "tool_call",
        {
            "tool_name": "mutate",
            "args": {
                "input": {"name": "Bolt", "credentials": {"user": "u", "pass": "p"}},
                "headers": [{"Authorization": "token abc"}, {"Accept": "application/json"}],
                "usage": {"input_tokens": 10, "output_tokens": 20},
            },
        },
    )

    assert events[0]["args"] == {
        "input": {"name": "Bolt", "credentials": REDACTED},
        "headers": [{"Authorization": REDACTED}, {"Accept": "application/json"}],
        "usage": {"input_tokens": 10, "output_tokens": 20},
    }


def test_configured_terms_replace_the_defaults_but_not_the_always_redacted_words() -> None:
    log, events = audit_log(redact_fields=["ssn", "bank_account"])

    log.emit(
        "tool_call",
        {
            "customer_ssn": "123-45-6789",
            "bank_accounts": ["DE89..."],
            "password": "visible now",
            "account": "kept",
            "authorization": "Basic abc",
        },
    )

    assert events[0] == {
        "event_type": "tool_call",
        "customer_ssn": REDACTED,
        "bank_accounts": REDACTED,
        "password": "visible now",
        "account": "kept",
        "authorization": REDACTED,
    }


def test_a_single_term_given_as_a_string_is_one_term() -> None:
    log, events = audit_log(redact_fields="ssn")

    log.emit("tool_call", {"ssn": "1", "s": "2", "n": "3"})

    assert events[0] == {"event_type": "tool_call", "ssn": REDACTED, "s": "2", "n": "3"}


# -- value redaction -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "curl -H 'Authorization: Bearer abc.DEF-123_x'",
            f"curl -H 'Authorization: {REDACTED}'",
            id="bearer",
        ),
        pytest.param(f"my key is {OPENAI_KEY}, ok?", f"my key is {REDACTED}, ok?", id="openai"),
        pytest.param(f"token {GITHUB_TOKEN}", f"token {REDACTED}", id="github"),
        pytest.param(f"jwt={JWT};", f"jwt={REDACTED};", id="jwt"),
        pytest.param(
            "https://admin:s3cret@db.example.com/x",
            f"https://admin:{REDACTED}@db.example.com/x",
            id="url-password",
        ),
        pytest.param(
            "http://127.0.0.1:8888/lab?token=abc123&reset",
            f"http://127.0.0.1:8888/lab?token={REDACTED}&reset",
            id="query-token",
        ),
    ],
)
def test_credential_shaped_values_are_redacted_where_they_appear(text: str, expected: str) -> None:
    log, events = audit_log()

    log.emit("assistant_message", {"message": text, "nested": [{"note": text}]})

    assert events[0]["message"] == expected
    assert events[0]["nested"] == [{"note": expected}]
    assert redact_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "gmchat_nb.core.store",
        "version 1.2.3",
        "sk-short",
        "Part 42 costs 3.50 EUR",
        "http://127.0.0.1:8888/lab?page=2",
        "the bearer of bad news",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact_text(text) == text


# -- results ---------------------------------------------------------------------------------


def test_results_are_serialised_sorted_and_truncated() -> None:
    log, events = audit_log(max_result_size=20)

    log.emit("tool_result", {"tool_name": "query", "result": {"b": "x" * 50, "a": 1}})
    log.emit("tool_result", {"tool_name": "query", "result": {"b": 2, "a": 1}})

    assert events[0]["result"] == json.dumps({"a": 1, "b": "x" * 50}, sort_keys=True)[:20] + "..."
    assert events[1]["result"] == '{"a": 1, "b": 2}'


def test_results_are_redacted_before_they_are_serialised() -> None:
    log, events = audit_log()

    log.emit(
        "tool_result",
        {"result": {"items": [{"name": "svc", "api_key": "abc", "note": f"uses {OPENAI_KEY}"}]}},
    )

    assert json.loads(events[0]["result"]) == {
        "items": [{"name": "svc", "api_key": REDACTED, "note": f"uses {REDACTED}"}]
    }


def test_results_are_never_cut_without_a_size() -> None:
    log, events = audit_log(max_result_size=None)

    log.emit("tool_result", {"result": ["x" * 10_000]})

    assert len(events[0]["result"]) == 10_004


@pytest.mark.parametrize("size", [0, -1, "big"])
def test_a_bad_result_size_is_refused(size: object) -> None:
    with pytest.raises(ValueError, match="max_result_size"):
        AuditLog(max_result_size=size)  # type: ignore[arg-type]


# -- sinks -----------------------------------------------------------------------------------


@pytest.fixture
def sink_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A throwaway importable module with a list sink, a nested sink and a non-callable."""
    name = f"audit_sink_{abs(hash(tmp_path))}"
    (tmp_path / f"{name}.py").write_text(
        "EVENTS = []\n"
        "NOT_CALLABLE = 42\n"
        "def record(event):\n"
        "    EVENTS.append(event)\n"
        "class Sinks:\n"
        "    @staticmethod\n"
        "    def record(event):\n"
        "        EVENTS.append(('nested', event))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_a_dotted_path_logger_is_imported(sink_module: str) -> None:
    plain = AuditLog(enabled=True, level="messages", logger=f"{sink_module}.record")
    nested = AuditLog(enabled=True, level="messages", logger=f"{sink_module}.Sinks.record")

    plain.emit("user_message", {"message": "hi"})
    nested.emit("user_message", {"message": "ho"})

    events = sys.modules[sink_module].EVENTS
    assert events == [
        {"event_type": "user_message", "message": "hi"},
        ("nested", {"event_type": "user_message", "message": "ho"}),
    ]


@pytest.mark.parametrize(
    "path", ["no_such_module_for_gmchat.record", "json.no_such_function", "nodots"]
)
def test_an_unresolvable_logger_path_is_refused_at_construction(path: str) -> None:
    with pytest.raises(ValueError, match=re.escape(path)):
        AuditLog(enabled=True, logger=path)


def test_a_logger_path_to_something_not_callable_is_refused(sink_module: str) -> None:
    with pytest.raises(ValueError, match="not callable"):
        AuditLog(enabled=True, logger=f"{sink_module}.NOT_CALLABLE")


def test_without_a_logger_events_are_json_lines_on_the_audit_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = AuditLog(enabled=True, level="messages")

    with caplog.at_level(logging.INFO, logger="gmchat_nb.audit"):
        log.emit("user_message", {"message": "hi", "password": "p"})

    records = [record for record in caplog.records if record.name == "gmchat_nb.audit"]
    assert len(records) == 1
    assert records[0].levelno == logging.INFO
    assert json.loads(records[0].getMessage()) == {
        "event_type": "user_message",
        "message": "hi",
        "password": REDACTED,
    }


def test_a_failing_logger_never_breaks_the_caller(caplog: pytest.LogCaptureFixture) -> None:
    def broken(event: dict[str, Any]) -> None:
        raise RuntimeError("sink is down")

    log = AuditLog(enabled=True, level="all", logger=broken)

    with caplog.at_level(logging.ERROR):
        log.emit("tool_call", {"tool_name": "query"})
        log.emit("tool_result", {"tool_name": "query", "result": {}})

    failures = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert len(failures) == 2
    assert all(record.exc_info is not None for record in failures)
    assert "tool_call" in failures[0].getMessage()


# -- settings --------------------------------------------------------------------------------


def test_from_settings_reads_an_object_or_a_mapping() -> None:
    events: list[dict[str, Any]] = []
    settings = SimpleNamespace(
        enabled=True,
        level="messages",
        logger=events.append,
        max_result_size=10,
        redact_fields=["pin"],
    )

    from_object = AuditLog.from_settings(settings)
    from_mapping = AuditLog.from_settings({"enabled": True})

    from_object.emit("user_message", {"pin": "1234", "password": "kept"})
    assert events == [{"event_type": "user_message", "pin": REDACTED, "password": "kept"}]
    assert (from_object.level, from_object.max_result_size) == ("messages", 10)
    assert from_mapping.enabled and from_mapping.level == "off"
    assert from_mapping.redact_fields == ("password", "secret", "token", "key", "credential")
    assert not from_mapping.admits("user_message")
