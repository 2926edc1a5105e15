"""The settings' error and their value checks: each key's raw value in, its normalised value out.

:class:`ChatConfigurationError` is the one error of the settings; its ``key`` is the dotted
settings key at fault. Each check takes that key (for the error) and the raw value and returns the
normalised value (tuples for sequences, read-only copies for mappings), or raises with a message
that says what was given and what is allowed. :func:`check_known` refuses unknown keys with a
"did you mean".
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, cast

from ..dsn import postgresql_url_problem, without_password
from ..project.names import did_you_mean, suggestion_hint
from ..project.targets import demo_name, describe_targets, is_graphql_url

__all__ = [
    "HOOK_EVENTS",
    "ChatConfigurationError",
    "boolean",
    "budget",
    "check_known",
    "choice",
    "headers",
    "hooks",
    "int_at_least",
    "int_between",
    "invalid",
    "mapping",
    "names",
    "number_between",
    "optional_callable_ref",
    "optional_int_at_least",
    "optional_names",
    "optional_positive_number",
    "positive_number",
    "profiles",
    "project",
    "provider",
    "shown",
    "store",
    "string",
    "url_path",
]

# The events a ``hooks`` mapping may name.
HOOK_EVENTS: tuple[str, ...] = ("message_received", "tool_called", "mutation_executed", "error")

_DOTTED_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


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


def shown(value: object) -> str:
    """The given value for an error message: a short repr and its type."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} ({type(value).__name__})"


def invalid(key: str, value: object, allowed: str) -> ChatConfigurationError:
    """The error for ``key``: it must be ``allowed``, and what was given."""
    return ChatConfigurationError(
        f"Chat setting '{key}' must be {allowed}; got {shown(value)}.", key=key
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


def boolean(key: str, value: object) -> bool:
    """``true`` or ``false``, nothing that merely looks like one."""
    if not isinstance(value, bool):
        raise invalid(key, value, "true or false")
    return value


def int_at_least(minimum: int) -> Callable[[str, object], int]:
    """The check for an integer of at least ``minimum`` (a bool is not one)."""

    def check(key: str, value: object) -> int:
        if not _is_int(value) or cast(int, value) < minimum:
            raise invalid(key, value, f"an integer >= {minimum}")
        return cast(int, value)

    return check


def int_between(low: int, high: int) -> Callable[[str, object], int]:
    """The check for an integer from ``low`` to ``high`` (a bool is not one)."""

    def check(key: str, value: object) -> int:
        if not _is_int(value) or not low <= cast(int, value) <= high:
            raise invalid(key, value, f"an integer from {low} to {high}")
        return cast(int, value)

    return check


def number_between(low: float, high: float) -> Callable[[str, object], float]:
    """The check for a finite number from ``low`` to ``high`` (fractions allowed)."""

    def check(key: str, value: object) -> float:
        if not _is_number(value) or not low <= cast(float, value) <= high:
            raise invalid(key, value, f"a number from {low:g} to {high:g}")
        return cast(float, value)

    return check


def optional_int_at_least(minimum: int) -> Callable[[str, object], int | None]:
    """The check for ``None`` or an integer of at least ``minimum``."""

    def check(key: str, value: object) -> int | None:
        if value is None:
            return None
        if not _is_int(value) or cast(int, value) < minimum:
            raise invalid(key, value, f"null or an integer >= {minimum}")
        return cast(int, value)

    return check


def positive_number(key: str, value: object) -> float:
    """A finite number above zero (fractions allowed)."""
    if not _is_number(value) or cast(float, value) <= 0:
        raise invalid(key, value, "a number > 0")
    return cast(float, value)


def optional_positive_number(key: str, value: object) -> float | None:
    """``None`` or a finite number above zero."""
    if value is None:
        return None
    if not _is_number(value) or cast(float, value) <= 0:
        raise invalid(key, value, "null or a number > 0")
    return cast(float, value)


def budget(key: str, value: object) -> int | None:
    """A positive integer budget, or ``None`` for no budget."""
    # The spec: None, zero and negative values create no budget; keep one spelling for "none".
    if value is None:
        return None
    if not _is_int(value):
        raise invalid(key, value, "an integer (a positive budget; null, 0 or negative for none)")
    number = cast(int, value)
    return number if number > 0 else None


def choice(
    allowed: tuple[str, ...], aliases: Mapping[str, str] | None = None
) -> Callable[[str, object], str]:
    """The check for one of ``allowed`` (or an alias, stored as what it stands for)."""

    def check(key: str, value: object) -> str:
        if isinstance(value, str):
            if value in allowed:
                return value
            if aliases and value in aliases:
                return aliases[value]
        names = ", ".join(repr(name) for name in (*allowed, *(aliases or {})))
        hint = suggestion_hint(did_you_mean(value, allowed)) if isinstance(value, str) else ""
        raise ChatConfigurationError(
            f"Chat setting '{key}' must be one of {names}; got {shown(value)}.{hint}", key=key
        )

    return check


def string(key: str, value: object) -> str:
    """A string; ``None`` is the empty string."""
    # An empty system_prompt in YAML (`system_prompt:`) loads as None and means "none".
    if value is None:
        return ""
    if not isinstance(value, str):
        raise invalid(key, value, "a string")
    return value


def url_path(key: str, value: object) -> str:
    """A non-empty URL path, stored as ``"path/"``."""
    # Like GeneralManager, normalise slashes; routes are joined onto Jupyter's base_url.
    if not isinstance(value, str) or not value.strip("/ "):
        raise invalid(key, value, "a non-empty URL path such as 'gmchat/chat/'")
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
    raise invalid(key, value, f"null, {what}" if optional else what)


def optional_callable_ref(key: str, value: object) -> Callable[..., Any] | str | None:
    """``None``, a callable, or a dotted path kept as given."""
    return _callable_ref(key, value, optional=True)


def provider(key: str, value: object) -> object:
    """A provider spec string, or an object that may be a provider instance or class."""
    if isinstance(value, str) and value.strip():
        return value
    # Building and checking a provider is the providers package's job; here only catch values
    # that cannot be a provider at all (nothing, or YAML scalars and containers).
    plain_data = (str, bool, int, float, bytes, list, tuple, Mapping)
    if value is not None and not isinstance(value, plain_data):
        return value
    raise invalid(
        key,
        value,
        "a provider spec ('offline', 'openai:gpt-4.1-mini', 'anthropic:MODEL', "
        "'ollama:MODEL', 'scripted:FILE.yaml', 'replay:FILE.jsonl' or 'replay:oracle-openai', a "
        "dotted class path) or a provider instance or class",
    )


def _string_items(key: str, value: object, what: str) -> tuple[str, ...]:
    # A bare string is a list of characters to Python; it is always a mistake here.
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple | set | frozenset):
        raise invalid(key, value, what)
    items = sorted(value) if isinstance(value, set | frozenset) else list(value)
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise invalid(key, value, what)
    return tuple(dict.fromkeys(items))


