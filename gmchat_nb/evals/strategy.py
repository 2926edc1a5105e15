"""Strategies a case runs with (``legacy``: the tool loop; ``planned``: planned orchestration)
and the cost of each planned role.

A planned run turns ``planned: {enabled: true}`` on. Without role pins every role uses the case's
provider (the implicit ``default`` profile); a case's ``providers`` key pins roles to other
providers (``{planner: offline, synthesizer: scripted:FILE}``; ``executor`` pins both executors),
which become ``provider_profiles`` with the unpinned roles on a ``case`` profile.

Requests and tokens are counted per role by :class:`RoleTally`: a structured request is the
planner's (or the fallback planning in its place), a request whose system message is the
executor's or the synthesizer's instructions is that role's, the session's summary of a long
conversation is ``summary``, and any other request is the legacy loop's (a mutation plan hands
the turn to it; a legacy run has only those).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.planned.prompts import EXECUTOR_PROMPT, SYNTHESIZER_PROMPT
from ..core.providers.base import Message, TokenUsage
from ..core.session.context import SUMMARY_INSTRUCTIONS
from ..core.settings.planned import REQUIRED_ROLES
from .dataset import PIN_KEYS, STRATEGIES

__all__ = [
    "COUNTED_ROLES",
    "PIN_KEYS",
    "STRATEGIES",
    "RoleTally",
    "minus_roles",
    "planned_settings_block",
    "request_role",
    "sum_roles",
]

COUNTED_ROLES = ("planner", "executor", "synthesizer", "legacy", "summary")
CASE_PROFILE = "case"


def request_role(messages: Sequence[Message], structured: bool = False) -> str:
    """Which role made a request (see the module docstring)."""
    if structured:
        return "planner"
    system = next((m.content for m in messages if m.role == "system"), "")
    if system.startswith(EXECUTOR_PROMPT):
        return "executor"
    if system.startswith(SYNTHESIZER_PROMPT):
        return "synthesizer"
    if system.startswith(SUMMARY_INSTRUCTIONS):
        return "summary"
    return "legacy"


@dataclass
class RoleTally:
    """Requests and tokens per role, as ``{role: {requests, input_tokens, output_tokens}}``."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)

    def request(self, role: str) -> None:
        self._entry(role)["requests"] += 1

    def tokens(self, role: str, usage: TokenUsage) -> None:
        entry = self._entry(role)
        entry["input_tokens"] += usage.input_tokens
        entry["output_tokens"] += usage.output_tokens

    def _entry(self, role: str) -> dict[str, int]:
        return self.counts.setdefault(role, {"requests": 0, "input_tokens": 0, "output_tokens": 0})

    def snapshot(self) -> dict[str, dict[str, int]]:
        return {role: dict(entry) for role, entry in self.counts.items()}


def sum_roles(*tallies: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    """Role counts added up (several providers, or several turns)."""
    total: dict[str, dict[str, int]] = {}
    for tally in tallies:
        for role, entry in tally.items():
            into = total.setdefault(role, {"requests": 0, "input_tokens": 0, "output_tokens": 0})
            for key in into:
                into[key] += int(entry.get(key, 0))
    return {role: total[role] for role in sorted(total, key=_role_order)}


def _role_order(role: str) -> int:
    return COUNTED_ROLES.index(role) if role in COUNTED_ROLES else len(COUNTED_ROLES)


def minus_roles(
    after: Mapping[str, Mapping[str, int]], before: Mapping[str, Mapping[str, int]]
) -> dict[str, dict[str, int]]:
    """What was counted between two snapshots (roles with nothing new are left out)."""
    out: dict[str, dict[str, int]] = {}
    for role, entry in after.items():
        earlier = before.get(role, {})
        diff = {key: value - int(earlier.get(key, 0)) for key, value in entry.items()}
        if any(diff.values()):
            out[role] = diff
    return out


def planned_settings_block(case_provider: Any, pinned: Mapping[str, Any]) -> dict[str, Any]:
    """The settings that turn planned mode on: ``planned`` alone without pins (the implicit
    default profile is the case's provider), else ``provider_profiles`` and ``planned.roles``.
    ``pinned`` maps pin keys (:data:`PIN_KEYS`) to built providers."""
    if not pinned:
        return {"planned": {"enabled": True}}
    profiles: dict[str, Any] = {CASE_PROFILE: {"provider": case_provider}}
    roles: dict[str, str] = {}
    for role in REQUIRED_ROLES:
        key = role if role in pinned else None
        if key is None and role.endswith("_executor") and role != "fallback_executor":
            key = "executor" if "executor" in pinned else None
        if key is None:
            roles[role] = CASE_PROFILE
            continue
        profiles.setdefault(key, {"provider": pinned[key]})
        roles[role] = key
    return {"provider_profiles": profiles, "planned": {"enabled": True, "roles": roles}}
