"""Loading settings: :func:`load_settings` layers the defaults, a source and keyword overrides.

A source is ``None``, a :class:`~.chat_settings.ChatSettings`, a mapping or a YAML file, wrapped
or not in ``{"CHAT": ...}`` / ``{"GENERAL_MANAGER": {"CHAT": ...}}``. Each layer's keys are
checked and GeneralManager's grouped aliases (``query_limits``, ``conversation``) mapped onto the
flat keys before it is merged; the result is built (and so validated) once, at the end.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from .chat_settings import (
    CHECKS,
    DEFAULT_SETTINGS,
    AuditSettings,
    ChatSettings,
    RateLimitSettings,
    fields_of,
    rate_limit_layer,
)
from .checks import ChatConfigurationError, check_known, invalid, shown
from .guards import MERGED_BLOCK_KEYS, Block, completion_gates
from .retries import PROVIDER_RETRY_KEYS, ProviderRetrySettings

__all__ = ["load_settings"]

# GeneralManager's grouped spellings, mapped onto the flat keys when the flat key is absent.
_GROUP_ALIASES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "query_limits": ("max_results", "query_timeout_seconds", "max_retries_per_message"),
        "conversation": ("max_recent_messages", "summarize_after", "ttl_hours"),
    }
)


def _layer(raw: Mapping[Any, Any]) -> dict[str, Any]:
    """One source's keys: checked, GeneralManager's aliases mapped onto absent flat keys."""
    check_known("", raw, (*fields_of(ChatSettings), *_GROUP_ALIASES), "setting")
    layer: dict[str, Any] = {
        name: value for name, value in raw.items() if name not in _GROUP_ALIASES
    }
    for group, names in _GROUP_ALIASES.items():
        if group not in raw:
            continue
        block = raw[group]
        if not isinstance(block, Mapping):
            raise invalid(group, block, f"a mapping with keys from {', '.join(names)}")
        check_known(f"{group}.", block, names, "setting")
        for name in names:
            if name in block and name not in raw:
                layer[name] = CHECKS[name](f"{group}.{name}", block[name])
    if isinstance(layer.get("rate_limit"), Mapping):
        layer["rate_limit"] = rate_limit_layer("rate_limit.", layer["rate_limit"])
    if isinstance(layer.get("audit"), Mapping):
        check_known("audit.", layer["audit"], fields_of(AuditSettings), "setting")
    for name, keys in {"provider_retries": PROVIDER_RETRY_KEYS, **MERGED_BLOCK_KEYS}.items():
        if isinstance(layer.get(name), Mapping):
            check_known(f"{name}.", layer[name], keys, "setting")
    if isinstance(layer.get("completion_gates"), bool):
        # `completion_gates: false` sets every gate; a later layer's mapping merges onto that.
        layer["completion_gates"] = completion_gates("completion_gates", layer["completion_gates"])
    return layer


def _merge(merged: dict[str, Any], layer: Mapping[str, Any]) -> None:
    """Apply ``layer`` over ``merged``; ``rate_limit``, ``audit``, ``provider_retries``,
    ``loop_guard``, ``completion_gates``, ``injection`` and ``telemetry`` mappings merge by key
    (``provider_fallbacks``, a list, replaces)."""
    nested = RateLimitSettings | AuditSettings | ProviderRetrySettings | Block
    for name, value in layer.items():
        current = merged[name]
        if isinstance(value, Mapping) and isinstance(current, nested):
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
                raise invalid("GENERAL_MANAGER", inner, "a mapping")
            # GeneralManager's other settings (AUTOCREATE_GRAPHQL, ...) are not ours to check.
            inner = inner.get("CHAT", {})
        if inner is None:
            return {}
        if not isinstance(inner, Mapping):
            raise invalid("CHAT", inner, "a mapping of chat settings")
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
    ``{"GENERAL_MANAGER": {"CHAT": {...}}}``. ``rate_limit``, ``audit``, ``provider_retries``,
    ``loop_guard``, ``completion_gates``, ``injection`` and ``telemetry`` mappings merge key by
    key over what is already set (``completion_gates: false`` sets every gate); other keys
    (``provider_fallbacks`` among them) replace. GeneralManager's aliases
    (``query_limits``, ``conversation``, and ``rate_limit.max_requests_per_hour`` /
    ``max_tokens_per_hour``) fill a flat key only when the same layer does not give it.
    Raises :class:`ChatConfigurationError` for anything invalid.
    """
    merged = {name: getattr(DEFAULT_SETTINGS, name) for name in fields_of(ChatSettings)}
    if isinstance(source, ChatSettings):
        merged = {name: getattr(source, name) for name in fields_of(ChatSettings)}
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
            f"path; got {shown(source)}.",
            key="",
        )
    if overrides:
        _merge(merged, _layer(overrides))
    return ChatSettings(**merged)