def names(key: str, value: object) -> tuple[str, ...]:
    """A list of non-empty strings, as a tuple without repeats."""
    return _string_items(key, value, "a list of non-empty strings")


def optional_names(key: str, value: object) -> tuple[str, ...] | None:
    """``None`` or a list of non-empty strings, as a tuple without repeats."""
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
        raise invalid(key, value, what)
    return cast(Mapping[str, Any], value)


def mapping(key: str, value: object) -> Mapping[str, Any]:
    """A mapping with string keys (``None`` is empty), as a read-only deep copy."""
    checked = _string_keys(key, {} if value is None else value, "a mapping with string keys")
    return cast(Mapping[str, Any], _frozen(checked))


def profiles(key: str, value: object) -> Mapping[str, Mapping[str, Any]]:
    """Provider profiles: name -> mapping, as a read-only deep copy."""
    what = "a mapping of profile name -> mapping (provider, provider_config, trust_group)"
    checked = _string_keys(key, {} if value is None else value, what)
    for name, profile in checked.items():
        _string_keys(f"{key}.{name}", profile, "a mapping (provider, provider_config, trust_group)")
    return cast(Mapping[str, Mapping[str, Any]], _frozen(checked))


def headers(key: str, value: object) -> Mapping[str, str]:
    """HTTP headers: non-empty name -> string value, read-only."""
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


def hooks(key: str, value: object) -> Mapping[str, tuple[Callable[..., Any] | str, ...]]:
    """Hook event (one of :data:`HOOK_EVENTS`) -> a tuple of callables or dotted paths."""
    what = "a mapping of event -> callable, dotted path, or a list of those"
    checked = _string_keys(key, {} if value is None else value, what)
    by_event: dict[str, tuple[Callable[..., Any] | str, ...]] = {}
    for event, handlers in checked.items():
        check_known(f"{key}.", [event], HOOK_EVENTS, "hook event")
        listed = handlers if isinstance(handlers, list | tuple) else [handlers]
        by_event[event] = tuple(
            cast(Callable[..., Any] | str, _callable_ref(f"{key}.{event}", item, optional=False))
            for item in listed
        )
    return MappingProxyType(by_event)


def project(key: str, value: object) -> str:
    """A demo project name or an http(s) GraphQL URL."""
    if isinstance(value, str) and (demo_name(value) is not None or is_graphql_url(value)):
        return value
    raise invalid(key, value, describe_targets())


_STORE_FORMS = "null (the default file), ':memory:', a file path or a postgresql:// URL"


def store(key: str, value: object) -> str | None:
    """``None`` (the default file), ``":memory:"``, a file path or a ``postgresql://`` URL (which
    needs psycopg), as a string."""
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise invalid(key, value, _STORE_FORMS)
    scheme, separator, _ = value.partition("://")
    if separator and scheme.isascii() and scheme.replace("+", "").isalnum():
        if scheme not in ("postgresql", "postgres"):
            raise invalid(key, without_password(value), _STORE_FORMS)
        if importlib.util.find_spec("psycopg") is None:
            raise ChatConfigurationError(
                f"Chat setting '{key}' is a PostgreSQL URL, which needs psycopg 3: "
                "pip install 'gmchat_nb[postgresql]'.",
                key=key,
            )
        problem = postgresql_url_problem(value)
        if problem is not None:
            raise ChatConfigurationError(
                f"Chat setting '{key}' is not a PostgreSQL URL libpq can read ({problem}); got "
                f"{without_password(value)!r}.",
                key=key,
            )
    return value


def check_known(prefix: str, keys: Iterable[object], allowed: Iterable[str], what: str) -> None:
    """Raise for the first key not in ``allowed``, with "did you mean" and the allowed keys."""
    allowed = tuple(allowed)
    for name in keys:
        if not isinstance(name, str):
            raise ChatConfigurationError(
                f"Chat {what} names must be strings; got {shown(name)} under "
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
