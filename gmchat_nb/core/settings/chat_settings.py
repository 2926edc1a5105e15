"""The settings themselves: :class:`ChatSettings` with its nested ``rate_limit`` and ``audit``
blocks, the check of every key (:data:`CHECKS`), :data:`DEFAULT_SETTINGS`, and the plain and
masked forms a settings object is written or shown in.

A settings object checks every key when it is built (the checks live in :mod:`.checks`);
:meth:`ChatSettings.replace` goes through :func:`~gmchat_nb.core.settings.load_settings`, imported
when called because the loader builds settings from this module.

Over 400 lines: every key's field and its check are declared here side by side, so a setting
cannot exist without its check (tests/core/test_settings.py holds the two lists together).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, cast

from ..project.names import did_you_mean, quoted_or
from ..project.targets import DEMO_TARGETS
from . import checks, costs, guards, knowledge
from .checks import ChatConfigurationError, check_known, invalid, shown
from .guards import CompletionGateSettings, InjectionSettings, LoopGuardSettings, TelemetrySettings
from .planned import PlannedSettings, check_planned, planned_settings
from .retries import ProviderRetrySettings, provider_retries

if TYPE_CHECKING:
    from ..project import Project

__all__ = [
    "AUDIT_LEVELS",
    "CHECKS",
    "DEFAULT_SETTINGS",
    "DEMO_PROJECTS",
    "MCP_STDIO_DECISIONS",
    "TOOL_STRATEGIES",
    "AuditLevel",
    "AuditSettings",
    "ChatSettings",
    "RateLimitSettings",
    "ToolStrategy",
    "fields_of",
    "rate_limit_layer",
]

AuditLevel = Literal["off", "messages", "tool_calls"]
ToolStrategy = Literal["discovery", "direct"]

AUDIT_LEVELS: tuple[AuditLevel, ...] = ("off", "messages", "tool_calls")
TOOL_STRATEGIES: tuple[ToolStrategy, ...] = ("discovery", "direct")
MCP_STDIO_DECISIONS: tuple[str, ...] = ("elicitation", "person")

# The spec documents level="all" while GeneralManager's code checks "tool_calls"; accept both.
_AUDIT_LEVEL_ALIASES: Mapping[str, AuditLevel] = MappingProxyType({"all": "tool_calls"})

# The demo projects by name ("demo" is "inventory"), as every surface spells them.
DEMO_PROJECTS = DEMO_TARGETS

# Old per-hour rate-limit names inside ``rate_limit``: old name -> new counter.
_HOURLY_ALIASES: Mapping[str, str] = MappingProxyType(
    {"max_requests_per_hour": "requests", "max_tokens_per_hour": "tokens"}
)
_HOUR = 3600

# Mapping values whose key contains one of these are masked in ChatSettings' repr, because a
# settings object shown in a notebook cell must not print an API key.
_SECRET_TERMS = ("password", "secret", "token", "key", "credential", "authorization", "cookie")

# -- the settings ----------------------------------------------------------------------------


def fields_of(cls: type) -> tuple[str, ...]:
    """The field names of a settings dataclass, in order."""
    return tuple(item.name for item in dataclasses.fields(cls))


@dataclass(frozen=True, slots=True, kw_only=True)
class RateLimitSettings:
    """Per-scope budgets in a fixed window (``rate_limit``).

    A positive integer is a budget; ``None``, 0 and negative values mean no budget and are stored
    as ``None``. ``requests`` counts user messages; the token counters count provider usage.
    """

    requests: int | None = 60
    window_seconds: int = _HOUR
    tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    """USD of model requests per window (priced as ``done.cost`` prices them), or no budget."""

    def __post_init__(self) -> None:
        for name in ("requests", "tokens", "input_tokens", "output_tokens"):
            object.__setattr__(self, name, checks.budget(f"rate_limit.{name}", getattr(self, name)))
        object.__setattr__(self, "cost", costs.cost_budget("rate_limit.cost", self.cost))
        window = checks.int_at_least(1)("rate_limit.window_seconds", self.window_seconds)
        object.__setattr__(self, "window_seconds", window)


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditSettings:
    """What the audit log records (``audit``).

    ``level`` is ``"off"``, ``"messages"`` (user and assistant messages) or ``"tool_calls"``
    (everything; ``"all"`` is accepted and stored as ``"tool_calls"``). ``logger`` is ``None``, a
    callable, or a dotted path kept as given (the audit module resolves it).
    ``max_result_size`` caps serialized tool results; values whose key contains one of
    ``redact_fields`` (case-insensitively) are redacted.
    """

    enabled: bool = False
    level: AuditLevel = "off"
    logger: Callable[..., Any] | str | None = None
    max_result_size: int = 4096
    redact_fields: tuple[str, ...] = ("password", "secret", "token", "key", "credential")

    def __post_init__(self) -> None:
        object.__setattr__(self, "enabled", checks.boolean("audit.enabled", self.enabled))
        level = checks.choice(AUDIT_LEVELS, _AUDIT_LEVEL_ALIASES)("audit.level", self.level)
        object.__setattr__(self, "level", level)
        object.__setattr__(
            self, "logger", checks.optional_callable_ref("audit.logger", self.logger)
        )
        size = checks.int_at_least(1)("audit.max_result_size", self.max_result_size)
        object.__setattr__(self, "max_result_size", size)
        # An empty term is a substring of every key and would redact everything.
        terms = checks.names("audit.redact_fields", self.redact_fields)
        object.__setattr__(self, "redact_fields", terms)


def rate_limit_layer(prefix: str, block: Mapping[Any, Any]) -> dict[str, Any]:
    """One ``rate_limit`` mapping with its keys checked and the per-hour names mapped."""
    check_known(prefix, block, (*fields_of(RateLimitSettings), *_HOURLY_ALIASES), "setting")
    layer = {name: value for name, value in block.items() if name not in _HOURLY_ALIASES}
    for old, new in _HOURLY_ALIASES.items():
        if old not in block or new in block:
            continue
        window = block.get("window_seconds", _HOUR)
        if window != _HOUR:
            # A per-hour number under another window would silently change its meaning.
            raise ChatConfigurationError(
                f"Chat setting '{prefix}{old}' is a per-hour budget, but "
                f"'{prefix}window_seconds' is {shown(window)}; give '{prefix}{new}' instead.",
                key=f"{prefix}{old}",
            )
        layer[new] = checks.budget(f"{prefix}{old}", block[old])
        layer["window_seconds"] = _HOUR
    return layer


def _nested(
    key: str, value: object, cls: type[RateLimitSettings] | type[AuditSettings]
) -> RateLimitSettings | AuditSettings:
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        if cls is RateLimitSettings:
            return RateLimitSettings(**rate_limit_layer(f"{key}.", value))
        check_known(f"{key}.", value, fields_of(cls), "setting")
        return cls(**value)
    names = ", ".join(fields_of(cls))
    raise invalid(key, value, f"a mapping with keys from {names}")


def _rate_limit(key: str, value: object) -> RateLimitSettings:
    return cast(RateLimitSettings, _nested(key, value, RateLimitSettings))


def _audit(key: str, value: object) -> AuditSettings:
    return cast(AuditSettings, _nested(key, value, AuditSettings))


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class ChatSettings:
    """Validated, effectively immutable chat settings.

    The keys, their meaning and their defaults are GeneralManager 0.87.1's ``CHAT`` settings
    (its chat API reference, "Settings"), except:

    * ``url`` defaults to ``"gmchat/chat/"``: the routes live under Jupyter's ``base_url``
      rather than at a Django root, so the path is relative (slashes are normalised to
      ``"path/"``).
    * ``provider`` defaults to ``"offline"`` and is a gmchat provider spec (``"openai:gpt-4.1-mini"``,
      ``"anthropic:MODEL"``, ``"ollama:qwen3:8b"``, a dotted class path, ``"scripted:FILE.yaml"``,
      ``"replay:FILE.jsonl"``, ``"offline"``) or a provider instance or class, so that nothing
      needs a network or a key by default.
    * ``confirm_timeout_seconds``, ``query_timeout_seconds`` and ``ttl_hours`` accept fractions.
    * ``audit.level`` is stored as ``"tool_calls"`` when given as ``"all"``.

    Added for gmchat_nb: ``project`` (a demo name or an http(s) GraphQL URL), ``exposed_managers``
    (``None`` = all the project lists), ``store`` (``None`` = the default SQLite file, a path,
    ``":memory:"`` or a ``postgresql://`` URL), ``hooks`` (:data:`HOOK_EVENTS` -> callables or
    dotted paths), ``headers`` (HTTP headers sent to a remote project), ``provider_retries``
    (:class:`~.retries.ProviderRetrySettings`) and a turn's defences (:mod:`.guards`):
    ``provider_fallbacks``, ``loop_guard``, ``completion_gates``, ``injection``, ``telemetry``;
    knowledge (:mod:`gmchat_nb.core.knowledge`): ``knowledge`` (recall before each turn: ``on``,
    ``off``, ``keyword``, ``hybrid``) and ``project_id`` (the project's identity its knowledge
    and conversations are kept under; ``None``: where the project is); ``mcp_stdio_decisions``
    (who decides an agent's change over ``gmchat mcp``: ``elicitation``, the agent's host asking
    its person, or ``person``, a person in a notebook or the side panel on the same store).

    Sequences are stored as tuples and mappings as read-only deep copies. ``provider_profiles``
    and ``planned`` are checked key by key (:mod:`.planned`); :attr:`planned_settings` is their
    typed view. Build one with :func:`load_settings` or directly; both validate.
    """

    enabled: bool = False
    url: str = "gmchat/chat/"
    provider: object = "offline"
    provider_config: Mapping[str, Any] = field(default_factory=_empty)
    provider_profiles: Mapping[str, Mapping[str, Any]] = field(default_factory=_empty)
    planned: Mapping[str, Any] = field(default_factory=_empty)
    permission: Callable[..., Any] | str | None = None
    allowed_origins: tuple[str, ...] | None = None
    allowed_mutations: tuple[str, ...] = ()
    confirm_mutations: tuple[str, ...] = ()
    confirm_timeout_seconds: float = 30
    max_results: int = 200
    query_timeout_seconds: float | None = None
    max_retries_per_message: int = 3
    max_mutations_per_message: int = 8
    max_total_rounds_per_message: int | None = None
    tool_strategy: ToolStrategy = "discovery"
    recover_missing_tool_calls: bool = False
    charts: bool = True
    prices: Mapping[str, Mapping[str, float | int]] = field(default_factory=_empty)
    system_prompt: str = ""
    max_recent_messages: int = 20
    summarize_after: int = 10
    ttl_hours: float = 24
    rate_limit: RateLimitSettings = field(default_factory=RateLimitSettings)
    audit: AuditSettings = field(default_factory=AuditSettings)
    project: str = "demo"
    project_id: str | None = None
    knowledge: str = "on"
    mcp_stdio_decisions: str = "elicitation"
    exposed_managers: tuple[str, ...] | None = None
    store: str | None = None
    hooks: Mapping[str, tuple[Callable[..., Any] | str, ...]] = field(default_factory=_empty)
    headers: Mapping[str, str] = field(default_factory=_empty)
    provider_retries: ProviderRetrySettings = field(default_factory=ProviderRetrySettings)
    provider_fallbacks: tuple[guards.FallbackProvider, ...] = ()
    loop_guard: LoopGuardSettings = field(default_factory=LoopGuardSettings)
    completion_gates: CompletionGateSettings = field(default_factory=CompletionGateSettings)
    injection: InjectionSettings = field(default_factory=InjectionSettings)
    telemetry: TelemetrySettings = field(default_factory=TelemetrySettings)

    def __post_init__(self) -> None:
        for name, check in CHECKS.items():
            object.__setattr__(self, name, check(name, getattr(self, name)))
        missing = [name for name in self.confirm_mutations if name not in self.allowed_mutations]
        if missing:
            raise ChatConfigurationError(
                f"Chat setting 'confirm_mutations' lists {', '.join(map(repr, missing))}, which "
                f"must also be in 'allowed_mutations' (now: "
                f"{', '.join(map(repr, self.allowed_mutations)) or 'empty'}).",
                key="confirm_mutations",
            )
        self.planned_settings  # noqa: B018  (checks the roles against the profiles)

    @property
    def planned_settings(self) -> PlannedSettings:
        """``planned`` with its roles resolved to provider profiles (the implicit ``default``
        profile when ``provider_profiles`` is omitted)."""
        return planned_settings(
            self.planned, self.provider_profiles, self.provider, self.provider_config
        )

    @property
    def max_rounds(self) -> int:
        """The provider-round cap of one turn: ``max_total_rounds_per_message`` when set, else
        ``max_retries_per_message + max_mutations_per_message + 2`` (the spec's rule)."""
        if self.max_total_rounds_per_message is not None:
            return self.max_total_rounds_per_message
        return self.max_retries_per_message + self.max_mutations_per_message + 2

    def replace(self, **changes: Any) -> ChatSettings:
        """A validated copy with ``changes`` applied the way :func:`load_settings` applies
        keyword overrides (``rate_limit`` and ``audit`` mappings merge into the current ones)."""
        from .loading import load_settings  # the loader builds ChatSettings: import it late

        return load_settings(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain JSON-able values that :func:`load_settings` reads back.

        Tuples become lists and mappings dicts; callables and classes appear as their dotted
        name (``module.qualname``), other objects (a provider instance) as their class's.
        Credentials in ``provider_config`` or ``headers`` are included: do not display it.
        """
        return {name: _plain(getattr(self, name)) for name in fields_of(ChatSettings)}

    def validate_for(self, project: Project) -> None:
        """Raise :class:`ChatConfigurationError` unless every allowed mutation exists in
        ``project`` and belongs to a manager it exposes (a hidden manager's mutations are not
        in ``project.index.mutations``), with "did you mean" suggestions."""
        # confirm_mutations is a subset of allowed_mutations, so checking the latter covers both.
        known = project.index.mutations
        unknown = [name for name in self.allowed_mutations if name not in known]
        if not unknown:
            return
        details = []
        for name in unknown:
            suggestions = did_you_mean(name, known)
            details.append(
                f"'{name}' (did you mean {quoted_or(suggestions)}?)" if suggestions else f"'{name}'"
            )
        listed = ", ".join(sorted(known)) or "none"
        raise ChatConfigurationError(
            f"Chat setting 'allowed_mutations' names mutations the project does not expose: "
            f"{', '.join(details)}. Exposed mutations: {listed}.",
            key="allowed_mutations",
        )

    def __repr__(self) -> str:
        # Only what differs from the defaults, and never a credential: a settings object is
        # something people print in notebooks.
        changed: list[str] = []
        for name in fields_of(ChatSettings):
            value = getattr(self, name)
            if value == getattr(DEFAULT_SETTINGS, name):
                continue
            if name == "headers":
                value = dict.fromkeys(value, "***")
            elif name in ("provider_config", "provider_profiles", "planned"):
                value = _masked(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            changed.append(f"{name}={value!r}")
        return f"ChatSettings({', '.join(changed)})"


# The check of every key of ChatSettings: (dotted key, raw value) -> normalised value.
CHECKS: Mapping[str, Callable[[str, Any], Any]] = MappingProxyType(
    {
        "enabled": checks.boolean,
        "url": checks.url_path,
        "provider": checks.provider,
        "provider_config": checks.mapping,
        "provider_profiles": checks.profiles,
        "planned": lambda _key, value: check_planned(value),
        "permission": checks.optional_callable_ref,
        "allowed_origins": checks.optional_names,
        "allowed_mutations": checks.names,
        "confirm_mutations": checks.names,
        "confirm_timeout_seconds": checks.positive_number,
        "max_results": checks.int_at_least(1),
        "query_timeout_seconds": checks.optional_positive_number,
        "max_retries_per_message": checks.int_at_least(0),
        "max_mutations_per_message": checks.int_at_least(0),
        "max_total_rounds_per_message": checks.optional_int_at_least(1),
        "tool_strategy": checks.choice(TOOL_STRATEGIES),
        "recover_missing_tool_calls": checks.boolean,
        "charts": checks.boolean,
        "prices": costs.prices,
        "system_prompt": checks.string,
        "max_recent_messages": checks.int_at_least(1),
        "summarize_after": checks.int_at_least(1),
        "ttl_hours": checks.positive_number,
        "rate_limit": _rate_limit,
        "audit": _audit,
        "project": checks.project,
        "project_id": knowledge.optional_string,
        "knowledge": knowledge.knowledge,
        "mcp_stdio_decisions": checks.choice(MCP_STDIO_DECISIONS),
        "exposed_managers": checks.optional_names,
        "store": checks.store,
        "hooks": checks.hooks,
        "headers": checks.headers,
        "provider_retries": provider_retries,
        "provider_fallbacks": guards.provider_fallbacks,
        "loop_guard": guards.loop_guard,
        "completion_gates": guards.completion_gates,
        "injection": guards.injection,
        "telemetry": guards.telemetry,
    }
)

DEFAULT_SETTINGS = ChatSettings()
"""The spec's defaults (with gmchat_nb's ``url`` and ``provider``)."""


def _dotted_name(obj: object) -> str:
    module = getattr(obj, "__module__", None) or "builtins"
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}.{qualname}"


def _plain(value: object) -> Any:
    if isinstance(value, RateLimitSettings | AuditSettings | ProviderRetrySettings | guards.Block):
        return {name: _plain(getattr(value, name)) for name in fields_of(type(value))}
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {str(name): _plain(item) for name, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(item) for item in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if callable(value):
        return _dotted_name(value)
    return _dotted_name(type(value))


def _masked(value: object) -> object:
    if isinstance(value, Mapping):
        return {
            name: "***"
            if isinstance(name, str) and any(term in name.lower() for term in _SECRET_TERMS)
            else _masked(item)
            for name, item in value.items()
        }
    return value
