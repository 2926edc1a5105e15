"""Chat settings: the spec's defaults, loading and merging, aliases, immutability, validation."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from gmchat_nb.core.project import Project
from gmchat_nb.core.project.demo import DEMO_NAMES
from gmchat_nb.core.settings import (
    DEFAULT_SETTINGS,
    AuditSettings,
    ChatConfigurationError,
    ChatSettings,
    CompletionGateSettings,
    InjectionSettings,
    LoopGuardSettings,
    ProviderRetrySettings,
    RateLimitSettings,
    TelemetrySettings,
    load_settings,
)

# GeneralManager 0.87 chat API reference, "Settings", "Rate limits", "Audit settings" (url and provider are
# gmchat_nb's documented deviations), then gmchat_nb's own keys.
SPEC_DEFAULTS: dict[str, Any] = {
    "enabled": False,
    "url": "gmchat/chat/",
    "provider": "offline",
    "provider_config": {},
    "provider_profiles": {},
    "planned": {},
    "permission": None,
    "allowed_origins": None,
    "allowed_mutations": (),
    "confirm_mutations": (),
    "confirm_timeout_seconds": 30,
    "max_results": 200,
    "query_timeout_seconds": None,
    "max_retries_per_message": 3,
    "max_mutations_per_message": 8,
    "max_total_rounds_per_message": None,
    "tool_strategy": "discovery",
    "recover_missing_tool_calls": False,
    "charts": True,  # gmchat_nb's: the chart tool (docs/charts.md)
    "prices": {},  # gmchat_nb's: price overrides (docs/cost.md)
    "system_prompt": "",
    "max_recent_messages": 20,
    "summarize_after": 10,
    "ttl_hours": 24,
    "rate_limit": RateLimitSettings(
        requests=60, window_seconds=3600, tokens=None, input_tokens=None, output_tokens=None
    ),
    "audit": AuditSettings(
        enabled=False,
        level="off",
        logger=None,
        max_result_size=4096,
        redact_fields=("password", "secret", "token", "key", "credential"),
    ),
    "project": "demo",
    "project_id": None,
    "knowledge": "on",
    "mcp_stdio_decisions": "elicitation",
    "exposed_managers": None,
    "store": None,
    "hooks": {},
    "headers": {},
    "provider_retries": ProviderRetrySettings(attempts=3, max_wait_seconds=30),
    "provider_fallbacks": (),
    "loop_guard": LoopGuardSettings(),
    "completion_gates": CompletionGateSettings(),
    "injection": InjectionSettings(),
    "telemetry": TelemetrySettings(),
}


def audit_sink(event: Mapping[str, Any]) -> None:
    """A module-level callable, so its dotted name can be loaded back."""


def write(tmp_path: Path, text: str, name: str = "chat.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_for(source: Any = None, **overrides: Any) -> ChatConfigurationError:
    with pytest.raises(ChatConfigurationError) as caught:
        load_settings(source, **overrides)
    return caught.value


# -- defaults --------------------------------------------------------------------------------


def test_defaults_are_the_specs() -> None:
    settings = load_settings()
    as_fields = {item.name: getattr(settings, item.name) for item in dataclasses.fields(settings)}
    assert as_fields == SPEC_DEFAULTS
    assert settings == DEFAULT_SETTINGS == ChatSettings()
    assert settings.rate_limit == RateLimitSettings()
    assert settings.audit == AuditSettings()


def test_default_round_cap_is_retries_plus_mutations_plus_two() -> None:
    assert DEFAULT_SETTINGS.max_rounds == 3 + 8 + 2


# -- sources and merge order -----------------------------------------------------------------


def test_yaml_file_then_keyword_overrides(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "enabled: true\n"
        "provider: openai:gpt-4.1-mini\n"
        "max_results: 50\n"
        "allowed_mutations: [createPart, updatePart]\n"
        "confirm_mutations: [createPart]\n"
        "rate_limit: {tokens: 1000}\n",
    )
    settings = load_settings(path, max_results=7, summarize_after=4)
    assert settings.enabled is True
    assert settings.provider == "openai:gpt-4.1-mini"
    assert settings.max_results == 7  # the override beats the file
    assert settings.summarize_after == 4
    assert settings.allowed_mutations == ("createPart", "updatePart")
    assert settings.confirm_mutations == ("createPart",)
    assert settings.rate_limit == RateLimitSettings(requests=60, tokens=1000)
    assert load_settings(str(path)) == load_settings(path, max_results=50)


def test_mapping_source_then_keyword_overrides() -> None:
    settings = load_settings({"max_results": 50, "tool_strategy": "direct"}, max_results=9)
    assert (settings.max_results, settings.tool_strategy) == (9, "direct")


def test_keywords_alone() -> None:
    assert load_settings(enabled=True).enabled is True


def test_settings_source_keeps_its_values_under_overrides() -> None:
    base = load_settings(max_results=50, rate_limit={"tokens": 10})
    settings = load_settings(base, summarize_after=3, rate_limit={"requests": 5})
    assert settings.max_results == 50
    assert settings.summarize_after == 3
    assert settings.rate_limit == RateLimitSettings(requests=5, tokens=10)


def test_empty_yaml_file_means_defaults(tmp_path: Path) -> None:
    assert load_settings(write(tmp_path, "")) == DEFAULT_SETTINGS
    assert load_settings(write(tmp_path, "# only a comment\n", "c.yaml")) == DEFAULT_SETTINGS


def test_nested_mappings_merge_key_by_key_across_layers(tmp_path: Path) -> None:
    path = write(tmp_path, "rate_limit: {tokens: 1000}\naudit: {enabled: true}\n")
    settings = load_settings(path, rate_limit={"window_seconds": 60}, audit={"level": "messages"})
    assert settings.rate_limit == RateLimitSettings(requests=60, window_seconds=60, tokens=1000)
    assert settings.audit == AuditSettings(enabled=True, level="messages")


def test_settings_objects_replace_nested_values_whole() -> None:
    base = load_settings(rate_limit={"tokens": 1000})
    settings = load_settings(base, rate_limit=RateLimitSettings(requests=5))
    assert settings.rate_limit == RateLimitSettings(requests=5, tokens=None)


def test_other_mappings_replace_rather_than_merge() -> None:
    base = load_settings(provider_config={"model": "a", "base_url": "http://127.0.0.1:1"})
    assert dict(base.replace(provider_config={"model": "b"}).provider_config) == {"model": "b"}


@pytest.mark.parametrize("budget", [None, 0, -1, -500])
def test_no_budget_is_stored_as_none(budget: int | None) -> None:
    settings = load_settings(rate_limit={"requests": budget, "input_tokens": budget})
    assert settings.rate_limit.requests is None
    assert settings.rate_limit.input_tokens is None


def test_audit_level_all_means_tool_calls() -> None:
    assert load_settings(audit={"level": "all"}).audit.level == "tool_calls"


@pytest.mark.parametrize("url", ["/chat/", "chat", "chat/", "/chat"])
def test_url_slashes_are_normalised(url: str) -> None:
    assert load_settings(url=url).url == "chat/"


@pytest.mark.parametrize(
    "project", ["demo", *DEMO_NAMES, "http://127.0.0.1:8000/graphql/", "https://gm.example/gql"]
)
def test_project_is_a_demo_name_or_a_url(project: str) -> None:
    assert load_settings(project=project).project == project


def test_hooks_are_normalised_to_tuples() -> None:
    settings = load_settings(
        hooks={"error": audit_sink, "tool_called": [audit_sink, "package.module.on_tool"]}
    )
    assert settings.hooks == {
        "error": (audit_sink,),
        "tool_called": (audit_sink, "package.module.on_tool"),
    }


def test_provider_may_be_an_object() -> None:
    class Provider:
        pass

    provider = Provider()
    assert load_settings(provider=provider).provider is provider
    assert load_settings(provider=Provider).provider is Provider


def test_store_accepts_memory_and_paths(tmp_path: Path) -> None:
    assert load_settings(store=":memory:").store == ":memory:"
    assert load_settings(store=tmp_path / "chat.db").store == str(tmp_path / "chat.db")
    url = "postgresql://chat@db.internal:5432/hub"
    assert load_settings(store=url).store == url


def test_a_store_url_of_another_engine_is_refused_without_showing_its_password() -> None:
    with pytest.raises(ChatConfigurationError, match="postgresql:// URL") as refused:
        load_settings(store="mysql://chat:s3cret@db/hub")
    assert refused.value.key == "store"
    assert "s3cret" not in str(refused.value) and "chat:***@db" in str(refused.value)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("postgresql://chat:s3cret@db/hub?colour=blue", 'invalid URI query parameter: "colour"'),
        ("postgresql://chat:s3 cret@db/hub", "unexpected spaces"),
    ],
)
def test_a_postgresql_url_libpq_cannot_read_is_refused_by_name(url: str, problem: str) -> None:
    with pytest.raises(ChatConfigurationError, match=problem) as refused:
        load_settings(store=url)
    assert refused.value.key == "store" and "s3" not in str(refused.value)


# -- GeneralManager aliases and wrappers -----------------------------------------------------


@pytest.mark.parametrize(
    ("group", "key", "value"),
    [
        ("query_limits", "max_results", 25),
        ("query_limits", "query_timeout_seconds", 2.5),
        ("query_limits", "max_retries_per_message", 1),
        ("conversation", "max_recent_messages", 5),
        ("conversation", "summarize_after", 4),
        ("conversation", "ttl_hours", 48),
    ],
)
def test_grouped_aliases_fill_flat_keys(group: str, key: str, value: object) -> None:
    assert getattr(load_settings({group: {key: value}}), key) == value
    # ...but only when the flat key is absent.
    assert getattr(load_settings({group: {key: value}, key: 7}), key) == 7


def test_alias_in_overrides_beats_flat_key_in_source() -> None:
    settings = load_settings({"max_results": 50}, query_limits={"max_results": 10})
    assert settings.max_results == 10


@pytest.mark.parametrize(
    ("old", "new"), [("max_requests_per_hour", "requests"), ("max_tokens_per_hour", "tokens")]
)
def test_hourly_rate_limit_aliases(old: str, new: str) -> None:
    settings = load_settings({"rate_limit": {old: 99}})
    assert getattr(settings.rate_limit, new) == 99
    assert settings.rate_limit.window_seconds == 3600
    assert getattr(load_settings({"rate_limit": {old: 99, new: 5}}).rate_limit, new) == 5


def test_hourly_alias_forces_an_hour_window_over_an_earlier_layer() -> None:
    base = load_settings(rate_limit={"window_seconds": 60})
    assert base.replace(rate_limit={"max_requests_per_hour": 10}).rate_limit.window_seconds == 3600


@pytest.mark.parametrize(
    "wrapped",
    [
        {"CHAT": {"enabled": True, "max_results": 5}},
        {"GENERAL_MANAGER": {"CHAT": {"enabled": True, "max_results": 5}}},
        # GeneralManager's other settings sit beside CHAT and are not ours to check.
        {
            "GENERAL_MANAGER": {
                "AUTOCREATE_GRAPHQL": True,
                "CHAT": {"enabled": True, "max_results": 5},
            }
        },
    ],
)
def test_chat_wrappers(wrapped: dict[str, Any]) -> None:
    settings = load_settings(wrapped)
    assert (settings.enabled, settings.max_results) == (True, 5)


def test_chat_wrapper_in_a_yaml_file(tmp_path: Path) -> None:
    path = write(tmp_path, "GENERAL_MANAGER:\n  CHAT:\n    enabled: true\n    ttl_hours: 2\n")
    assert load_settings(path).ttl_hours == 2


def test_general_manager_without_chat_means_defaults() -> None:
    assert load_settings({"GENERAL_MANAGER": {"AUTOCREATE_GRAPHQL": True}}) == DEFAULT_SETTINGS


# -- immutability ----------------------------------------------------------------------------


def test_mutating_the_source_does_not_change_the_settings() -> None:
    source: dict[str, Any] = {
        "allowed_mutations": ["createPart"],
        "provider_config": {"model": "m", "stop": ["x"], "extra": {"a": 1}},
        "headers": {"X-Team": "blue"},
        "rate_limit": {"tokens": 5},
    }
    settings = load_settings(source)
    source["allowed_mutations"].append("deletePart")
    source["provider_config"]["model"] = "other"
    source["provider_config"]["stop"].append("y")
    source["provider_config"]["extra"]["a"] = 2
    source["headers"]["X-Team"] = "red"
    source["rate_limit"]["tokens"] = 6
    assert settings.allowed_mutations == ("createPart",)
    assert settings.provider_config == {"model": "m", "stop": ("x",), "extra": {"a": 1}}
    assert settings.headers == {"X-Team": "blue"}
    assert settings.rate_limit.tokens == 5


def test_sequences_are_tuples_and_mappings_read_only() -> None:
    settings = load_settings(
        allowed_origins=["http://127.0.0.1"],
        exposed_managers=["Part"],
        provider_config={"nested": {"a": [1]}},
        audit={"redact_fields": ["pin"]},
    )
    assert isinstance(settings.allowed_origins, tuple)
    assert isinstance(settings.exposed_managers, tuple)
    assert isinstance(settings.audit.redact_fields, tuple)
    assert isinstance(settings.provider_config, MappingProxyType)
    assert isinstance(settings.provider_config["nested"], MappingProxyType)
    with pytest.raises(TypeError):
        settings.provider_config["model"] = "x"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.max_results = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.rate_limit.requests = 1  # type: ignore[misc]


# -- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "key", "fragments"),
    [
        ({"enabled": "yes"}, "enabled", ["true or false", "'yes'"]),
        ({"charts": "yes"}, "charts", ["true or false"]),
        ({"prices": {"m": {"input": 1}}}, "prices.m.output", ["needs 'input' and 'output'"]),
        ({"prices": {"m": {"input": 1, "output": -2}}}, "prices.m.output", ["a price >= 0"]),
        ({"prices": {"m": {"input": 1, "output": 2, "tokens": 3}}}, "prices.m.tokens", ["input"]),
        (
            {"prices": {"m": {"input": 1, "output": 2, "context_window": 1.5}}},
            "prices.m.context_window",
            ["whole number"],
        ),
        ({"rate_limit": {"cost": "1$"}}, "rate_limit.cost", ["a number of USD"]),
        ({"recover_missing_tool_calls": 1}, "recover_missing_tool_calls", ["true or false"]),
        ({"max_results": True}, "max_results", ["integer >= 1", "bool"]),
        ({"max_results": 0}, "max_results", ["integer >= 1", "0"]),
        ({"max_results": "200"}, "max_results", ["integer >= 1", "'200'"]),
        ({"max_retries_per_message": -1}, "max_retries_per_message", ["integer >= 0"]),
        ({"max_mutations_per_message": 1.5}, "max_mutations_per_message", ["integer >= 0"]),
        ({"max_total_rounds_per_message": 0}, "max_total_rounds_per_message", [">= 1"]),
        ({"confirm_timeout_seconds": 0}, "confirm_timeout_seconds", ["number > 0"]),
        ({"query_timeout_seconds": -2}, "query_timeout_seconds", ["null or a number > 0"]),
        ({"ttl_hours": False}, "ttl_hours", ["number > 0", "bool"]),
        ({"tool_strategy": "dirct"}, "tool_strategy", ["'discovery', 'direct'", "'direct'?"]),
        ({"max_result": 5}, "max_result", ["Did you mean 'max_results'?", "max_results"]),
        ({"rate_limit": {"request": 5}}, "rate_limit.request", ["'requests'", "window_seconds"]),
        ({"rate_limit": {"requests": "60"}}, "rate_limit.requests", ["integer", "'60'"]),
        ({"rate_limit": {"window_seconds": -1}}, "rate_limit.window_seconds", [">= 1", "-1"]),
        ({"rate_limit": 60}, "rate_limit", ["mapping", "requests"]),
        (
            {"rate_limit": {"max_requests_per_hour": 5, "window_seconds": 60}},
            "rate_limit.max_requests_per_hour",
            ["per-hour", "'rate_limit.requests'"],
        ),
        ({"audit": {"level": "verbose"}}, "audit.level", ["'off', 'messages', 'tool_calls'"]),
        ({"audit": {"levle": "all"}}, "audit.levle", ["Did you mean 'level'?"]),
        ({"audit": {"logger": "not a path"}}, "audit.logger", ["dotted path", "callable"]),
        ({"audit": {"redact_fields": [""]}}, "audit.redact_fields", ["non-empty strings"]),
        ({"query_limits": {"max_result": 5}}, "query_limits.max_result", ["'max_results'"]),
        ({"query_limits": {"max_results": -5}}, "query_limits.max_results", ["integer >= 1"]),
        ({"conversation": {"ttl": 5}}, "conversation.ttl", ["'ttl_hours'"]),
        ({"allowed_mutations": "createPart"}, "allowed_mutations", ["list of non-empty strings"]),
        (
            {"allowed_mutations": ["updatePart"], "confirm_mutations": ["createPart"]},
            "confirm_mutations",
            ["'createPart'", "allowed_mutations", "'updatePart'"],
        ),
        ({"allowed_origins": [1]}, "allowed_origins", ["null or a list of non-empty strings"]),
        ({"permission": 42}, "permission", ["callable", "dotted path"]),
        ({"provider": ""}, "provider", ["provider spec", "'offline'"]),
        ({"provider_config": ["model"]}, "provider_config", ["mapping"]),
        (
            {"project": "ftp://x/graphql"},
            "project",
            ["inventory, large", "demo:NAME", "http(s) GraphQL URL"],
        ),
        ({"hooks": {"message_recieved": "a.b"}}, "hooks.message_recieved", ["'message_received'"]),
        ({"hooks": {"error": 3}}, "hooks.error", ["callable", "dotted path"]),
        ({"headers": {"Authorization": 123}}, "headers.Authorization", ["string header value"]),
        ({"store": ""}, "store", ["':memory:'"]),
    ],
)
def test_invalid_values_name_the_key_and_what_is_allowed(
    overrides: dict[str, Any], key: str, fragments: list[str]
) -> None:
    for error in (error_for(overrides), error_for(**overrides)):
        assert error.key == key
        assert f"'{key}'" in str(error)
        for fragment in fragments:
            assert fragment in str(error)
        assert isinstance(error, ValueError)


def test_header_values_are_never_echoed() -> None:
    error = error_for(headers={"Authorization": b"Bearer s3cret"})
    assert "s3cret" not in str(error)


def test_direct_construction_validates_too() -> None:
    with pytest.raises(ChatConfigurationError, match="max_results"):
        ChatSettings(max_results=-1)
    with pytest.raises(ChatConfigurationError, match=r"rate_limit\.window_seconds"):
        RateLimitSettings(window_seconds=0)


# -- provider_retries -------------------------------------------------------------------------


def test_provider_retries_default_to_three_attempts_and_thirty_seconds() -> None:
    retries = load_settings().provider_retries
    assert retries == ProviderRetrySettings()
    assert (retries.attempts, retries.max_wait_seconds) == (3, 30)


def test_provider_retries_merge_key_by_key_and_round_trip(tmp_path: Path) -> None:
    path = write(tmp_path, "provider_retries: {attempts: 5}\n")
    settings = load_settings(path, provider_retries={"max_wait_seconds": 0.3})
    assert settings.provider_retries == ProviderRetrySettings(attempts=5, max_wait_seconds=0.3)
    assert settings.to_dict()["provider_retries"] == {"attempts": 5, "max_wait_seconds": 0.3}
    assert load_settings(settings.to_dict()) == settings
    off = settings.replace(provider_retries={"attempts": 1})  # 1: retrying is off
    assert off.provider_retries == ProviderRetrySettings(attempts=1, max_wait_seconds=0.3)
    assert "provider_retries" in repr(off) and "provider_retries" not in repr(DEFAULT_SETTINGS)


@pytest.mark.parametrize(
    "block", [{"attempts": 1}, {"attempts": 10}, {"max_wait_seconds": 0}, {"max_wait_seconds": 600}]
)
def test_provider_retries_bounds_are_allowed(block: dict[str, Any]) -> None:
    settings = load_settings(provider_retries=block)
    for name, value in block.items():
        assert getattr(settings.provider_retries, name) == value


@pytest.mark.parametrize(
    ("block", "key", "fragments"),
    [
        ({"attempts": 0}, "provider_retries.attempts", ["an integer from 1 to 10", "0 (int)"]),
        ({"attempts": 11}, "provider_retries.attempts", ["an integer from 1 to 10", "11"]),
        ({"attempts": "3"}, "provider_retries.attempts", ["an integer from 1 to 10", "'3'"]),
        ({"attempts": True}, "provider_retries.attempts", ["an integer from 1 to 10", "bool"]),
        ({"attempts": 2.5}, "provider_retries.attempts", ["an integer from 1 to 10", "2.5"]),
        ({"max_wait_seconds": -1}, "provider_retries.max_wait_seconds", ["from 0 to 600"]),
        ({"max_wait_seconds": 601}, "provider_retries.max_wait_seconds", ["from 0 to 600"]),
        ({"max_wait_seconds": "30"}, "provider_retries.max_wait_seconds", ["a number", "'30'"]),
        ({"max_wait_seconds": float("inf")}, "provider_retries.max_wait_seconds", ["a number"]),
        ({"max_wait_seconds": None}, "provider_retries.max_wait_seconds", ["None"]),
        ({"atempts": 3}, "provider_retries.atempts", ["Did you mean 'attempts'?", "Allowed"]),
        ({"retry_after": 3}, "provider_retries.retry_after", ["attempts, max_wait_seconds"]),
        ({1: 3}, "provider_retries", ["names must be strings"]),
    ],
)
def test_bad_provider_retries_name_their_key(
    block: dict[Any, Any], key: str, fragments: list[str]
) -> None:
    for error in (error_for({"provider_retries": block}), error_for(provider_retries=block)):
        assert error.key == key
        assert f"'{key}'" in str(error)
        for fragment in fragments:
            assert fragment in str(error)


@pytest.mark.parametrize("value", [3, "3", ["attempts"], True])
def test_provider_retries_must_be_a_mapping(value: object) -> None:
    error = error_for(provider_retries=value)
    assert error.key == "provider_retries"
    assert "a mapping with keys from attempts, max_wait_seconds" in str(error)


def test_provider_retries_check_when_built_directly() -> None:
    with pytest.raises(ChatConfigurationError, match=r"provider_retries\.attempts' must be an "):
        ProviderRetrySettings(attempts=0)
    with pytest.raises(ChatConfigurationError, match=r"provider_retries\.max_wait_seconds"):
        ChatSettings(provider_retries=ProviderRetrySettings(max_wait_seconds=-1))


def test_missing_file_names_it(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    error = error_for(path)
    assert str(path) in str(error)
    assert "does not exist" in str(error)


def test_invalid_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "enabled: true\nmax_results: [1, 2\n")
    error = error_for(path)
    assert str(path) in str(error)
    assert "not valid YAML" in str(error)
    assert "line" in str(error)


def test_yaml_that_is_not_a_mapping_is_rejected(tmp_path: Path) -> None:
    error = error_for(write(tmp_path, "- enabled\n"))
    assert "must hold a mapping" in str(error)


def test_a_bad_key_in_a_file_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "max_result: 5\n")
    error = error_for(path)
    assert error.key == "max_result"
    assert str(path) in str(error)
    assert "Did you mean 'max_results'?" in str(error)


def test_wrapper_mixed_with_settings_is_rejected() -> None:
    error = error_for({"CHAT": {"enabled": True}, "max_results": 5})
    assert error.key == "max_results"
    assert "'CHAT'" in str(error)


def test_a_source_of_the_wrong_type_is_rejected() -> None:
    with pytest.raises(ChatConfigurationError, match="YAML file path"):
        load_settings(["enabled"])  # type: ignore[arg-type]


# -- behaviour -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "rounds"),
    [
        ({}, 13),
        ({"max_retries_per_message": 0, "max_mutations_per_message": 0}, 2),
        ({"max_total_rounds_per_message": 4}, 4),
        ({"max_total_rounds_per_message": 40, "max_retries_per_message": 1}, 40),
    ],
)
def test_max_rounds(overrides: dict[str, Any], rounds: int) -> None:
    assert load_settings(**overrides).max_rounds == rounds


def test_replace_returns_a_validated_copy() -> None:
    base = load_settings(max_results=50, rate_limit={"tokens": 10})
    changed = base.replace(max_results=5, rate_limit={"requests": 1})
    assert (base.max_results, changed.max_results) == (50, 5)
    assert changed.rate_limit == RateLimitSettings(requests=1, tokens=10)
    with pytest.raises(ChatConfigurationError, match="tool_strategy"):
        base.replace(tool_strategy="all")
    with pytest.raises(ChatConfigurationError, match="Did you mean 'max_results'"):
        base.replace(max_result=5)


def test_to_dict_is_plain_json_and_round_trips() -> None:
    settings = load_settings(
        enabled=True,
        provider="scripted:rounds.yaml",
        provider_config={"model": "m", "stop": ["x"]},
        planned={"enabled": False, "roles": {"planner": "small"}},
        allowed_mutations=["createPart", "updatePart"],
        confirm_mutations=["createPart"],
        allowed_origins=["http://127.0.0.1:8888"],
        query_timeout_seconds=1.5,
        rate_limit={"tokens": 1000, "requests": 0},
        audit={"enabled": True, "level": "all", "logger": audit_sink},
        hooks={"error": [audit_sink], "tool_called": "package.module.on_tool"},
        headers={"X-Team": "blue"},
        exposed_managers=["Part", "Material"],
        store=":memory:",
        project="http://127.0.0.1:9/graphql/",
    )
    data = settings.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["audit"]["logger"] == f"{__name__}.audit_sink"
    assert data["hooks"] == {
        "error": [f"{__name__}.audit_sink"],
        "tool_called": ["package.module.on_tool"],
    }
    assert data["rate_limit"]["requests"] is None
    assert data["allowed_mutations"] == ["createPart", "updatePart"]
    again = load_settings(data)
    assert again.to_dict() == data
    assert (
        again.replace(
            audit={"logger": audit_sink},
            hooks={"error": [audit_sink], "tool_called": "package.module.on_tool"},
        )
        == settings
    )


def test_defaults_round_trip_through_to_dict() -> None:
    assert load_settings(DEFAULT_SETTINGS.to_dict()) == DEFAULT_SETTINGS


def test_repr_shows_changes_and_hides_credentials() -> None:
    settings = load_settings(
        max_results=5,
        provider_config={"api_key": "sk-s3cret", "model": "gpt-4.1-mini"},
        provider_profiles={"small": {"provider_config": {"api_key": "sk-other"}}},
        headers={"Authorization": "Bearer s3cret-token"},
    )
    text = repr(settings)
    assert "max_results=5" in text
    assert "gpt-4.1-mini" in text
    assert "s3cret" not in text
    assert "sk-other" not in text
    assert "tool_strategy" not in text  # unchanged defaults are left out
    assert repr(DEFAULT_SETTINGS) == "ChatSettings()"


# -- against a project -----------------------------------------------------------------------


def test_validate_for_accepts_exposed_mutations(inventory: Project) -> None:
    settings = load_settings(
        allowed_mutations=["createPart", "updateProject"], confirm_mutations=["createPart"]
    )
    settings.validate_for(inventory)


@pytest.mark.parametrize(
    ("name", "fragments"),
    [
        ("createPrat", ["'createPrat'", "did you mean 'createPart'"]),
        ("createpart", ["'createpart'", "did you mean 'createPart'"]),
        # AuditSecret is a manager the demo hides from chat; nothing of it may be allowed.
        ("createAuditSecret", ["'createAuditSecret'", "createPart"]),
        ("createMaterial", ["'createMaterial'", "Exposed mutations"]),
    ],
)
def test_validate_for_rejects_unknown_or_hidden_mutations(
    inventory: Project, name: str, fragments: list[str]
) -> None:
    settings = load_settings(allowed_mutations=["createPart", name], confirm_mutations=[name])
    with pytest.raises(ChatConfigurationError) as caught:
        settings.validate_for(inventory)
    assert caught.value.key == "allowed_mutations"
    for fragment in fragments:
        assert fragment in str(caught.value)
