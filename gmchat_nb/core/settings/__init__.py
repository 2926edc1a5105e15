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

The package, one module a job (import from the package, not the modules):

* :mod:`.checks` -- :class:`ChatConfigurationError` and the check of each kind of value;
* :mod:`.chat_settings` -- :class:`ChatSettings`, :class:`RateLimitSettings`,
  :class:`AuditSettings`, the check of every key, :data:`DEFAULT_SETTINGS`, the plain and masked
  forms;
* :mod:`.loading` -- :func:`load_settings`: sources, wrappers, aliases and layering;
* :mod:`.retries` -- :class:`ProviderRetrySettings`, the ``provider_retries`` block;
* :mod:`.guards` -- a turn's defences: :class:`FallbackProvider` (``provider_fallbacks``),
  :class:`LoopGuardSettings`, :class:`CompletionGateSettings`, :class:`InjectionSettings`,
  :class:`TelemetrySettings`.
"""

from __future__ import annotations

from .chat_settings import (
    AUDIT_LEVELS,
    DEFAULT_SETTINGS,
    DEMO_PROJECTS,
    TOOL_STRATEGIES,
    AuditLevel,
    AuditSettings,
    ChatSettings,
    RateLimitSettings,
    ToolStrategy,
)
from .checks import HOOK_EVENTS, ChatConfigurationError
from .guards import (
    CompletionGateSettings,
    FallbackProvider,
    InjectionSettings,
    LoopGuardSettings,
    TelemetrySettings,
)
from .loading import load_settings
from .retries import ProviderRetrySettings

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
    "CompletionGateSettings",
    "FallbackProvider",
    "InjectionSettings",
    "LoopGuardSettings",
    "ProviderRetrySettings",
    "RateLimitSettings",
    "TelemetrySettings",
    "ToolStrategy",
    "load_settings",
]
