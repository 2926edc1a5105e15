"""What the extension shares between requests: settings, the project, the store, running turns.

Every request builds a fresh :class:`~gmchat_nb.core.session.ChatSession` from the SQLite store,
so a confirm POST works whichever handler or connection served the stream. Two things live in
memory only, and only because they cannot live in the store: provider instances per
conversation (scripted test providers are stateful, and real SDK clients are costly to rebuild)
and the asyncio tasks of running turns (so a disconnect or ``stop_extension`` can cancel them).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..core.project import Project, connect
from ..core.providers.base import BaseLLMProvider
from ..core.providers.registry import create_provider
from ..core.session import Actor, ChatSession, Hooks
from ..core.settings import ChatConfigurationError, ChatSettings
from ..core.store import ChatStore, ConversationRecord

__all__ = ["ChatRuntime", "TurnBusy", "actor_for", "conversation_json"]

log = logging.getLogger(__name__)

PROVIDER_CACHE_SIZE = 256


class TurnBusy(Exception):
    """Another turn of the same conversation is running in this process."""


def actor_for(user: Any, owner: str | None = None) -> Actor:
    """The chat actor of a Jupyter user: authenticated, id ``jupyter:<username>``.

    ``owner`` names the single user of a stock single-user server, whose identity provider
    invents a new random "Anonymous" user for every token request without a cookie: without it a
    curl client could never see its own conversations or confirm its own mutation.
    """
    username = owner or str(getattr(user, "username", "") or user)
    name = str(getattr(user, "display_name", "") or getattr(user, "name", "") or username)
    return Actor(id=f"jupyter:{username}", name=name, authenticated=True)


def conversation_json(record: ConversationRecord) -> dict[str, Any]:
    """A conversation as the conversations route lists it."""
    return {
        "id": record.id,
        "title": record.title,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "messages": record.message_count,
    }


class ChatRuntime:
    """The extension's state in the server process (one per server)."""

    def __init__(
        self, settings: ChatSettings, *, store: ChatStore | None = None, owner: str | None = None
    ) -> None:
        self.settings = settings
        self.owner = owner  # see actor_for
        self.store = store or ChatStore(settings.store or ChatStore.default_path())
        self._project: Project | None = None
        self._project_lock = asyncio.Lock()
        self._providers: OrderedDict[str, BaseLLMProvider] = OrderedDict()
        self._running: dict[str, asyncio.Task[Any]] = {}  # conversation id -> its turn
        self._permission = _resolve_permission(settings.permission)

    # -- parts -------------------------------------------------------------------------------

    async def project(self) -> Project:
        """The project, connected on first use (connecting may need the event loop)."""
        async with self._project_lock:
            if self._project is None:
                project = await connect(
                    self.settings.project,
                    exposed=self.settings.exposed_managers,
                    headers=dict(self.settings.headers) or None,
                    allowed_mutations=self.settings.allowed_mutations,
                    max_results=self.settings.max_results,
                    query_timeout=self.settings.query_timeout_seconds,
                )
                self.settings.validate_for(project)
                self._project = project
            return self._project

    def provider(self, conversation_id: str) -> BaseLLMProvider:
        """The conversation's provider instance (a small LRU cache; see the module docstring)."""
        provider = self._providers.get(conversation_id)
        if provider is None:
            try:
                provider = create_provider(self.settings.provider, self.settings.provider_config)
            except ValueError as error:
                raise ChatConfigurationError(f"provider: {error}", key="provider") from None
            self._providers[conversation_id] = provider
            while len(self._providers) > PROVIDER_CACHE_SIZE:
                self._providers.popitem(last=False)
        else:
            self._providers.move_to_end(conversation_id)
        return provider

    def actor(self, user: Any) -> Actor:
        """The actor for a Jupyter user on this server."""
        return actor_for(user, self.owner)

    def allowed(self, user: Any, request: Any) -> bool:
        """The ``permission`` setting's verdict; a hook that raises denies."""
        if self._permission is None:
            return True
        try:
            verdict = self._permission(user, request)
        except Exception:
            log.exception("the gmchat permission hook raised; denying")
            return False
        if inspect.isawaitable(verdict):  # a coroutine hook cannot be awaited here: deny loudly
            log.error("the gmchat permission hook must be synchronous; denying")
            return False
        return bool(verdict)

    # -- sessions ----------------------------------------------------------------------------

    def resolve_conversation(self, actor: Actor, conversation_id: Any) -> str:
        """The conversation a request means: ``conversation_id`` (KeyError when it is not the
        actor's), else the actor's most recent one, else a new one."""
        if conversation_id is not None:
            record = (
                self.store.conversation(conversation_id)
                if isinstance(conversation_id, str)
                else None
            )
            if record is None or record.actor_id != actor.id:
                raise KeyError(conversation_id)  # foreign and unknown look alike on purpose
            return record.id
        existing = self.store.conversations(actor.id)
        if existing:
            return existing[0].id
        return self.store.create_conversation(actor.id).id

    async def session(self, actor: Actor, conversation_id: Any) -> ChatSession:
        """A fresh session over the store for this actor's conversation (KeyError if foreign)."""
        resolved = self.resolve_conversation(actor, conversation_id)
        project = await self.project()
        session = ChatSession(
            project,
            self.provider(resolved),
            self.settings,
            store=self.store,
            actor=actor,
            conversation_id=resolved,
            hooks=Hooks(self.settings.hooks),
        )
        return session

    def find_confirmation(self, actor: Actor, confirmation_id: str) -> str | None:
        """The actor's conversation holding a pending confirmation with this id, if any."""
        for record in self.store.conversations(actor.id):
            found = self.store.confirmation(record.id, confirmation_id)
            if found is not None and found.state == "pending":
                return record.id
        return None

    # -- running turns -----------------------------------------------------------------------

    def busy(self, conversation_id: str | None) -> bool:
        """True while a turn of this conversation runs in this process."""
        task = self._running.get(conversation_id or "")
        return task is not None and not task.done()

    def start(self, conversation_id: str, events: AsyncIterator[Any]) -> TurnRun:
        """Run a turn's event iterator as a task feeding a queue (TurnBusy if one runs)."""
        if self.busy(conversation_id):
            raise TurnBusy(conversation_id)
        run = TurnRun(events)
        self._running[conversation_id] = run.task
        run.task.add_done_callback(lambda task: self._forget(conversation_id, task))
        return run

    def _forget(self, conversation_id: str, task: asyncio.Task[Any]) -> None:
        if self._running.get(conversation_id) is task:
            del self._running[conversation_id]

    async def cancel_all(self) -> None:
        """Cancel every running turn (server shutdown) and wait for them to unwind."""
        tasks = [task for task in self._running.values() if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._running.clear()

    async def aclose(self) -> None:
        """Cancel turns, close the project and the store."""
        await self.cancel_all()
        if self._project is not None:
            await self._project.aclose()
            self._project = None
        self.store.close()


_DONE = object()


class TurnRun:
    """A turn as a task: it pulls the session's events into a queue the transport drains.

    Running the turn in its own task is what lets a disconnect cancel the provider call even
    while the handler is blocked writing or waiting for the next event.
    """

    def __init__(self, events: AsyncIterator[Any]) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self._events = events
        self.task: asyncio.Task[None] = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        try:
            async for event in self._events:
                self.queue.put_nowait(event)
        finally:
            self.queue.put_nowait(_DONE)

    async def next(self, timeout: float | None = None) -> Any:
        """The next event, ``None`` at the end; TimeoutError after ``timeout`` of silence."""
        item = await asyncio.wait_for(self.queue.get(), timeout)
        if item is _DONE:
            if self.task.done() and not self.task.cancelled() and self.task.exception():
                raise self.task.exception()  # type: ignore[misc]
            return None
        return item

    def cancel(self) -> None:
        """Stop the turn (its provider call is cancelled with it)."""
        self.task.cancel()


def _resolve_permission(value: Callable[..., Any] | str | None) -> Callable[..., Any] | None:
    if value is None or callable(value):
        return value
    module, _, attribute = value.rpartition(".")
    hook = getattr(importlib.import_module(module), attribute)
    if not callable(hook):
        raise ChatConfigurationError(f"permission: {value!r} is not callable", key="permission")
    return hook  # type: ignore[no-any-return]
