"""The ``planned`` and ``provider_profiles`` settings, checked key by key.

The spec's keys exactly (``enabled``, ``catalog``, ``roles``, ``max_concurrent_tasks``,
``evidence_timeout_seconds``, ``synthesis_timeout_seconds``) plus one gmchat_nb addition,
``max_rounds_per_task`` (executor requests one task and its children may make; GeneralManager has
no cap on normal turns and relies on its 90 s deadline alone). A profile is ``provider``,
``provider_config`` and ``trust_group``. When planned mode is on, every role must name a
configured profile and every profile a turn can use must share one trust group; when
``provider_profiles`` is omitted, every role uses the implicit ``default`` profile (the legacy
``provider``/``provider_config``, trust group ``default``).

The values stay plain read-only mappings inside :class:`ChatSettings` (``planned`` and
``provider_profiles`` round-trip through YAML); :func:`planned_settings` gives the typed view.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from . import checks
from .checks import ChatConfigurationError, check_known, invalid

__all__ = [
    "DEFAULT_PROFILE",
    "REQUIRED_ROLES",
    "PlannedSettings",
    "ProviderProfile",
    "check_planned",
    "planned_settings",
]

REQUIRED_ROLES = (
    "planner",
    "simple_executor",
    "complex_executor",
    "synthesizer",
    "fallback_executor",
)
PLANNED_KEYS = (
    "enabled",
    "catalog",
    "roles",
    "max_concurrent_tasks",
    "evidence_timeout_seconds",
    "synthesis_timeout_seconds",
    "max_rounds_per_task",
)
PROFILE_KEYS = ("provider", "provider_config", "trust_group")
DEFAULT_PROFILE = "default"


@dataclass(frozen=True, slots=True)
class ProviderProfile:
    """One configured provider a planned role can use."""

    name: str
    provider: object
    provider_config: Mapping[str, Any]
    trust_group: str


@dataclass(frozen=True, slots=True)
class PlannedSettings:
    """The typed view of ``planned``: roles resolved to profiles."""

    enabled: bool
    roles: Mapping[str, ProviderProfile]
    catalog: Mapping[str, Any] | Callable[..., Any] | str | None
    max_concurrent_tasks: int = 3
    evidence_timeout_seconds: float = 90.0
    synthesis_timeout_seconds: float = 30.0
    max_rounds_per_task: int = 8

    @property
    def trust_group(self) -> str:
        """The one trust group every role of a turn shares."""
        return next(iter(self.roles.values())).trust_group


def _catalog(key: str, value: object) -> object:
    if value is None or callable(value) or isinstance(value, Mapping):
        return checks.mapping(key, value) if isinstance(value, Mapping) else value
    return checks.optional_callable_ref(key, value)


def _profile(name: str, raw: Mapping[str, Any], *, used: bool) -> ProviderProfile:
    key = f"provider_profiles.{name}"
    check_known(f"{key}.", raw, PROFILE_KEYS, "setting")
    if "provider" not in raw and not used:  # nothing builds it while planned mode is off
        return ProviderProfile(
            name,
            None,
            checks.mapping(f"{key}.provider_config", raw.get("provider_config")),
            DEFAULT_PROFILE,
        )
    if "provider" not in raw:
        raise ChatConfigurationError(
            f"Chat setting '{key}.provider' is required: which provider the profile uses.",
            key=f"{key}.provider",
        )
    group = raw.get("trust_group", DEFAULT_PROFILE)
    return ProviderProfile(
        name,
        checks.provider(f"{key}.provider", raw["provider"]),
        checks.mapping(f"{key}.provider_config", raw.get("provider_config")),
        checks.string(f"{key}.trust_group", group).strip() or DEFAULT_PROFILE,
    )


def check_planned(value: object) -> Mapping[str, Any]:
    """The ``planned`` mapping with every key checked (roles are checked against the profiles by
    :func:`planned_settings`, which sees both)."""
    block = checks.mapping("planned", value)
    check_known("planned.", block, PLANNED_KEYS, "setting")
    checks.boolean("planned.enabled", block.get("enabled", False))
    _catalog("planned.catalog", block.get("catalog"))
    roles = checks.mapping("planned.roles", block.get("roles"))
    check_known("planned.roles.", roles, REQUIRED_ROLES, "role")
    for role, profile in roles.items():
        if not isinstance(profile, str) or not profile.strip():
            raise invalid(f"planned.roles.{role}", profile, "the name of a provider profile")
    checks.int_at_least(1)("planned.max_concurrent_tasks", block.get("max_concurrent_tasks", 3))
    checks.int_at_least(1)("planned.max_rounds_per_task", block.get("max_rounds_per_task", 8))
    for name in ("evidence_timeout_seconds", "synthesis_timeout_seconds"):
        if name in block:
            checks.positive_number(f"planned.{name}", block[name])
    return block


def planned_settings(
    planned: Mapping[str, Any],
    profiles: Mapping[str, Mapping[str, Any]],
    provider: object,
    provider_config: Mapping[str, Any],
) -> PlannedSettings:
    """Resolve the roles to profiles and check the trust group (raises
    :class:`ChatConfigurationError` naming the key). Disabled settings resolve every role to the
    implicit default profile, so callers never meet a half-configured view."""
    block = check_planned(planned)
    enabled = checks.boolean("planned.enabled", block.get("enabled", False))
    named = {name: _profile(name, raw, used=enabled) for name, raw in profiles.items()}
    roles_raw = block.get("roles") or {}
    if not named:
        # The spec's implicit profile: the legacy provider for every role, trust group default.
        implicit = ProviderProfile(DEFAULT_PROFILE, provider, provider_config, DEFAULT_PROFILE)
        roles = dict.fromkeys(REQUIRED_ROLES, implicit)
        for role, name in roles_raw.items():
            if name != DEFAULT_PROFILE and enabled:
                raise ChatConfigurationError(
                    f"Chat setting 'planned.roles.{role}' names profile '{name}', but "
                    "'provider_profiles' is empty (only the implicit 'default' exists).",
                    key=f"planned.roles.{role}",
                )
    else:
        roles = {}
        for role in REQUIRED_ROLES:
            name = roles_raw.get(role)
            if name is None:
                if not enabled:
                    continue
                raise ChatConfigurationError(
                    f"Chat setting 'planned.roles.{role}' is required when planned mode is on "
                    f"with provider profiles (configured: {', '.join(sorted(named))}).",
                    key=f"planned.roles.{role}",
                )
            if name not in named:
                raise ChatConfigurationError(
                    f"Chat setting 'planned.roles.{role}' names profile '{name}', which "
                    f"'provider_profiles' does not define (defined: {', '.join(sorted(named))}).",
                    key=f"planned.roles.{role}",
                )
            roles[role] = named[name]
        groups = {profile.trust_group for profile in roles.values()}
        if len(groups) > 1:
            raise ChatConfigurationError(
                "Chat setting 'planned.roles' mixes trust groups "
                f"({', '.join(sorted(groups))}): every profile a turn uses must share one "
                "'trust_group'.",
                key="planned.roles",
            )
        if not roles:  # disabled and unmapped: the legacy provider stays the only one
            implicit = ProviderProfile(DEFAULT_PROFILE, provider, provider_config, DEFAULT_PROFILE)
            roles = dict.fromkeys(REQUIRED_ROLES, implicit)
    return PlannedSettings(
        enabled=enabled,
        roles=MappingProxyType(roles),
        catalog=_catalog("planned.catalog", block.get("catalog")),  # type: ignore[arg-type]
        max_concurrent_tasks=checks.int_at_least(1)(
            "planned.max_concurrent_tasks", block.get("max_concurrent_tasks", 3)
        ),
        evidence_timeout_seconds=checks.positive_number(
            "planned.evidence_timeout_seconds", block.get("evidence_timeout_seconds", 90)
        ),
        synthesis_timeout_seconds=checks.positive_number(
            "planned.synthesis_timeout_seconds", block.get("synthesis_timeout_seconds", 30)
        ),
        max_rounds_per_task=checks.int_at_least(1)(
            "planned.max_rounds_per_task", block.get("max_rounds_per_task", 8)
        ),
    )
