"""The settings of a turn that defends itself (:mod:`gmchat_nb.core.guards` does the defending;
the session hands it these settings).

* ``provider_fallbacks`` -- the providers asked, in order, when the provider still fails after
  its retries (or its context is too small): :class:`FallbackProvider` entries, at most 5;
* ``loop_guard`` -- :class:`LoopGuardSettings`, the per-turn budgets of the loop guard;
* ``completion_gates`` -- :class:`CompletionGateSettings`, the checks an answer passes before a
  turn may end with it;
* ``injection`` -- :class:`InjectionSettings`, what is done about instructions hidden in data;
* ``telemetry`` -- :class:`TelemetrySettings`, whether model requests become spans.

Each block is a frozen dataclass that checks its values when built, and a converter (the entry
of :data:`~.chat_settings.CHECKS`) that takes the dataclass itself or a mapping of its keys;
unknown keys are refused with a "did you mean", other values with an error naming the key.
Provider specs are not checked beyond being non-empty strings: the provider registry checks them
when it builds the provider.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, TypeVar, cast

from . import checks
from .checks import check_known, invalid

__all__ = [
    "COMPLETION_GATES",
    "FALLBACK_KEYS",
    "INJECTION_KEYS",
    "INJECTION_QUESTION_ACTIONS",
    "LLM_SPANS_MODES",
    "LOOP_GUARD_KEYS",
    "MAX_FALLBACKS",
    "MERGED_BLOCK_KEYS",
    "TELEMETRY_KEYS",
    "Block",
    "CompletionGateSettings",
    "FallbackProvider",
    "InjectionQuestionAction",
    "InjectionSettings",
    "LlmSpansMode",
    "LoopGuardSettings",
    "TelemetrySettings",
    "completion_gates",
    "injection",
    "loop_guard",
    "provider_fallbacks",
    "telemetry",
]

InjectionQuestionAction = Literal["log", "refuse"]
LlmSpansMode = Literal["auto", "on", "off"]

FALLBACK_KEYS = ("provider", "provider_config")
MAX_FALLBACKS = 5
LOOP_GUARD_KEYS = ("enabled", "model_requests", "tool_calls", "tokens", "seconds")
COMPLETION_GATES = ("phantom_write", "grounded_numbers", "empty_data")
INJECTION_KEYS = ("mutation_intent", "flag_results", "question", "question_threshold")
INJECTION_QUESTION_ACTIONS: tuple[InjectionQuestionAction, ...] = ("log", "refuse")
TELEMETRY_KEYS = ("llm_spans",)
LLM_SPANS_MODES: tuple[LlmSpansMode, ...] = ("auto", "on", "off")

# YAML 1.1 reads a bare `on` / `off` as a boolean: `llm_spans: off` means "off", not a typo.
_LLM_SPANS_BOOLEANS: Mapping[bool, LlmSpansMode] = MappingProxyType({True: "on", False: "off"})

_Block = TypeVar("_Block")


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


def _spec(key: str, value: object) -> str:
    """A provider spec: a non-empty string without surrounding whitespace."""
    if not isinstance(value, str) or not value or value != value.strip():
        raise invalid(
            key,
            value,
            "a provider spec string without surrounding whitespace "
            "('anthropic:claude-3-5-haiku-latest', 'openai:gpt-4.1-mini', 'ollama:qwen2.5')",
        )
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class FallbackProvider:
    """One entry of ``provider_fallbacks``: a provider spec and its ``provider_config`` (a
    read-only copy; left out of the repr, since it may hold an API key)."""

    provider: str
    provider_config: Mapping[str, Any] = field(default_factory=_empty, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "provider", _spec("provider_fallbacks.provider", self.provider))
        config = checks.mapping("provider_fallbacks.provider_config", self.provider_config)
        object.__setattr__(self, "provider_config", config)


def _fallback(key: str, value: object) -> FallbackProvider:
    """One ``provider_fallbacks`` entry (``key`` is ``provider_fallbacks[i]``)."""
    if isinstance(value, FallbackProvider):
        return value
    if isinstance(value, str):
        return FallbackProvider(provider=_spec(key, value))
    if isinstance(value, Mapping):
        check_known(f"{key}.", value, FALLBACK_KEYS, "setting")
        if "provider" not in value:
            raise checks.ChatConfigurationError(
                f"Chat setting '{key}.provider' is missing; give the fallback's provider spec.",
                key=f"{key}.provider",
            )
        spec = _spec(f"{key}.provider", value["provider"])
        config = checks.mapping(f"{key}.provider_config", value.get("provider_config"))
        return FallbackProvider(provider=spec, provider_config=config)
    raise invalid(key, value, "a provider spec string or a mapping (provider, provider_config)")


def provider_fallbacks(key: str, value: object) -> tuple[FallbackProvider, ...]:
    """A list (or tuple) of at most :data:`MAX_FALLBACKS` entries, each a provider spec string, a
    mapping ``{"provider": spec, "provider_config": {...}}`` or a :class:`FallbackProvider`;
    ``None`` is no fallbacks."""
    if value is None:
        return ()
    if not isinstance(value, list | tuple) or len(value) > MAX_FALLBACKS:
        raise invalid(key, value, f"a list of at most {MAX_FALLBACKS} provider specs or mappings")
    return tuple(_fallback(f"{key}[{index}]", item) for index, item in enumerate(value))


def _block(key: str, value: object, cls: type[_Block], keys: tuple[str, ...]) -> _Block:
    """``value`` as ``cls``: an instance as it is, or a mapping of ``keys`` (unknown keys
    refused with "did you mean")."""
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        check_known(f"{key}.", value, keys, "setting")
        return cast(_Block, cast(Any, cls)(**value))
    raise invalid(key, value, f"a mapping with keys from {', '.join(keys)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopGuardSettings:
    """``loop_guard``: ``enabled`` (true or false) and the budgets of one turn -- ``model_requests``
    (1 to 200, default 16), ``tool_calls`` (1 to 500, default 25), ``tokens`` (1,000 to
    10,000,000, default 200,000) and ``seconds`` of wall-clock time (1 to 3600, default 300)."""

    enabled: bool = True
    model_requests: int = 16
    tool_calls: int = 25
    tokens: int = 200_000
    seconds: float = 300

    def __post_init__(self) -> None:
        object.__setattr__(self, "enabled", checks.boolean("loop_guard.enabled", self.enabled))
        for name, low, high in (
            ("model_requests", 1, 200),
            ("tool_calls", 1, 500),
            ("tokens", 1_000, 10_000_000),
        ):
            budget = checks.int_between(low, high)(f"loop_guard.{name}", getattr(self, name))
            object.__setattr__(self, name, budget)
        seconds = checks.number_between(1, 3600)("loop_guard.seconds", self.seconds)
        object.__setattr__(self, "seconds", seconds)


def loop_guard(key: str, value: object) -> LoopGuardSettings:
    """A :class:`LoopGuardSettings`, or a mapping of its keys."""
    return _block(key, value, LoopGuardSettings, LOOP_GUARD_KEYS)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletionGateSettings:
    """``completion_gates``: which checks an answer must pass before the turn ends with it, each
    true or false -- ``phantom_write`` (no claim of a change that did not run; on by default),
    ``grounded_numbers`` (numbers come from the data read or follow from it, such as quantity
    times price summed or an average per group; off by default: an answer that asks back with an
    example, "e.g. quantity over 100", is sent back as ungrounded, and the offline provider answers
    that correction with a non-answer), ``empty_data`` (no answer invented over an empty result;
    on). ``completion_gates: false`` (or true) sets them all."""

    phantom_write: bool = True
    grounded_numbers: bool = False
    empty_data: bool = True

    def __post_init__(self) -> None:
        for name in COMPLETION_GATES:
            value = checks.boolean(f"completion_gates.{name}", getattr(self, name))
            object.__setattr__(self, name, value)

    @property
    def enabled(self) -> frozenset[str]:
        """The names of the gates switched on."""
        return frozenset(name for name in COMPLETION_GATES if getattr(self, name))


def completion_gates(key: str, value: object) -> CompletionGateSettings:
    """A :class:`CompletionGateSettings`, a mapping of its keys, or true / false for all."""
    if isinstance(value, bool):
        return CompletionGateSettings(**dict.fromkeys(COMPLETION_GATES, value))
    if not isinstance(value, CompletionGateSettings | Mapping):
        keys = ", ".join(COMPLETION_GATES)
        raise invalid(key, value, f"true, false or a mapping with keys from {keys}")
    return _block(key, value, CompletionGateSettings, COMPLETION_GATES)


@dataclass(frozen=True, slots=True, kw_only=True)
class InjectionSettings:
    """``injection``: ``mutation_intent`` (true or false, default true) guards changes against
    instructions found in data rather than in the user's question; ``question`` is what is done
    when the question itself scores at least ``question_threshold`` (0 to 1, default 0.5) as an
    injection -- ``"log"`` (the default) or ``"refuse"``; ``flag_results`` (default true) scans
    read results for text written for the model (flags on the tool card and in the trace)."""

    mutation_intent: bool = True
    flag_results: bool = True
    question: InjectionQuestionAction = "log"
    question_threshold: float = 0.5

    def __post_init__(self) -> None:
        intent = checks.boolean("injection.mutation_intent", self.mutation_intent)
        object.__setattr__(self, "mutation_intent", intent)
        flag = checks.boolean("injection.flag_results", self.flag_results)
        object.__setattr__(self, "flag_results", flag)
        action = checks.choice(INJECTION_QUESTION_ACTIONS)("injection.question", self.question)
        object.__setattr__(self, "question", action)
        threshold = checks.number_between(0, 1)(
            "injection.question_threshold", self.question_threshold
        )
        object.__setattr__(self, "question_threshold", threshold)


def injection(key: str, value: object) -> InjectionSettings:
    """An :class:`InjectionSettings`, or a mapping of its keys."""
    return _block(key, value, InjectionSettings, INJECTION_KEYS)


@dataclass(frozen=True, slots=True, kw_only=True)
class TelemetrySettings:
    """``telemetry``: ``llm_spans`` -- whether model requests are traced as spans: ``"auto"`` (the
    default), ``"on"`` or ``"off"``; YAML's bare ``on`` / ``off`` (read as true / false) mean the
    same."""

    llm_spans: LlmSpansMode = "auto"

    def __post_init__(self) -> None:
        mode: object = self.llm_spans
        if isinstance(mode, bool):
            mode = _LLM_SPANS_BOOLEANS[mode]
        object.__setattr__(
            self, "llm_spans", checks.choice(LLM_SPANS_MODES)("telemetry.llm_spans", mode)
        )


def telemetry(key: str, value: object) -> TelemetrySettings:
    """A :class:`TelemetrySettings`, or a mapping of its keys."""
    return _block(key, value, TelemetrySettings, TELEMETRY_KEYS)


Block = (
    FallbackProvider
    | LoopGuardSettings
    | CompletionGateSettings
    | InjectionSettings
    | TelemetrySettings
)
"""The dataclasses of this module, for ``isinstance`` (each one's plain form is a mapping of its
fields)."""

MERGED_BLOCK_KEYS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "loop_guard": LOOP_GUARD_KEYS,
        "completion_gates": COMPLETION_GATES,
        "injection": INJECTION_KEYS,
        "telemetry": TELEMETRY_KEYS,
    }
)
"""The blocks merged key by key across settings layers, with their keys (``provider_fallbacks``
replaces as a whole)."""
