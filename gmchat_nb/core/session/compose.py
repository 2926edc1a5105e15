"""Composition: a chat's parts built from its settings, in one place.

Every surface (the notebook's ``Chat``, the server extension's runtime, ``gmchat ask`` through
``Chat``, the eval runner, and whatever comes next) gets its project, provider, store and
:class:`ChatSession` here, so the settings mean the same thing everywhere. Surfaces decide only
what to keep and for how long (the server shares one project and store, caches a provider per
conversation, and opens a session per request; a ``Chat`` holds one of each).

* :func:`connect_project` -- the project the settings name, connected as they say and checked
  against them;
* :func:`build_provider` -- the provider a spec names, configured by the settings;
* :func:`open_store` -- the store the settings (or the caller) name;
* :func:`open_session` -- the session over those parts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..audit import AuditLog
from ..knowledge.identity import project_key
from ..project import Project, connect
from ..providers.base import BaseLLMProvider
from ..providers.registry import create_provider
from ..providers.replay import RecordingProvider
from ..ratelimit import RateLimiter
from ..settings import ChatConfigurationError, ChatSettings
from ..store import ChatStore
from .actor import Actor
from .chat_session import ChatSession
from .hooks import Hooks

__all__ = ["build_provider", "connect_project", "open_session", "open_store"]


async def connect_project(settings: ChatSettings, target: Any = None) -> Project:
    """The project ``target`` names (by default ``settings.project``: a demo name, a GraphQL
    URL, or a schema object), connected with the settings' exposed managers, headers, allowed
    mutations and query limits, then checked against the settings
    (:meth:`ChatSettings.validate_for`). A :class:`Project` given as ``target`` is checked and
    returned as it is; one connected here is closed again when the check fails."""
    target = settings.project if target is None else target
    if isinstance(target, Project):
        settings.validate_for(target)
        target.identity = target.identity or project_key(target.executor, settings.project_id)
        return target
    project = await connect(
        target,
        exposed=settings.exposed_managers,
        headers=dict(settings.headers) or None,
        allowed_mutations=settings.allowed_mutations,
        max_results=settings.max_results,
        query_timeout=settings.query_timeout_seconds,
    )
    project.identity = project_key(target, settings.project_id)
    try:
        settings.validate_for(project)
    except BaseException:
        await project.aclose()
        raise
    return project


def build_provider(
    settings: ChatSettings, spec: Any = None, *, record_to: str | Path | None = None
) -> BaseLLMProvider:
    """The provider ``spec`` names (by default ``settings.provider``: a spec string, a provider
    class or instance), configured with ``settings.provider_config``; with ``record_to`` its
    responses are recorded into that cassette. A spec that names no usable provider is a
    :class:`ChatConfigurationError` for ``provider``; a missing SDK stays an ``ImportError``."""
    spec = settings.provider if spec is None else spec
    try:
        built = create_provider(spec, settings.provider_config)
    except ValueError as error:  # a bad spec, script or cassette: name the setting
        raise ChatConfigurationError(f"provider: {error}", key="provider") from None
    if record_to is not None:
        built = RecordingProvider(built, record_to)
    return built


def open_store(settings: ChatSettings, store: Any = None, *, open_later: bool = False) -> ChatStore:
    """``store`` when it is a :class:`ChatStore`; else the store at ``store`` (a path,
    ``":memory:"`` or a ``postgresql://`` URL), at ``settings.store``, or at
    :meth:`ChatStore.default_path`. ``open_later``: see :class:`ChatStore`."""
    if isinstance(store, ChatStore):
        return store
    return ChatStore(store or settings.store or ChatStore.default_path(), open_later=open_later)


def open_session(
    project: Project,
    provider: BaseLLMProvider,
    settings: ChatSettings,
    *,
    store: ChatStore,
    actor: Actor,
    conversation_id: str | None = None,
    audit: AuditLog | None = None,
    limiter: RateLimiter | None = None,
    hooks: Hooks | None = None,
    clock: Callable[[], float] = time.time,
) -> ChatSession:
    """The actor's session over these parts (a project from :func:`connect_project`, so checked
    against ``settings``), with the settings' hooks (or ``hooks``; ``audit`` and ``limiter``
    shared by several sessions, as an agent's toolbox shares them). ``conversation_id``
    (``None``: none yet) must be one of the actor's: ``KeyError`` otherwise."""
    return ChatSession(
        project,
        provider,
        settings,
        store=store,
        actor=actor,
        conversation_id=conversation_id,
        audit=audit,
        limiter=limiter,
        hooks=hooks or Hooks(settings.hooks),
        clock=clock,
    )
