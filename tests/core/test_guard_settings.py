"""The settings of a turn that defends itself: ``provider_fallbacks``, ``loop_guard``,
``completion_gates``, ``injection`` and ``telemetry`` -- defaults, every valid form, errors that
name the exact key, "did you mean", and merging across layers."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from gmchat_nb.core.settings import (
    DEFAULT_SETTINGS,
    ChatConfigurationError,
    ChatSettings,
    CompletionGateSettings,
    FallbackProvider,
    InjectionSettings,
    LoopGuardSettings,
    TelemetrySettings,
    load_settings,
)


def write(tmp_path: Path, text: str, name: str = "chat.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_for(source: Any = None, **overrides: Any) -> ChatConfigurationError:
    with pytest.raises(ChatConfigurationError) as caught:
        load_settings(source, **overrides)
    return caught.value


def assert_names(error: ChatConfigurationError, key: str, fragments: list[str]) -> None:
    assert error.key == key
    assert f"'{key}'" in str(error)
    for fragment in fragments:
        assert fragment in str(error)


# -- defaults --------------------------------------------------------------------------------


def test_defaults() -> None:
    settings = load_settings()
    assert settings.provider_fallbacks == ()
    assert settings.loop_guard == LoopGuardSettings(
        enabled=True, model_requests=16, tool_calls=25, tokens=200_000, seconds=300
    )
    assert settings.completion_gates == CompletionGateSettings(
        phantom_write=True, grounded_numbers=False, empty_data=True
    )
    assert settings.injection == InjectionSettings(
        mutation_intent=True, question="log", question_threshold=0.5
    )
    assert settings.telemetry == TelemetrySettings(llm_spans="auto")
    assert settings == DEFAULT_SETTINGS == ChatSettings()


def test_defaults_stay_out_of_the_repr_and_round_trip() -> None:
    text = repr(DEFAULT_SETTINGS)
    for name in ("provider_fallbacks", "loop_guard", "completion_gates", "injection", "telemetry"):
        assert name not in text
    plain = DEFAULT_SETTINGS.to_dict()
    assert plain["provider_fallbacks"] == []
    assert plain["loop_guard"] == {
        "enabled": True,
        "model_requests": 16,
        "tool_calls": 25,
        "tokens": 200_000,
        "seconds": 300,
    }
    assert plain["completion_gates"] == {
        "phantom_write": True,
        "grounded_numbers": False,
        "empty_data": True,
    }
    assert plain["injection"] == {
        "mutation_intent": True,
        "question": "log",
        "question_threshold": 0.5,
        "flag_results": True,
    }
    assert plain["telemetry"] == {"llm_spans": "auto"}


def test_default_gates_are_phantom_write_and_empty_data() -> None:
    assert CompletionGateSettings().enabled == frozenset({"phantom_write", "empty_data"})


# -- provider_fallbacks ----------------------------------------------------------------------


def test_fallbacks_as_specs_and_mappings_in_order() -> None:
    settings = load_settings(
        provider_fallbacks=[
            "anthropic:claude-3-5-haiku-latest",
            {"provider": "openai:gpt-4.1-mini", "provider_config": {"max_tokens": 512}},
            {"provider": "ollama:qwen2.5"},
        ]
    )
    assert settings.provider_fallbacks == (
        FallbackProvider(provider="anthropic:claude-3-5-haiku-latest"),
        FallbackProvider(provider="openai:gpt-4.1-mini", provider_config={"max_tokens": 512}),
        FallbackProvider(provider="ollama:qwen2.5"),
    )
    assert [item.provider for item in settings.provider_fallbacks] == [
        "anthropic:claude-3-5-haiku-latest",
        "openai:gpt-4.1-mini",
        "ollama:qwen2.5",
    ]
    assert settings.provider_fallbacks[2].provider_config == {}


def test_fallback_config_is_a_read_only_copy() -> None:
    config = {"max_tokens": 512, "api_key": "sk-secret"}
    fallback = load_settings(
        provider_fallbacks=({"provider": "openai:gpt-4.1-mini", "provider_config": config},)
    ).provider_fallbacks[0]
    config["max_tokens"] = 1
    assert isinstance(fallback.provider_config, MappingProxyType)
    assert fallback.provider_config["max_tokens"] == 512
    with pytest.raises(TypeError):
        fallback.provider_config["max_tokens"] = 2  # type: ignore[index]
    assert "sk-secret" not in repr(fallback)


def test_fallbacks_given_as_dataclasses_a_tuple_or_none() -> None:
    fallbacks = (FallbackProvider(provider="ollama:qwen2.5"),)
    assert ChatSettings(provider_fallbacks=fallbacks).provider_fallbacks == fallbacks
    assert load_settings(provider_fallbacks=list(fallbacks)).provider_fallbacks == fallbacks
    assert load_settings(provider_fallbacks=None).provider_fallbacks == ()
    five = [f"ollama:model{index}" for index in range(5)]
    assert len(load_settings(provider_fallbacks=five).provider_fallbacks) == 5


def test_fallbacks_round_trip_and_keep_keys_out_of_the_repr() -> None:
    settings = load_settings(
        provider_fallbacks=[
            {"provider": "openai:gpt-4.1-mini", "provider_config": {"api_key": "sk-secret"}}
        ]
    )
    assert settings.to_dict()["provider_fallbacks"] == [
        {"provider": "openai:gpt-4.1-mini", "provider_config": {"api_key": "sk-secret"}}
    ]
    assert load_settings(settings.to_dict()) == settings
    assert "provider_fallbacks" in repr(settings)
    assert "sk-secret" not in repr(settings)


def test_fallbacks_replace_as_a_whole_across_layers(tmp_path: Path) -> None:
    path = write(tmp_path, "provider_fallbacks: [openai:gpt-4.1-mini, ollama:qwen2.5]\n")
    assert [item.provider for item in load_settings(path).provider_fallbacks] == [
        "openai:gpt-4.1-mini",
        "ollama:qwen2.5",
    ]
    settings = load_settings(path, provider_fallbacks=["anthropic:claude-3-5-haiku-latest"])
    assert settings.provider_fallbacks == (
        FallbackProvider(provider="anthropic:claude-3-5-haiku-latest"),
    )
    assert settings.replace(provider_fallbacks=[]).provider_fallbacks == ()


@pytest.mark.parametrize(
    ("value", "key", "fragments"),
    [
        ("openai:gpt-4.1-mini", "provider_fallbacks", ["a list of at most 5", "(str)"]),
        ({"provider": "ollama:x"}, "provider_fallbacks", ["a list of at most 5", "(dict)"]),
        (["ollama:x"] * 6, "provider_fallbacks", ["a list of at most 5"]),
        ([""], "provider_fallbacks[0]", ["a provider spec string", "'' (str)"]),
        (["ollama:x", " ollama:y"], "provider_fallbacks[1]", ["without surrounding whitespace"]),
        (["ollama:x", 3], "provider_fallbacks[1]", ["a provider spec string or a mapping"]),
        ([None], "provider_fallbacks[0]", ["None"]),
        ([{"provider": ""}], "provider_fallbacks[0].provider", ["a provider spec string"]),
        (["a:b", {"provider": 3}], "provider_fallbacks[1].provider", ["3 (int)"]),
        ([{"provider": "a:b "}], "provider_fallbacks[0].provider", ["surrounding whitespace"]),
        ([{"provider_config": {}}], "provider_fallbacks[0].provider", ["is missing"]),
        (
            [{"provider": "a:b", "provider_config": "x"}],
            "provider_fallbacks[0].provider_config",
            ["a mapping with string keys"],
        ),
        (
            [{"provider": "a:b", "config": {}}],
            "provider_fallbacks[0].config",
            ["Did you mean 'provider_config'?", "Allowed: provider, provider_config"],
        ),
        ([{"providr": "a:b"}], "provider_fallbacks[0].providr", ["Did you mean 'provider'"]),
    ],
)
def test_bad_fallbacks_name_their_key(value: object, key: str, fragments: list[str]) -> None:
    for error in (error_for({"provider_fallbacks": value}), error_for(provider_fallbacks=value)):
        assert_names(error, key, fragments)


def test_fallback_checks_when_built_directly() -> None:
    with pytest.raises(ChatConfigurationError, match=r"provider_fallbacks\.provider'"):
        FallbackProvider(provider="")
    with pytest.raises(ChatConfigurationError, match=r"provider_fallbacks\.provider_config'"):
        FallbackProvider(provider="a:b", provider_config=["x"])  # type: ignore[arg-type]


# -- loop_guard ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "block",
    [
        {"enabled": False},
        {"model_requests": 1},
        {"model_requests": 200},
        {"tool_calls": 1},
        {"tool_calls": 500},
        {"tokens": 1_000},
        {"tokens": 10_000_000},
        {"seconds": 1},
        {"seconds": 3600},
        {"seconds": 2.5},
    ],
)
def test_loop_guard_bounds_are_allowed(block: dict[str, Any]) -> None:
    settings = load_settings(loop_guard=block)
    for name, value in block.items():
        assert getattr(settings.loop_guard, name) == value


@pytest.mark.parametrize(
    ("block", "key", "fragments"),
    [
        ({"enabled": 1}, "loop_guard.enabled", ["true or false", "1 (int)"]),
        ({"enabled": "yes"}, "loop_guard.enabled", ["true or false", "'yes'"]),
        ({"model_requests": 0}, "loop_guard.model_requests", ["an integer from 1 to 200"]),
        ({"model_requests": 201}, "loop_guard.model_requests", ["an integer from 1 to 200"]),
        ({"model_requests": True}, "loop_guard.model_requests", ["bool"]),
        ({"tool_calls": 501}, "loop_guard.tool_calls", ["an integer from 1 to 500"]),
        ({"tool_calls": 2.5}, "loop_guard.tool_calls", ["an integer from 1 to 500", "2.5"]),
        ({"tokens": 999}, "loop_guard.tokens", ["an integer from 1000 to 10000000"]),
        ({"tokens": "200000"}, "loop_guard.tokens", ["'200000'"]),
        ({"seconds": 0}, "loop_guard.seconds", ["a number from 1 to 3600"]),
        ({"seconds": 3601}, "loop_guard.seconds", ["a number from 1 to 3600"]),
        ({"seconds": float("nan")}, "loop_guard.seconds", ["a number"]),
        ({"seconds": None}, "loop_guard.seconds", ["None"]),
        ({"tool_call": 3}, "loop_guard.tool_call", ["Did you mean 'tool_calls'?", "Allowed"]),
        ({"max_seconds": 3}, "loop_guard.max_seconds", ["Did you mean 'seconds'?"]),
        ({1: 3}, "loop_guard", ["names must be strings"]),
    ],
)
def test_bad_loop_guard_names_its_key(
    block: dict[Any, Any], key: str, fragments: list[str]
) -> None:
    for error in (error_for({"loop_guard": block}), error_for(loop_guard=block)):
        assert_names(error, key, fragments)


@pytest.mark.parametrize("value", [False, 16, "on", ["seconds"]])
def test_loop_guard_must_be_a_mapping(value: object) -> None:
    error = error_for(loop_guard=value)
    assert error.key == "loop_guard"
    assert "a mapping with keys from enabled, model_requests, tool_calls" in str(error)


def test_loop_guard_checks_when_built_directly() -> None:
    with pytest.raises(ChatConfigurationError, match=r"loop_guard\.seconds' must be a number"):
        LoopGuardSettings(seconds=0)
    with pytest.raises(ChatConfigurationError, match=r"loop_guard\.tokens"):
        ChatSettings(loop_guard=LoopGuardSettings(tokens=10))
    assert ChatSettings(loop_guard=LoopGuardSettings(tool_calls=5)).loop_guard.tool_calls == 5


def test_loop_guard_merges_key_by_key_across_layers(tmp_path: Path) -> None:
    path = write(tmp_path, "loop_guard:\n  model_requests: 8\n  seconds: 60\n")
    settings = load_settings(path, loop_guard={"tool_calls": 10})
    assert settings.loop_guard == LoopGuardSettings(model_requests=8, tool_calls=10, seconds=60)
    again = settings.replace(loop_guard={"enabled": False})
    assert again.loop_guard == LoopGuardSettings(
        enabled=False, model_requests=8, tool_calls=10, seconds=60
    )
    assert "loop_guard" in repr(again)
    assert load_settings(again.to_dict()) == again


def test_loop_guard_in_a_wrapped_mapping_then_a_dict_layer() -> None:
    source = {"GENERAL_MANAGER": {"CHAT": {"loop_guard": {"tokens": 5_000}}}}
    settings = load_settings(source, loop_guard={"seconds": 30})
    assert (settings.loop_guard.tokens, settings.loop_guard.seconds) == (5_000, 30)
    assert settings.loop_guard.model_requests == 16


def test_bad_loop_guard_in_a_file_names_the_file_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, "loop_guard: {seconds: 0}\n")
    error = error_for(path)
    assert error.key == "loop_guard.seconds"
    assert str(path) in str(error)


# -- completion_gates ------------------------------------------------------------------------


def test_completion_gates_false_switches_all_off_and_true_all_on() -> None:
    off = load_settings(completion_gates=False).completion_gates
    assert off == CompletionGateSettings(
        phantom_write=False, grounded_numbers=False, empty_data=False
    )
    assert off.enabled == frozenset()
    every = CompletionGateSettings(phantom_write=True, grounded_numbers=True, empty_data=True)
    assert load_settings(completion_gates=True).completion_gates == every


def test_completion_gates_false_in_yaml_then_one_gate_back_on(tmp_path: Path) -> None:
    path = write(tmp_path, "completion_gates: false\n")
    settings = load_settings(path, completion_gates={"empty_data": True})
    assert settings.completion_gates.enabled == frozenset({"empty_data"})
    mapping = load_settings({"completion_gates": False}, completion_gates={"empty_data": True})
    assert mapping.completion_gates == settings.completion_gates


def test_completion_gates_merge_key_by_key(tmp_path: Path) -> None:
    path = write(tmp_path, "completion_gates: {phantom_write: false}\n")
    settings = load_settings(path, completion_gates={"grounded_numbers": False})
    assert settings.completion_gates.enabled == frozenset({"empty_data"})
    assert settings.to_dict()["completion_gates"] == {
        "phantom_write": False,
        "grounded_numbers": False,
        "empty_data": True,
    }
    assert load_settings(settings.to_dict()) == settings
    assert ChatSettings(completion_gates=False).completion_gates.enabled == frozenset()


@pytest.mark.parametrize(
    ("value", "key", "fragments"),
    [
        ({"phantom_write": 0}, "completion_gates.phantom_write", ["true or false", "0 (int)"]),
        ({"empty_data": "no"}, "completion_gates.empty_data", ["true or false", "'no'"]),
        ({"grounded_numbers": None}, "completion_gates.grounded_numbers", ["None"]),
        ({"phantom_writes": True}, "completion_gates.phantom_writes", ["'phantom_write'?"]),
        ({"numbers": True}, "completion_gates.numbers", ["Allowed: empty_data"]),
        ("off", "completion_gates", ["true, false or a mapping with keys from phantom_write"]),
        (0, "completion_gates", ["true, false or a mapping", "0 (int)"]),
        (["empty_data"], "completion_gates", ["true, false or a mapping"]),
    ],
)
def test_bad_completion_gates_name_their_key(value: object, key: str, fragments: list[str]) -> None:
    for error in (error_for({"completion_gates": value}), error_for(completion_gates=value)):
        assert_names(error, key, fragments)


# -- injection -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "block",
    [
        {"mutation_intent": False},
        {"question": "refuse"},
        {"question": "log"},
        {"question_threshold": 0},
        {"question_threshold": 1},
        {"question_threshold": 0.75},
    ],
)
def test_injection_valid_values(block: dict[str, Any]) -> None:
    settings = load_settings(injection=block)
    for name, value in block.items():
        assert getattr(settings.injection, name) == value


def test_injection_merges_key_by_key(tmp_path: Path) -> None:
    path = write(tmp_path, "injection:\n  question: refuse\n")
    settings = load_settings(path, injection={"question_threshold": 0.8})
    assert settings.injection == InjectionSettings(question="refuse", question_threshold=0.8)
    assert settings.replace(injection={"mutation_intent": False}).injection == InjectionSettings(
        mutation_intent=False, question="refuse", question_threshold=0.8
    )


@pytest.mark.parametrize(
    ("block", "key", "fragments"),
    [
        ({"mutation_intent": 1}, "injection.mutation_intent", ["true or false", "1 (int)"]),
        ({"mutation_intent": "yes"}, "injection.mutation_intent", ["true or false"]),
        ({"question": "block"}, "injection.question", ["one of 'log', 'refuse'", "'block'"]),
        ({"question": "refus"}, "injection.question", ["Did you mean 'refuse'?"]),
        ({"question": True}, "injection.question", ["one of 'log', 'refuse'", "bool"]),
        ({"question_threshold": 1.5}, "injection.question_threshold", ["a number from 0 to 1"]),
        ({"question_threshold": -0.1}, "injection.question_threshold", ["from 0 to 1"]),
        ({"question_threshold": True}, "injection.question_threshold", ["bool"]),
        (
            {"question_treshold": 0.5},
            "injection.question_treshold",
            ["Did you mean 'question_threshold'"],
        ),
        ({"mutation": True}, "injection.mutation", ["Did you mean 'mutation_intent'"]),
    ],
)
def test_bad_injection_names_its_key(block: dict[str, Any], key: str, fragments: list[str]) -> None:
    for error in (error_for({"injection": block}), error_for(injection=block)):
        assert_names(error, key, fragments)


def test_injection_must_be_a_mapping_and_checks_when_built() -> None:
    error = error_for(injection="refuse")
    assert_names(
        error, "injection", ["a mapping with keys from mutation_intent, flag_results, question"]
    )
    with pytest.raises(ChatConfigurationError, match=r"injection\.question_threshold'"):
        InjectionSettings(question_threshold=2)


# -- telemetry -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "stored"),
    [("auto", "auto"), ("on", "on"), ("off", "off"), (True, "on"), (False, "off")],
)
def test_telemetry_llm_spans(given: object, stored: str) -> None:
    assert load_settings(telemetry={"llm_spans": given}).telemetry.llm_spans == stored


def test_telemetry_bare_yaml_on_and_off(tmp_path: Path) -> None:
    # YAML 1.1 reads a bare `off` as false: it still means "off".
    assert load_settings(write(tmp_path, "telemetry: {llm_spans: off}\n")).telemetry == (
        TelemetrySettings(llm_spans="off")
    )
    assert load_settings(write(tmp_path, "telemetry: {llm_spans: on}\n")).telemetry == (
        TelemetrySettings(llm_spans="on")
    )


@pytest.mark.parametrize(
    ("value", "key", "fragments"),
    [
        ({"llm_spans": "yes"}, "telemetry.llm_spans", ["one of 'auto', 'on', 'off'", "'yes'"]),
        ({"llm_spans": 1}, "telemetry.llm_spans", ["one of 'auto', 'on', 'off'", "1 (int)"]),
        ({"llm_spans": "atuo"}, "telemetry.llm_spans", ["Did you mean 'auto'?"]),
        ({"llm_span": "on"}, "telemetry.llm_span", ["Did you mean 'llm_spans'?"]),
        ("off", "telemetry", ["a mapping with keys from llm_spans"]),
    ],
)
def test_bad_telemetry_names_its_key(value: object, key: str, fragments: list[str]) -> None:
    for error in (error_for({"telemetry": value}), error_for(telemetry=value)):
        assert_names(error, key, fragments)


# -- all blocks together ---------------------------------------------------------------------


def test_one_block_layer_keeps_the_other_blocks(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "provider_fallbacks: [ollama:qwen2.5]\n"
        "loop_guard: {tokens: 50000}\n"
        "completion_gates: {grounded_numbers: false}\n"
        "injection: {question: refuse}\n"
        "telemetry: {llm_spans: 'on'}\n",
    )
    settings = load_settings(path, loop_guard={"seconds": 10})
    assert settings.provider_fallbacks == (FallbackProvider(provider="ollama:qwen2.5"),)
    assert settings.loop_guard == LoopGuardSettings(tokens=50_000, seconds=10)
    assert settings.completion_gates.enabled == frozenset({"phantom_write", "empty_data"})
    assert settings.injection.question == "refuse"
    assert settings.telemetry.llm_spans == "on"
    assert load_settings(settings.to_dict()) == settings
    assert load_settings(settings) == settings


def test_guard_settings_are_frozen() -> None:
    for block in (
        LoopGuardSettings(),
        CompletionGateSettings(),
        InjectionSettings(),
        TelemetrySettings(),
        FallbackProvider(provider="ollama:qwen2.5"),
    ):
        name = next(iter(block.__dataclass_fields__))
        with pytest.raises(AttributeError):
            setattr(block, name, getattr(block, name))
