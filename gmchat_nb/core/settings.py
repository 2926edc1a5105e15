"""Chat settings: GeneralManager's ``CHAT`` keys and defaults, loaded from YAML, dicts and kwargs.

:class:`ChatSettings` carries every top-level key of the spec's settings table with the spec's
name and default (the few deviations are listed on the class), plus the keys a notebook client
needs (``project``, ``exposed_managers``, ``store``, ``hooks``, ``headers``). A settings object is
validated when it is built and is effectively immutable: sequences are tuples and mappings are
read-only copies, so a session can share one without defensive copies.

:func:`load_settings` layers defaults, a source (a YAML file, a mapping — optionally wrapped as
``{"CHAT": ...}`` or ``{"GENERAL_MANAGER": {"CHAT": ...}}`` — or another ``ChatSettings``) and
keyword overrides, and understands GeneralManager's legacy aliases. Every problem is a
:class:`ChatConfigurationError` whose ``key`` is the dotted settings key and whose message says
what was given and what is allowed.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, cast

import yaml

from .project.names import did_you_mean, quoted_or, suggestion_hint
from .project.targets import DEMO_TARGETS, demo_name, describe_targets, is_graphql_url

if TYPE_CHECKING:
    from .project import Project

__all__ = [
    "AUDIT_LEVELS",
    "DEFAULT_SETTINGS",
    "DEMO_PROJECTS",
    "HOOK_EVENTS",
    "TOOL_STRATEGIES",
    "AuditLevel",
    "AuditSettings",
    "ChatConfigurationError",
    "ChatSettings",
    "RateLimitSettings",
    "ToolStrategy",
    "load_settings",
]

AuditLevel = Literal["off", "messages", "tool_calls"]
ToolStrategy = Literal["discovery", "direct"]

AUDIT_LEVELS: tuple[AuditLevel, ...] = ("off", "messages", "tool_calls")
TOOL_STRATEGIES: tuple[ToolStrategy, ...] = ("discovery", "direct")
HOOK_EVENTS: tuple[str, ...] = ("message_received", "tool_called", "mutation_executed", "error")

# The spec documents level="all" while GeneralManager's code checks "tool_calls"; accept both.
_AUDIT_LEVEL_ALIASES: Mapping[str, AuditLevel] = MappingProxyType({"all": "tool_calls"})

# The demo projects by name ("demo" is "inventory"), as every surface spells them.
DEMO_PROJECTS = DEMO_TARGETS

_DOTTED_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")

# GeneralManager's grouped spellings, mapped onto the flat keys when the flat key is absent.
_GROUP_ALIASES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "query_limits": ("max_results", "query_timeout_seconds", "max_retries_per_message"),
        "conversation": ("max_recent_messages", "summarize_after", "ttl_hours"),
    }
)
# Old per-hour rate-limit names inside ``rate_limit``: old name -> new counter.
_HOURLY_ALIASES: Mapping[str, str] = MappingProxyType(
    {"max_requests_per_hour": "requests", "max_tokens_per_hour": "tokens"}
)
_HOUR = 3600

# Mapping values whose key contains one of these are masked in ChatSettings' repr, because a
# settings object shown in a notebook cell must not print an API key.
_SECRET_TERMS = ("password", "secret", "token", "key", "credential", "authorization", "cookie")


class ChatConfigurationError(ValueError):
    """Invalid chat settings.

    ``key`` is the dotted settings key at fault (``"rate_limit.window_seconds"``), or ``""`` when
    the settings source as a whole is wrong (a missing file, invalid YAML, not a mapping). The
    message names the key, what was given and what is allowed.
    """

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


# -- value checks ----------------------------------------------------------------------------
# Each check takes the dotted key (for the error) and the raw value and returns the normalised
# value. They are idempotent, so a value that passed once passes again unchanged.


def _shown(value: object) -> str:
    """The given value for an error message: a short repr and its type."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} ({type(value).__name__})"


