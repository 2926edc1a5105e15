"""What the extension shares between requests: settings, the project, the store, running turns.

Every request builds a fresh :class:`~gmchat_nb.core.session.ChatSession` from the SQLite store,
so a confirm POST works whichever handler or connection served the stream. Two things live in
memory only, and only because they cannot live in the store: provider instances per
conversation (scripted test providers are stateful, and real SDK clients are costly to rebuild)
and the running turns (so a disconnect or ``stop_extension`` can cancel them).

Sessions, the project, the store and the turns themselves live on the runtime's
:class:`~gmchat_nb.server_ext.engine.Engine` thread; the handlers, on Jupyter's loop, reach them
only through the ``async`` methods here, which hop to the engine and back. Turns are admitted,
held under a lease and settled by the store's :class:`~gmchat_nb.core.turns.TurnOwner`: on start
and then every half lease, the runtime sweeps its scope's turns nobody drives any more (a dead or
stopped server's), runs on the ones that only read and closes the rest.

Over 400 lines: the one object every handler shares (:class:`ChatRuntime`): its project,
providers, store, sweeps, journal watchers and running turns share its engine and its lifetime;
running a turn is in ``turn_run.py``.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import inspect
import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..core.dotted import DottedPathError, resolve_dotted
from ..core.dsn import without_password
from ..core.events import ChatEvent, Notice, event_from_dict
from ..core.knowledge import project_key
from ..core.project import Project
from ..core.project.targets import demo_name
from ..core.providers.base import BaseLLMProvider
from ..core.providers.registry import provider_label
from ..core.ratelimit import RateLimiter
from ..core.session import (
    Actor,
    ChatSession,
    build_provider,
    connect_project,
    open_session,
    open_store,
    turn_start,
)
from ..core.session.ending import fail_unstarted
from ..core.settings import ChatConfigurationError, ChatSettings
from ..core.turns import (
    LEASE_SECONDS,
    SERVER_STOPPED,
    Admission,
    ChatStore,
    ConversationRecord,
    StoreUnavailableError,
    TurnOwner,
    TurnRecord,
    server_scope,
)
from .engine import Engine
from .live import LiveFeed
from .turn_run import ConversationBusy, TurnRun

__all__ = ["ChatRuntime", "actor_for", "conversation_json"]

log = logging.getLogger(__name__)

PROVIDER_CACHE_SIZE = 256


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
        self,
        settings: ChatSettings,
        *,
        store: ChatStore | None = None,
        owner: str | None = None,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        self.settings = settings
        self.owner = owner  # see actor_for
        self._permission = _resolve_permission(settings.permission)
        self._permission_takes_action = _takes_action(self._permission)
        # A store that cannot be opened (read-only, not a database, damaged) keeps the routes:
        # they answer 503 naming the problem until it is fixed.
        self.store = open_store(settings, store, open_later=True)
        self.turns = TurnOwner.of(self.store, scope=server_scope(), lease_seconds=lease_seconds)
        self.limiter = RateLimiter.from_settings(self.store, settings.rate_limit)
        self.engine = Engine()
        self._project: Project | None = None
        self._project_lock = asyncio.Lock()  # used on the engine's loop only
        self._providers: OrderedDict[str, BaseLLMProvider] = OrderedDict()
        self._provider_label: str | None = None
        self._running: dict[str, TurnRun] = {}  # conversation id -> its turn
        self._running_lock = threading.Lock()  # the engine's thread removes finished turns
        # conversation id -> wake-ups of its event-stream readers (each on its reader's loop)
        self._watchers: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._watchers_lock = threading.Lock()
        self.live = LiveFeed()  # what readers here are told that the journal cannot hold
        self.store.on_journal(self._journaled)
        self.store.on_cancel(self._cancel_requested)
        self.turns.on_lost(self._cancel_requested)  # taken over elsewhere: stop it here
        self.turns.on_store_wait(self._store_waits)
        continued: list[TurnRecord] = []
        try:
            # Turns a dead or stopped server left: those that only read run on here (taken over
            # by exactly one server), the rest are closed as interrupted.
            continued = self.turns.sweep()
        except StoreUnavailableError:  # the store said what is wrong with it, once
            pass
        except Exception:  # a store that cannot be swept now still serves new turns
            log.exception("could not settle the chat turns a previous server left open")
        # Connect now, so a project that cannot be reached or does not fit the settings is in the
        # log at start-up; requests connect again if this failed (a server that came up later).
        self.engine.submit(self._connect()).add_done_callback(_log_connect_failure)
        if continued:
            log.warning("continuing %d chat turn(s) a stopped server left", len(continued))
            self.engine.submit(self._continue(continued))
        self._sweeper = self.engine.submit(self._sweep_forever())
        # A server stopped by SIGINT (how JupyterHub's spawner stops it) exits without stopping
        # its extensions: its turns are handed over at exit all the same.
        atexit.register(self._hand_over)

    def _hand_over(self) -> None:
        """Hand this server's turns to the next server that may run them (never raises: it runs
        at exit)."""
        try:
            handed = self.turns.hand_over()
        except Exception as error:
            log.warning("could not hand over the running chat turns: %s", error)
            return
        if handed:
            log.warning("handed %d running chat turn(s) to the next server", handed)

    # -- parts -------------------------------------------------------------------------------

    async def project(self) -> Project:
        """The project, connected on first use (on the engine, like everything it runs)."""
        return await self.engine.run(self._connect())

    async def _connect(self) -> Project:
        async with self._project_lock:
            if self._project is None:
                self._project = await connect_project(self.settings)
            return self._project

    def provider(self, conversation_id: str) -> BaseLLMProvider:
        """The conversation's provider instance (a small LRU cache; see the module docstring)."""
        provider = self._providers.get(conversation_id)
        if provider is None:
            provider = build_provider(self.settings)
            self._providers[conversation_id] = provider
            while len(self._providers) > PROVIDER_CACHE_SIZE:
                self._providers.popitem(last=False)
        else:
            self._providers.move_to_end(conversation_id)
        return provider

    def header(self) -> dict[str, str]:
        """What a client's header shows of this server's chat, as the widget's header shows its
        kernel's: the project (``demo:inventory``, a URL without its password) and the
        provider's label (``openai:gpt-4.1-mini``, ``offline``; the setting as written when the
        provider cannot be built)."""
        if self._provider_label is None:
            try:
                self._provider_label = provider_label(build_provider(self.settings))
            except Exception:  # (a turn says what is wrong with it; a header is no place to)
                spec = self.settings.provider
                named = spec if isinstance(spec, str) else getattr(spec, "__name__", None)
                self._provider_label = named or type(spec).__name__
        target = self.settings.project
        demo = demo_name(target)
        return {
            "project": f"demo:{demo}" if demo else without_password(str(target)),
            "provider": self._provider_label,
        }

    def actor(self, user: Any) -> Actor:
        """The actor for a Jupyter user on this server."""
        return actor_for(user, self.owner)

    def allowed(self, user: Any, request: Any, action: str | None = None) -> bool:
        """The ``permission`` setting's verdict; a hook that raises denies. With ``action``
        (``"knowledge_write_shared"``) a hook that takes an ``action`` keyword is asked
        ``hook(user, request, action=action)``; one that does not has already answered for the
        request itself, which got this far: yes."""
        if self._permission is None:
            return True
        if action is not None and not self._permission_takes_action:
            return True
        try:
            extra = {} if action is None else {"action": action}
            verdict = self._permission(user, request, **extra)
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
        return await self.engine.run(self._open_session(actor, conversation_id))

    async def _open_session(self, actor: Actor, conversation_id: Any) -> ChatSession:
        resolved = self.resolve_conversation(actor, conversation_id)
        project = await self._connect()
        return open_session(
            project,
            self.provider(resolved),
            self.settings,
            store=self.store,
            actor=actor,
            conversation_id=resolved,
        )

    # -- turns -------------------------------------------------------------------------------

    def admit(
        self, actor: Actor, text: str, *, turn_id: str, conversation_id: str | None
    ) -> Admission:
        """On the engine: admit (and start) the actor's turn under its client's ``turn_id``, in
        one store write, before any project or provider work (so retries get the same
        admission while the project still connects). Raises ``TurnConflict``, ``TurnBusy``,
        ``UnknownConversation``."""
        return self.turns.admit(
            actor.id,
            text,
            turn_id=turn_id,
            conversation_id=conversation_id,
            start=turn_start(
                text,
                self.limiter,
                project_key(self.settings.project, self.settings.project_id),
            ),
        )

    def run_admitted(self, actor: Actor, admission: Admission, text: str) -> None:
        """On the engine: run a turn this process admitted, detached (readers follow the
        journal); a turn that cannot start (the project cannot be connected) ends with
        ``chat_error``, never left open."""

        async def events() -> AsyncIterator[ChatEvent]:
            try:
                session = await self._open_session(actor, admission.conversation_id)
            except Exception:
                log.exception("could not start the admitted chat turn %s", admission.turn_id)
                fail_unstarted(self.turns, admission, actor.id)
                return
            async for event in session.drive(admission, text, transport="sse"):
                yield event

        try:
            self.start(
                admission.conversation_id,
                events(),
                suspends=True,
                detached=True,
                turn_id=admission.turn_id,
            )
        except ConversationBusy:  # the store decided it runs here; this process still runs another
            log.error("the admitted chat turn %s found its conversation busy", admission.turn_id)
            fail_unstarted(self.turns, admission, actor.id)

    async def _continue(self, turns: list[TurnRecord]) -> None:
        """On the engine: run each taken-over turn on, detached (readers follow the journal);
        one that cannot be run is closed as interrupted, never left open."""
        for turn in turns:
            record = self.store.conversation(turn.conversation_id)
            try:
                if record is None:
                    raise KeyError(f"conversation {turn.conversation_id} was deleted")
                actor = Actor(id=record.actor_id, name=record.actor_id.removeprefix("jupyter:"))
                session = await self._open_session(actor, turn.conversation_id)
                self.start(
                    turn.conversation_id,
                    session.continue_turn(turn),
                    suspends=True,
                    detached=True,
                    turn_id=turn.id,
                )
            except Exception:
                log.exception("could not continue the chat turn %s", turn.id)
                self.turns.let_go(turn.conversation_id, turn.id)
                current = self.store.turn(turn.conversation_id, turn.id)
                if current is not None:
                    self.turns.close(current, SERVER_STOPPED)

    async def _sweep_forever(self) -> None:
        """On the engine: every half lease, settle the turns of this scope nobody drives (a
        peer that died): take over and run on those that only read, close the rest."""
        while True:
            await asyncio.sleep(self.turns.lease_seconds / 2)
            try:
                taken = self.turns.sweep()
            except StoreUnavailableError:  # away: the store says why once; the next sweep tries
                continue
            except Exception:
                log.exception("could not sweep the chat turns")
                continue
            if taken:
                log.warning("taking over %d chat turn(s) a stopped server left", len(taken))
                await self._continue(taken)

    def find_confirmation(self, actor: Actor, confirmation_id: str) -> str | None:
        """The actor's conversation holding a pending confirmation with this id, if any."""
        return self.store.pending_conversation(actor.id, confirmation_id)

    def durable_turn_of(self, conversation_id: str, confirmation_id: str) -> str | None:
        """On the engine: the id of the turn a confirmation resumes when that turn is durable
        (admitted under a client's turn id with ``POST turns/``), else None. Such a turn runs
        detached from any request, and resuming it must not tie it to the confirming one."""
        record = self.store.confirmation(conversation_id, confirmation_id)
        if record is None:
            return None
        turn_id = record.turn_state.get("state", {}).get("turn_id")
        if not isinstance(turn_id, str):
            return None
        turn = self.store.turn(conversation_id, turn_id)
        return turn_id if turn is not None and turn.input_hash is not None else None

    def journaled_end(self, conversation_id: str, turn_id: str) -> ChatEvent | None:
        """On the engine: the turn's terminal event (``done`` or ``error``) as its journal has
        it, or None. A durable turn stopped by an explicit cancel ends in the journal, not in
        the run a confirming request reads: that request's answer ends with it all the same."""
        events = self.store.events(conversation_id, turn_id=turn_id)
        if events and events[-1].get("type") in ("done", "error"):
            return event_from_dict(events[-1])
        return None

    async def on_engine(self, function: Callable[..., Any], *args: Any) -> Any:
        """Run a store or session call on the engine's thread (never on the server's loop)."""
        return await self.engine.call(function, *args)

    # -- journal readers ---------------------------------------------------------------------

    def watch(self, conversation_id: str) -> asyncio.Event:
        """An event set (on the calling loop) when the conversation journals new events; call
        :meth:`unwatch` with it when done. A wake-up only: readers read the journal."""
        woken = asyncio.Event()
        with self._watchers_lock:
            self._watchers.setdefault(conversation_id, set()).add(
                (asyncio.get_running_loop(), woken)
            )
        return woken

    def unwatch(self, conversation_id: str, woken: asyncio.Event) -> None:
        """Stop waking ``woken``."""
        with self._watchers_lock:
            watchers = self._watchers.get(conversation_id, set())
            watchers.difference_update({item for item in watchers if item[1] is woken})
            if not watchers:
                self._watchers.pop(conversation_id, None)

    def _journaled(self, conversation_id: str) -> None:
        with self._watchers_lock:
            watchers = list(self._watchers.get(conversation_id, ()))
        for loop, woken in watchers:
            with contextlib.suppress(RuntimeError):  # that reader's loop has closed
                loop.call_soon_threadsafe(woken.set)

    def _store_waits(self, conversation_id: str, turn_id: str, notice: Notice) -> None:
        # A turn run here cannot write (its store is full, read-only or away): the journal
        # cannot say so, so its live readers here are told at once — the request streaming it,
        # and every reader of the conversation's events (woken as by a commit).
        run = self.running_turn(conversation_id)
        if run is not None and run.turn_id in (None, turn_id):
            run.notify(notice)
        self.live.publish(conversation_id, {**notice.to_dict(), "turn_id": turn_id})
        self._journaled(conversation_id)

    def _cancel_requested(self, conversation_id: str, turn_id: str) -> None:
        # A cancel command recorded by any server sharing the store (this one included): the
        # process running the turn stops it now, as a cancel on its own route would.
        run = self.running_turn(conversation_id)
        if run is not None and run.turn_id == turn_id:
            run.cancel()

    # -- running turns -----------------------------------------------------------------------

    def running_turn(self, conversation_id: str) -> TurnRun | None:
        """The turn running in the conversation in this process, if any."""
        with self._running_lock:
            run = self._running.get(conversation_id)
        return run if run is not None and not run.done() else None

    def running_conversations(self) -> list[str]:
        """The conversations with a turn running in this process."""
        with self._running_lock:
            return [cid for cid, run in self._running.items() if not run.done()]

    def start(
        self,
        conversation_id: str,
        events: AsyncIterator[ChatEvent],
        *,
        suspends: bool = False,
        streaming: bool = True,
        detached: bool = False,
        durable: bool = False,
        turn_id: str | None = None,
    ) -> TurnRun:
        """Run a turn's events on the engine, delivered to the calling loop (ConversationBusy if one
        runs). ``suspends``: the transport ends the turn at ``confirm_mutation`` (SSE);
        ``streaming=False``: the caller wants the events only at the end (plain HTTP);
        ``detached``: nobody reads them (an admitted turn: readers follow the journal);
        ``durable``: a reader that goes away does not stop it (see :class:`TurnRun`).
        ``turn_id`` lets an explicit cancel (:meth:`_cancel_requested`) find it."""
        with self._running_lock:
            current = self._running.get(conversation_id)
            if current is not None and not current.done():
                raise ConversationBusy(conversation_id)
            run = TurnRun(
                self.engine,
                events,
                suspends=suspends,
                streaming=streaming,
                detached=detached,
                durable=durable,
                turn_id=turn_id,
            )
            self._running[conversation_id] = run
        run.when_done(lambda: self._forget(conversation_id, run))
        return run

    def _forget(self, conversation_id: str, run: TurnRun) -> None:
        with self._running_lock:
            if self._running.get(conversation_id) is run:
                del self._running[conversation_id]

    async def cancel_all(self) -> None:
        """Cancel every running turn (server shutdown) and wait for them to unwind."""
        with self._running_lock:
            runs = [run for run in self._running.values() if not run.done()]
        for run in runs:
            run.cancel()
        if runs:
            await asyncio.gather(*(run.finished() for run in runs), return_exceptions=True)
        with self._running_lock:
            self._running.clear()

    async def aclose(self) -> None:
        """Cancel turns (one that only read is handed to the next server that may run it),
        close the project and the store, stop the engine."""
        atexit.unregister(self._hand_over)
        self.turns.stopping = True
        self._sweeper.cancel()
        await self.cancel_all()
        await self.on_engine(self._hand_over)  # any the cancelled runs left
        if self._project is not None and self.engine.running:
            await self.engine.run(self._project.aclose())
        self._project = None
        self.store.close()
        self.engine.stop()


def _log_connect_failure(future: concurrent.futures.Future[Project]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("gmchat could not connect its project: %s", future.exception())


def _takes_action(hook: Callable[..., Any] | None) -> bool:
    """Whether a ``permission`` hook can be asked about an ``action`` (a keyword of that name, or
    ``**kwargs``)."""
    if hook is None:
        return False
    try:
        parameters = inspect.signature(hook).parameters.values()
    except (TypeError, ValueError):  # a callable whose signature cannot be read: not asked
        return False
    return any(
        p.kind is p.VAR_KEYWORD
        or (p.name == "action" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
        for p in parameters
    )


def _resolve_permission(value: Callable[..., Any] | str | None) -> Callable[..., Any] | None:
    if value is None or callable(value):
        return value
    try:
        hook: Callable[..., Any] = resolve_dotted(value, key="permission")
    except DottedPathError as error:
        raise ChatConfigurationError(str(error), key=error.key) from None
    return hook