def _invalid(key: str, value: object, allowed: str) -> ChatConfigurationError:
    return ChatConfigurationError(
        f"Chat setting '{key}' must be {allowed}; got {_shown(value)}.", key=key
    )


def _is_int(value: object) -> bool:
    # bool is an int subclass, but `max_results: true` is a typo, not 1.
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def _bool(key: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise _invalid(key, value, "true or false")
    return value


def _int_at_least(minimum: int) -> Callable[[str, object], int]:
    def check(key: str, value: object) -> int:
        if not _is_int(value) or cast(int, value) < minimum:
            raise _invalid(key, value, f"an integer >= {minimum}")
        return cast(int, value)

    return check


def _optional_int_at_least(minimum: int) -> Callable[[str, object], int | None]:
    def check(key: str, value: object) -> int | None:
        if value is None:
            return None
        if not _is_int(value) or cast(int, value) < minimum:
            raise _invalid(key, value, f"null or an integer >= {minimum}")
        return cast(int, value)

    return check


def _positive_number(key: str, value: object) -> float:
    if not _is_number(value) or cast(float, value) <= 0:
        raise _invalid(key, value, "a number > 0")
    return cast(float, value)


def _optional_positive_number(key: str, value: object) -> float | None:
    if value is None:
        return None
    if not _is_number(value) or cast(float, value) <= 0:
        raise _invalid(key, value, "null or a number > 0")
    return cast(float, value)


def _budget(key: str, value: object) -> int | None:
    # The spec: None, zero and negative values create no budget; keep one spelling for "none".
    if value is None:
        return None
    if not _is_int(value):
        raise _invalid(key, value, "an integer (a positive budget; null, 0 or negative for none)")
    number = cast(int, value)
    return number if number > 0 else None


def _choice(
    allowed: tuple[str, ...], aliases: Mapping[str, str] | None = None
) -> Callable[[str, object], str]:
    def check(key: str, value: object) -> str:
        if isinstance(value, str):
            if value in allowed:
                return value
            if aliases and value in aliases:
                return aliases[value]
        names = ", ".join(repr(name) for name in (*allowed, *(aliases or {})))
        hint = suggestion_hint(did_you_mean(value, allowed)) if isinstance(value, str) else ""
        raise ChatConfigurationError(
            f"Chat setting '{key}' must be one of {names}; got {_shown(value)}.{hint}", key=key
        )

    return check


def _string(key: str, value: object) -> str:
    # An empty system_prompt in YAML (`system_prompt:`) loads as None and means "none".
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _invalid(key, value, "a string")
    return value


def _non_empty_string(key: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _invalid(key, value, "a non-empty string")
    return value


def _url_path(key: str, value: object) -> str:
    # Like GeneralManager, normalise slashes; routes are joined onto Jupyter's base_url.
    if not isinstance(value, str) or not value.strip("/ "):
        raise _invalid(key, value, "a non-empty URL path such as 'gmchat/chat/'")
    return value.strip().strip("/") + "/"


def _is_dotted_path(value: str) -> bool:
    return _DOTTED_PATH.fullmatch(value) is not None


def _callable_ref(key: str, value: object, *, optional: bool) -> Callable[..., Any] | str | None:
    if value is None and optional:
        return None
    if callable(value):
        return value
    if isinstance(value, str) and _is_dotted_path(value):
        return value
    what = "a callable or a dotted path such as 'package.module.function'"
    raise _invalid(key, value, f"null, {what}" if optional else what)


def _optional_callable_ref(key: str, value: object) -> Callable[..., Any] | str | None:
    return _callable_ref(key, value, optional=True)


def _provider(key: str, value: object) -> object:
    if isinstance(value, str) and value.strip():
        return value
    # Building and checking a provider is the providers package's job; here only catch values
    # that cannot be a provider at all (nothing, or YAML scalars and containers).
    plain_data = (str, bool, int, float, bytes, list, tuple, Mapping)
    if value is not None and not isinstance(value, plain_data):
        return value
    raise _invalid(
        key,
        value,
        "a provider spec ('offline', 'openai:gpt-4.1-mini', 'anthropic:MODEL', "
        "'ollama:MODEL', 'scripted:FILE.yaml', 'replay:FILE.jsonl', a dotted class path) "
        "or a provider instance or class",
    )


def _string_items(key: str, value: object, what: str) -> tuple[str, ...]:
    # A bare string is a list of characters to Python; it is always a mistake here.
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple | set | frozenset):
        raise _invalid(key, value, what)
    items = sorted(value) if isinstance(value, set | frozenset) else list(value)
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise _invalid(key, value, what)
    return tuple(dict.fromkeys(items))


def _names(key: str, value: object) -> tuple[str, ...]:
    return _string_items(key, value, "a list of non-empty strings")


def _optional_names(key: str, value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    return _string_items(key, value, "null or a list of non-empty strings")


def _frozen(value: object) -> object:
    """A read-only deep copy of plain data: dicts become mappingproxies, lists become tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({name: _frozen(item) for name, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_frozen(item) for item in value)
    return value


def _string_keys(key: str, value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(name, str) for name in value):
        raise _invalid(key, value, what)
    return cast(Mapping[str, Any], value)


def _mapping(key: str, value: object) -> Mapping[str, Any]:
    checked = _string_keys(key, {} if value is None else value, "a mapping with string keys")
    return cast(Mapping[str, Any], _frozen(checked))


def _profiles(key: str, value: object) -> Mapping[str, Mapping[str, Any]]:
    what = "a mapping of profile name -> mapping (provider, provider_config, trust_group)"
    checked = _string_keys(key, {} if value is None else value, what)
    for name, profile in checked.items():
        _string_keys(f"{key}.{name}", profile, "a mapping (provider, provider_config, trust_group)")
    return cast(Mapping[str, Mapping[str, Any]], _frozen(checked))


def _headers(key: str, value: object) -> Mapping[str, str]:
    checked = _string_keys(key, {} if value is None else value, "a mapping of header -> string")
    for name, header in checked.items():
        if not name.strip() or not isinstance(header, str):
            # Header values are often credentials: name the type, never the value.
            raise ChatConfigurationError(
                f"Chat setting '{key}.{name}' must be a string header value with a non-empty "
                f"name; got a {type(header).__name__}.",
                key=f"{key}.{name}",
            )
    return MappingProxyType(dict(checked))


def _hooks(key: str, value: object) -> Mapping[str, tuple[Callable[..., Any] | str, ...]]:
    what = "a mapping of event -> callable, dotted path, or a list of those"
    checked = _string_keys(key, {} if value is None else value, what)
    hooks: dict[str, tuple[Callable[..., Any] | str, ...]] = {}
    for event, handlers in checked.items():
        _check_known(f"{key}.", [event], HOOK_EVENTS, "hook event")
        listed = handlers if isinstance(handlers, list | tuple) else [handlers]
        hooks[event] = tuple(
            cast(Callable[..., Any] | str, _callable_ref(f"{key}.{event}", item, optional=False))
            for item in listed
        )
    return MappingProxyType(hooks)


def _project(key: str, value: object) -> str:
    if isinstance(value, str) and (demo_name(value) is not None or is_graphql_url(value)):
        return value
    raise _invalid(key, value, describe_targets())


def _store(key: str, value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise _invalid(key, value, "null (the default file), ':memory:' or a file path")
    return value


def _check_known(prefix: str, keys: Iterable[object], allowed: Iterable[str], what: str) -> None:
    """Raise for the first key not in ``allowed``, with "did you mean" and the allowed keys."""
    allowed = tuple(allowed)
    for name in keys:
        if not isinstance(name, str):
            raise ChatConfigurationError(
                f"Chat {what} names must be strings; got {_shown(name)} under "
                f"'{prefix.rstrip('.') or 'CHAT'}'.",
                key=prefix.rstrip("."),
            )
        if name not in allowed:
            hint = suggestion_hint(did_you_mean(name, allowed))
            raise ChatConfigurationError(
                f"Unknown chat {what} '{prefix}{name}'.{hint} "
                f"Allowed: {', '.join(sorted(allowed))}.",
                key=f"{prefix}{name}",
            )


# -- the settings ----------------------------------------------------------------------------


def _fields_of(cls: type) -> tuple[str, ...]:
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

    def __post_init__(self) -> None:
        for name in ("requests", "tokens", "input_tokens", "output_tokens"):
            object.__setattr__(self, name, _budget(f"rate_limit.{name}", getattr(self, name)))
        window = _int_at_least(1)("rate_limit.window_seconds", self.window_seconds)
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
        object.__setattr__(self, "enabled", _bool("audit.enabled", self.enabled))
        level = _choice(AUDIT_LEVELS, _AUDIT_LEVEL_ALIASES)("audit.level", self.level)
        object.__setattr__(self, "level", level)
        object.__setattr__(self, "logger", _optional_callable_ref("audit.logger", self.logger))
        size = _int_at_least(1)("audit.max_result_size", self.max_result_size)
        object.__setattr__(self, "max_result_size", size)
        # An empty term is a substring of every key and would redact everything.
        terms = _names("audit.redact_fields", self.redact_fields)
        object.__setattr__(self, "redact_fields", terms)


def _rate_limit_layer(prefix: str, block: Mapping[Any, Any]) -> dict[str, Any]:
    """One ``rate_limit`` mapping with its keys checked and the per-hour names mapped."""
    _check_known(prefix, block, (*_fields_of(RateLimitSettings), *_HOURLY_ALIASES), "setting")
    layer = {name: value for name, value in block.items() if name not in _HOURLY_ALIASES}
    for old, new in _HOURLY_ALIASES.items():
        if old not in block or new in block:
            continue
        window = block.get("window_seconds", _HOUR)
        if window != _HOUR:
            # A per-hour number under another window would silently change its meaning.
            raise ChatConfigurationError(
                f"Chat setting '{prefix}{old}' is a per-hour budget, but "
                f"'{prefix}window_seconds' is {_shown(window)}; give '{prefix}{new}' instead.",
                key=f"{prefix}{old}",
            )
        layer[new] = _budget(f"{prefix}{old}", block[old])
        layer["window_seconds"] = _HOUR
    return layer


def _nested(
    key: str, value: object, cls: type[RateLimitSettings] | type[AuditSettings]
) -> RateLimitSettings | AuditSettings:
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        if cls is RateLimitSettings:
            return RateLimitSettings(**_rate_limit_layer(f"{key}.", value))
        _check_known(f"{key}.", value, _fields_of(cls), "setting")
        return cls(**value)
    names = ", ".join(_fields_of(cls))
    raise _invalid(key, value, f"a mapping with keys from {names}")


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
    (spec/chat-api-reference.txt, "Settings"), except:

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
    (``None`` = all the project lists), ``store`` (``None`` = the default SQLite file, a path, or
    ``":memory:"``), ``hooks`` (event -> tuple of callables or dotted paths, events in
    :data:`HOOK_EVENTS`) and ``headers`` (HTTP headers sent to a remote project).

    Sequences are stored as tuples and mappings as read-only deep copies. ``provider_profiles``
    and ``planned`` are only checked to be mappings here; their contents are the planned mode's
    to validate. Build one with :func:`load_settings` or directly; both validate.
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
    system_prompt: str = ""
    max_recent_messages: int = 20
    summarize_after: int = 10
    ttl_hours: float = 24
    rate_limit: RateLimitSettings = field(default_factory=RateLimitSettings)
    audit: AuditSettings = field(default_factory=AuditSettings)
    project: str = "demo"
    exposed_managers: tuple[str, ...] | None = None
    store: str | None = None
    hooks: Mapping[str, tuple[Callable[..., Any] | str, ...]] = field(default_factory=_empty)
    headers: Mapping[str, str] = field(default_factory=_empty)

    def __post_init__(self) -> None:
        for name, check in _CHECKS.items():
            object.__setattr__(self, name, check(name, getattr(self, name)))
        missing = [name for name in self.confirm_mutations if name not in self.allowed_mutations]
        if missing:
            raise ChatConfigurationError(
                f"Chat setting 'confirm_mutations' lists {', '.join(map(repr, missing))}, which "
                f"must also be in 'allowed_mutations' (now: "
                f"{', '.join(map(repr, self.allowed_mutations)) or 'empty'}).",
                key="confirm_mutations",
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
        return load_settings(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The settings as plain JSON-able values that :func:`load_settings` reads back.

        Tuples become lists and mappings dicts; callables and classes appear as their dotted
        name (``module.qualname``), other objects (a provider instance) as their class's.
        Credentials in ``provider_config`` or ``headers`` are included: do not display it.
        """
        return {name: _plain(getattr(self, name)) for name in _fields_of(ChatSettings)}

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
        for name in _fields_of(ChatSettings):
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


_CHECKS: Mapping[str, Callable[[str, Any], Any]] = MappingProxyType(
    {
        "enabled": _bool,
        "url": _url_path,
        "provider": _provider,
        "provider_config": _mapping,
        "provider_profiles": _profiles,
        "planned": _mapping,
        "permission": _optional_callable_ref,
        "allowed_origins": _optional_names,
        "allowed_mutations": _names,
        "confirm_mutations": _names,
        "confirm_timeout_seconds": _positive_number,
        "max_results": _int_at_least(1),
        "query_timeout_seconds": _optional_positive_number,
        "max_retries_per_message": _int_at_least(0),
        "max_mutations_per_message": _int_at_least(0),
        "max_total_rounds_per_message": _optional_int_at_least(1),
        "tool_strategy": _choice(TOOL_STRATEGIES),
        "recover_missing_tool_calls": _bool,
        "system_prompt": _string,
        "max_recent_messages": _int_at_least(1),
        "summarize_after": _int_at_least(1),
        "ttl_hours": _positive_number,
        "rate_limit": _rate_limit,
        "audit": _audit,
        "project": _project,
        "exposed_managers": _optional_names,
        "store": _store,
        "hooks": _hooks,
        "headers": _headers,
    }
)

DEFAULT_SETTINGS = ChatSettings()
"""The spec's defaults (with gmchat_nb's ``url`` and ``provider``)."""


def _dotted_name(obj: object) -> str:
    module = getattr(obj, "__module__", None) or "builtins"
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}.{qualname}"


def _plain(value: object) -> Any:
    if isinstance(value, RateLimitSettings | AuditSettings):
        return {name: _plain(getattr(value, name)) for name in _fields_of(type(value))}
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


# -- loading ---------------------------------------------------------------------------------


def _layer(raw: Mapping[Any, Any]) -> dict[str, Any]:
    """One source's keys: checked, GeneralManager's aliases mapped onto absent flat keys."""
    _check_known("", raw, (*_fields_of(ChatSettings), *_GROUP_ALIASES), "setting")
    layer: dict[str, Any] = {
        name: value for name, value in raw.items() if name not in _GROUP_ALIASES
    }
    for group, names in _GROUP_ALIASES.items():
        if group not in raw:
            continue
        block = raw[group]
        if not isinstance(block, Mapping):
            raise _invalid(group, block, f"a mapping with keys from {', '.join(names)}")
        _check_known(f"{group}.", block, names, "setting")
        for name in names:
            if name in block and name not in raw:
                layer[name] = _CHECKS[name](f"{group}.{name}", block[name])
    if isinstance(layer.get("rate_limit"), Mapping):
        layer["rate_limit"] = _rate_limit_layer("rate_limit.", layer["rate_limit"])
    if isinstance(layer.get("audit"), Mapping):
        _check_known("audit.", layer["audit"], _fields_of(AuditSettings), "setting")
    return layer


def _merge(merged: dict[str, Any], layer: Mapping[str, Any]) -> None:
    """Apply ``layer`` over ``merged``; ``rate_limit`` and ``audit`` mappings merge by key."""
    for name, value in layer.items():
        current = merged[name]
        if isinstance(value, Mapping) and isinstance(current, RateLimitSettings | AuditSettings):
            merged[name] = dataclasses.replace(current, **value)
        else:
            merged[name] = value


def _unwrap(raw: Mapping[Any, Any], origin: str) -> Mapping[Any, Any]:
    """The chat mapping inside ``{"CHAT": ...}`` or ``{"GENERAL_MANAGER": {"CHAT": ...}}``."""
    for wrapper in ("GENERAL_MANAGER", "CHAT"):
        if wrapper not in raw:
            continue
        extra = [str(name) for name in raw if name != wrapper]
        if extra:
            raise ChatConfigurationError(
                f"{origin} mixes '{wrapper}' with other top-level keys ({', '.join(extra)}); "
                f"put chat settings inside '{wrapper}' or give them unwrapped.",
                key=extra[0],
            )
        inner = raw[wrapper]
        if wrapper == "GENERAL_MANAGER":
            if not isinstance(inner, Mapping):
                raise _invalid("GENERAL_MANAGER", inner, "a mapping")
            # GeneralManager's other settings (AUTOCREATE_GRAPHQL, ...) are not ours to check.
            inner = inner.get("CHAT", {})
        if inner is None:
            return {}
        if not isinstance(inner, Mapping):
            raise _invalid("CHAT", inner, "a mapping of chat settings")
        return inner
    return raw


def _read_yaml(path: Path) -> Mapping[Any, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ChatConfigurationError(
            f"Chat settings file '{path}' does not exist; give a YAML file, a mapping or None.",
            key="",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ChatConfigurationError(
            f"Chat settings file '{path}' cannot be read as UTF-8 text: {exc}.", key=""
        ) from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "cannot be parsed"
        raise ChatConfigurationError(
            f"Chat settings file '{path}' is not valid YAML{where}: {problem}.", key=""
        ) from exc
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ChatConfigurationError(
            f"Chat settings file '{path}' must hold a mapping of settings; it holds "
            f"a {type(data).__name__}.",
            key="",
        )
    return data


def load_settings(
    source: ChatSettings | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    /,
    **overrides: Any,
) -> ChatSettings:
    """Validated chat settings: the defaults, then ``source``, then ``overrides``.

    ``source`` is ``None``, a :class:`ChatSettings`, a mapping, or the path of a YAML file (an
    empty file means no settings). A mapping or file may be wrapped as ``{"CHAT": {...}}`` or
    ``{"GENERAL_MANAGER": {"CHAT": {...}}}``. ``rate_limit`` and ``audit`` mappings merge key by
    key over what is already set, other keys replace. GeneralManager's aliases
    (``query_limits``, ``conversation``, and ``rate_limit.max_requests_per_hour`` /
    ``max_tokens_per_hour``) fill a flat key only when the same layer does not give it.
    Raises :class:`ChatConfigurationError` for anything invalid.
    """
    merged = {name: getattr(DEFAULT_SETTINGS, name) for name in _fields_of(ChatSettings)}
    if isinstance(source, ChatSettings):
        merged = {name: getattr(source, name) for name in _fields_of(ChatSettings)}
    elif isinstance(source, Mapping):
        _merge(merged, _layer(_unwrap(source, "The chat settings mapping")))
    elif isinstance(source, str | os.PathLike):
        path = Path(source)
        origin = f"Chat settings file '{path}'"
        try:
            _merge(merged, _layer(_unwrap(_read_yaml(path), origin)))
            merged = {name: getattr(ChatSettings(**merged), name) for name in merged}
        except ChatConfigurationError as exc:
            if str(path) in str(exc):
                raise
            # Say which file the bad key came from; keyword overrides are validated later.
            raise ChatConfigurationError(f"In '{path}': {exc}", key=exc.key) from exc
    elif source is not None:
        raise ChatConfigurationError(
            f"Chat settings source must be None, a ChatSettings, a mapping or a YAML file "
            f"path; got {_shown(source)}.",
            key="",
        )
    if overrides:
        _merge(merged, _layer(overrides))
    return ChatSettings(**merged)
