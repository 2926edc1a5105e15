"""A conversation: persistence, context window, limits, audit, hooks and confirmations.

:class:`ChatSession` is what the notebook API, the widget and the server extension drive. It
owns one conversation of one actor in the store, builds each turn's bounded context, admits turns
against the actor's budgets, journals every event with its sequence number, and runs the
:class:`~gmchat_nb.core.loop.ToolLoop`. Confirmations are persisted and claimed atomically, so a
mutation can run at most once however many processes or requests try to confirm it.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import importlib
import logging
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .audit import AuditLog
from .events import ChatEvent, ConfirmMutation, Done, Error, TextChunk, error_event
from .loop import (
    Decision,
    LoopLimits,
    ToolLoop,
    Transport,
    TurnState,
    complete_text,
)
from .project.errors import ToolError
from .project.mutations import PreparedMutation
from .project.project import Project, QueryOutcome
from .prompt import build_system_prompt
from .providers.base import (
    BaseLLMProvider,
    Message,
    ProviderError,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
)
from .ratelimit import RateLimiter
from .recovery import OWNER, close_turn, driving, recover
from .settings import ChatSettings
from .store import ChatStore, ConfirmationRecord, StoredMessage
from .text import json_kind, lone_surrogate_at
from .tools import ToolRun

__all__ = ["HOOK_NAMES", "Actor", "ChatSession", "Hooks"]

log = logging.getLogger(__name__)

HOOK_NAMES = ("message_received", "tool_called", "mutation_executed", "error")
TITLE_LENGTH = 120
SUMMARY_INSTRUCTIONS = (
    "Summarise this earlier part of a conversation about a project's data in a few sentences. "
    "Keep the facts found (names, numbers), what the user wanted, which tools gave which "
    "results, and anything left unresolved. Write only the summary."
)


@dataclass(frozen=True, slots=True)
class Actor:
    """Who is chatting. Anonymous actors may read but never mutate."""

    id: str
    name: str = ""
    authenticated: bool = True

    @classmethod
    def local(cls) -> Actor:
        """The notebook's own user (authenticated: they run the kernel)."""
        user = getpass.getuser()
        return cls(id=f"local:{user}", name=user, authenticated=True)


class Hooks:
    """Callbacks per event name; a hook that raises is logged and never breaks a turn."""

    def __init__(self, hooks: Mapping[str, Any] | None = None) -> None:
        self._hooks: dict[str, list[Callable[..., Any]]] = {name: [] for name in HOOK_NAMES}
        for name, value in (hooks or {}).items():
            for hook in value if isinstance(value, list | tuple) else [value]:
                self.add(name, hook)

    def add(self, name: str, hook: Callable[..., Any] | str) -> None:
        """Register ``hook`` (a callable or a dotted path) for ``name``."""
        if name not in self._hooks:
            raise ValueError(f"unknown hook {name!r}; hooks: {', '.join(HOOK_NAMES)}")
        if isinstance(hook, str):
            module, _, attribute = hook.rpartition(".")
            hook = getattr(importlib.import_module(module), attribute)
        if not callable(hook):
            raise ValueError(f"hook {name!r} is not callable")
        self._hooks[name].append(hook)

    def fire(self, name: str, **payload: Any) -> None:
        """Call every hook for ``name``."""
        for hook in self._hooks.get(name, ()):
            try:
                hook(**payload)
            except Exception:
                log.exception("the %s hook %r raised; the turn goes on", name, hook)


class _Waiter:
    """One pending confirmation in this process: a future with a deadline."""

    def __init__(self, session: ChatSession, confirmation_id: str, timeout: float) -> None:
        self.session = session
        self.confirmation_id = confirmation_id
        self.timeout = timeout
        self.future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    async def wait(self) -> Decision:
        try:
            confirmed = await asyncio.wait_for(asyncio.shield(self.future), self.timeout)
        except TimeoutError:
            self.session._expire(self.confirmation_id)
            return "timed_out"
        finally:
            self.session._waiters.pop(self.confirmation_id, None)
        return self.session._claim(self.confirmation_id, confirmed)


class ChatSession:
    """One conversation of one actor over one project and provider."""

    def __init__(
        self,
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
    ) -> None:
        self.project = project
        self.provider = provider
        self.settings = settings
        self.store = store
        self.actor = actor
        self.audit = audit or AuditLog.from_settings(settings.audit)
        self.limiter = limiter or RateLimiter.from_settings(store, settings.rate_limit, clock=clock)
        self.hooks = hooks or Hooks(settings.hooks)
        self.clock = clock
        untitled = False
        if conversation_id is not None:
            record = store.conversation(conversation_id)
            if record is None or record.actor_id != actor.id:
                raise KeyError(f"no conversation {conversation_id!r} for this user")
            untitled = not record.title  # its first question will name it
        self.conversation_id = conversation_id
        self.outcomes: dict[str, QueryOutcome] = {}  # the current turn's, by tool call id
        self._busy = False
        self._waiters: dict[str, _Waiter] = {}
        self._turn: TurnState | None = None
        self._untitled = untitled
        self._unsaved: list[dict[str, Any]] = []
        self._journal: list[tuple[int, dict[str, Any]]] = []
        allowed = [name for name in settings.allowed_mutations if name in project.index.mutations]
        self._mutations = tuple(allowed)
        tools, self._system_prompt = _offer(project, settings, self._mutations)
        self._tools = list(tools)

    # -- public --------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """True while a turn runs (or waits for a confirmation)."""
        return self._busy

    @property
    def tools(self) -> list[ToolDefinition]:
        """The tools the model is offered."""
        return list(self._tools)

    @property
    def system_prompt(self) -> str:
        """The system prompt every turn starts with."""
        return self._system_prompt

    def new_conversation(self, title: str = "") -> str:
        """Start a new conversation and make it current."""
        if self._busy:
            raise RuntimeError("a turn is running; wait for it to end")
        self.conversation_id = self.store.create_conversation(self.actor.id, title).id
        self._untitled = not title  # the first question will name it
        return self.conversation_id

    def history(self) -> list[StoredMessage]:
        """The stored messages of the current conversation."""
        if self.conversation_id is None:
            return []
        return self.store.messages(self.conversation_id)

    async def run_turn(
        self, text: Any, *, transport: Transport = "stream"
    ) -> AsyncIterator[ChatEvent]:
        """Answer one user message: an async iterator of events ending in Done or Error.

        Text that cannot be stored — not a string, blank, or holding a lone surrogate (half of
        a UTF-16 pair, which no UTF-8 store or socket can carry) — is refused with
        ``bad_message`` before anything is stored; nothing is silently changed.
        """
        refusal = _text_refusal(text)
        if refusal is not None:
            yield error_event("bad_message", message=refusal)
            return
        if self._busy:
            yield error_event("turn_in_progress")
            return
        try:
            refused = self._admit(text)
        except Exception as error:  # the store failed before the turn began
            yield self._failed_to_start(error)
            return
        if refused is not None:
            yield refused
            return
        self._busy = True
        try:
            state = TurnState()
            await self.persist(Message("user", text), state)
            self.audit.emit("user_message", {"message": text, "session_key": self.conversation_id})
            self.hooks.fire(
                "message_received",
                actor=self.actor,
                message=text,
                conversation_id=self.conversation_id,
            )
            async for event in self._drive(state, transport, None):
                yield event
        finally:
            self._busy = False

    def _admit(self, text: str) -> Error | None:
        """Close what earlier turns left open, check budgets and confirmations, and make sure
        the conversation exists and is named; an error event when the turn may not start."""
        if self.conversation_id is not None:
            # A turn of this conversation left open by a process that died, or suspended at a
            # confirmation that expired, is closed first, so the context below is honest.
            recover(self.store, conversation_id=self.conversation_id, now=self.clock())
            if self.store.pending_confirmation(self.conversation_id, now=self.clock()):
                return error_event("confirmation_pending")
        decision = self.limiter.admit_request(self.actor.id)
        if not decision.allowed:
            return error_event("rate_limited", retry_after_seconds=decision.retry_after_seconds)
        if self.conversation_id is None:
            self.conversation_id = self.store.create_conversation(self.actor.id, _title(text)).id
        elif self._untitled:
            self.store.rename_conversation(self.conversation_id, _title(text))
        self._untitled = False
        return None

    def _failed_to_start(self, error: Exception) -> Error:
        """The one terminal event of a turn whose first step failed (logged server-side)."""
        log.exception("a chat turn could not start", exc_info=error)
        self.hooks.fire("error", actor=self.actor, error=error, context={"stage": "admission"})
        return error_event("chat_error")

    def confirm(self, confirmation_id: str, confirmed: bool) -> bool:
        """Resolve a confirmation a running turn waits for; False when none waits under that id."""
        waiter = self._waiters.get(confirmation_id)
        if waiter is None or waiter.future.done():
            return False
        waiter.future.set_result(bool(confirmed))
        return True

    async def resume(
        self,
        confirmation_id: str,
        confirmed: bool,
        *,
        transport: Transport = "sse",
        unavailable_code: str = "bad_event",
    ) -> AsyncIterator[ChatEvent]:
        """Resolve a persisted confirmation (the SSE confirm request) and finish its turn.

        The claim is atomic: a second claim — another request, another process — gets
        ``unavailable_code`` and the mutation never runs twice.
        """
        if self.confirm(confirmation_id, confirmed):
            return  # the turn that waits for it goes on and streams the rest
        if self._busy:
            yield error_event("turn_in_progress")
            return
        record = None
        if self.conversation_id is not None and isinstance(confirmation_id, str):
            record = self.store.claim_confirmation(
                self.conversation_id,
                confirmation_id,
                self.actor.id,
                now=self.clock(),
                owner=OWNER,
            )
        if record is None:
            yield error_event(unavailable_code, message=_UNAVAILABLE)
            return
        self._busy = True
        try:
            async for event in self._drive(
                TurnState.from_dict(record.turn_state.get("state", {})),
                transport,
                (record, "confirmed" if confirmed else "rejected"),
            ):
                yield event
        finally:
            self._busy = False

    # -- TurnIO --------------------------------------------------------------------------------

    async def persist(self, message: Message, state: TurnState) -> None:
        """Queue one message of the turn; it is written with the next flush."""
        self._turn = state
        self._unsaved.append(_message_dict(message))

    def checkpoint(self) -> None:
        """Write what the turn has so far now (before and after a data change)."""
        self._flush()

    def check_rate(self) -> Error | None:
        """Before each provider round: write what the turn has so far, then check budgets."""
        self._flush()
        decision = self.limiter.check_tokens(self.actor.id)
        if decision.allowed:
            return None
        return error_event("rate_limited", retry_after_seconds=decision.retry_after_seconds)

    def record_usage(self, usage: TokenUsage) -> None:
        """Count tokens against the actor's budgets."""
        self.limiter.record_usage(self.actor.id, usage)

    def tool_finished(self, call: ToolCallEvent, run: ToolRun) -> None:
        """Audit and hooks for one tool call."""
        session_key = self.conversation_id
        self.audit.emit(
            "tool_call", {"tool_name": call.name, "args": call.args, "session_key": session_key}
        )
        self.audit.emit(
            "tool_result",
            {
                "tool_name": call.name,
                "args": call.args,
                "result": run.result,
                "session_key": session_key,
            },
        )
        self.hooks.fire(
            "tool_called", actor=self.actor, tool_name=call.name, args=call.args, result=run.result
        )
        if call.name == "mutate":
            self._settle(call.id, run)
            self.hooks.fire(
                "mutation_executed",
                actor=self.actor,
                mutation=call.args.get("mutation"),
                input=call.args.get("input"),
                result=run.result,
            )

    def provider_failed(self, error: BaseException) -> None:
        """Provider details stay server-side: the log and the error hook."""
        log.warning("provider %s failed: %s", self.provider.__class__.__name__, error)
        self.hooks.fire("error", actor=self.actor, error=error, context={"stage": "provider"})

    async def open_confirmation(
        self, call: ToolCallEvent, prepared: PreparedMutation, state: TurnState, *, wait: bool
    ) -> _Waiter:
        """Persist the pending confirmation; the returned waiter resolves it."""
        assert self.conversation_id is not None
        now = self.clock()
        timeout = float(self.settings.confirm_timeout_seconds)
        self.store.add_confirmation(
            ConfirmationRecord(
                conversation_id=self.conversation_id,
                id=call.id,
                actor_id=self.actor.id,
                mutation=prepared.mutation,
                input=dict(prepared.input),
                state="pending",
                created_at=now,
                expires_at=now + timeout,
                resolved_at=None,
                turn_state={
                    "state": state.to_dict(),
                    "call": {"id": call.id, "name": call.name, "args": call.args},
                },
            )
        )
        waiter = _Waiter(self, call.id, timeout)
        if wait:
            self._waiters[call.id] = waiter
        return waiter

    # -- internals -----------------------------------------------------------------------------

    async def _drive(
        self,
        state: TurnState,
        transport: Transport,
        resumed: tuple[ConfirmationRecord, Decision] | None,
    ) -> AsyncIterator[ChatEvent]:
        """Run (or resume) the loop, numbering, journaling and auditing every event.

        Every turn ends with exactly one terminal event (``done`` or ``error``), and that event is
        yielded only after it and everything before it are written, so what a client saw last is
        always in the store. A failing write ends the turn with ``chat_error`` instead (and is not
        retried by the next turn); a turn cancelled from outside (a client that went away) is
        closed as interrupted (:mod:`gmchat_nb.core.recovery`).
        """
        assert self.conversation_id is not None
        conversation_id = self.conversation_id
        # A resumed turn goes on numbering where its journal stopped.
        sequence = len(self.store.events(conversation_id, turn_id=state.turn_id)) if resumed else 0
        self.outcomes = {}  # this turn's query evidence, by tool call id
        answer: list[str] = []
        loop = self._loop(transport)
        self._turn = state
        ended = False
        with driving(conversation_id, state.turn_id):
            try:
                self._flush(turn_state="running")  # the context is read from the store
                messages = await self._context(state, pending_tail=resumed is not None)
                events: AsyncIterator[ChatEvent] = loop.run(messages, state)
                if resumed is not None:
                    events = self._resumed(loop, messages, state, *resumed)
                async for event in events:
                    sequence += 1
                    numbered = event.numbered(sequence)
                    self._journal.append((sequence, numbered.to_dict()))
                    if isinstance(event, TextChunk):
                        answer.append(event.content)
                    elif isinstance(numbered, Done | Error):
                        self._end(state, numbered)  # written before anyone sees it
                        ended = True
                    elif isinstance(event, ConfirmMutation):
                        # A confirm request may resume the turn in another process.
                        suspended = transport == "sse"
                        self._flush(turn_state="suspended" if suspended else None)
                        ended = suspended
                    yield numbered
            except Exception as error:  # a bug or a failed write: the generic public event
                if ended:
                    raise  # the turn already ended; this failure is the caller's to see
                log.exception("chat turn failed")
                self.hooks.fire("error", actor=self.actor, error=error, context={"stage": "turn"})
                sequence += 1
                failure = error_event("chat_error").numbered(sequence)
                self._journal.append((sequence, failure.to_dict()))
                with contextlib.suppress(Exception):  # the store may be what failed
                    self._end(state, failure)
                ended = True
                yield failure
            except (asyncio.CancelledError, GeneratorExit):
                if not ended:
                    self._interrupt(state, "the client went away or the request was cancelled")
                raise
        if answer:
            self.audit.emit(
                "assistant_message",
                {"message": "".join(answer), "session_key": self.conversation_id},
            )

    def _loop(self, transport: Transport) -> ToolLoop:
        return ToolLoop(
            self.project,
            self.provider,
            self._tools,
            LoopLimits(
                max_rounds=self.settings.max_rounds,
                max_retries=self.settings.max_retries_per_message,
                max_mutations=self.settings.max_mutations_per_message,
                confirm_mutations=frozenset(self.settings.confirm_mutations),
                confirm_timeout_seconds=float(self.settings.confirm_timeout_seconds),
                allowed_mutations=frozenset(self._mutations),
                recover_missing_tool_calls=self.settings.recover_missing_tool_calls,
            ),
            self,
            authenticated=self.actor.authenticated,
            transport=transport,
            outcomes=self.outcomes,
        )

    def _end(self, state: TurnState, terminal: Done | Error) -> None:
        """Write the turn's last messages and journal with its terminal event, and its state."""
        if isinstance(terminal, Error) and terminal.code != "confirmation_required_transport":
            # Leave no dangling question: the next turn's context says this one failed.
            self._unsaved.append(
                _message_dict(
                    Message(
                        "assistant", f"(This request ended without an answer: {terminal.code}.)"
                    )
                )
            )
        self._flush(turn_state="done" if isinstance(terminal, Done) else "failed")

    def _interrupt(self, state: TurnState, reason: str) -> None:
        """Close a turn cancelled mid-way: what it did so far is written, then it is closed as
        interrupted like a turn whose process died (never raises: it runs while unwinding)."""
        if self.conversation_id is None:
            return
        try:
            self._flush(turn_state="running")
            turn = self.store.turn(self.conversation_id, state.turn_id)
            if turn is not None and turn.state == "running":
                close_turn(self.store, turn, reason, now=self.clock())
        except Exception:
            log.exception("could not record the interrupted turn %s", state.turn_id)

    def _flush(self, *, turn_state: str | None = None) -> None:
        """Write the turn's queued messages and events in one transaction (at round starts,
        before effects and confirmations, and at the end: a few writes per turn, not one per
        event). The queues are emptied first: a write that fails loses only this turn's rows
        and never poisons the next turn."""
        unsaved, journal = self._unsaved, self._journal
        self._unsaved, self._journal = [], []
        if self.conversation_id is None or self._turn is None:
            return
        if unsaved or journal or turn_state is not None:
            self.store.record_turn(
                self.conversation_id,
                self._turn.turn_id,
                unsaved,
                journal,
                state=turn_state,
                owner=OWNER,
            )

    async def _resumed(
        self,
        loop: ToolLoop,
        messages: list[Message],
        state: TurnState,
        record: ConfirmationRecord,
        decision: Decision,
    ) -> AsyncIterator[ChatEvent]:
        call_data = record.turn_state.get("call", {})
        call = ToolCallEvent(
            str(call_data.get("id", record.id)), "mutate", dict(call_data.get("args", {}))
        )
        try:
            prepared = loop.prepare(call.args)
        except ToolError as error:  # the schema or the allow-list changed since it was asked
            yield await loop.record_result(messages, call, ToolRun(error.to_result()), state)
        else:
            async for event in loop.finish_mutation(messages, call, prepared, decision, state):
                yield event
        async for event in loop.run(messages, state):
            yield event

    def _claim(self, confirmation_id: str, confirmed: bool) -> Decision:
        assert self.conversation_id is not None
        record = self.store.claim_confirmation(
            self.conversation_id, confirmation_id, self.actor.id, now=self.clock(), owner=OWNER
        )
        if record is None:
            return "unavailable"
        return "confirmed" if confirmed else "rejected"

    def _settle(self, confirmation_id: str, run: ToolRun) -> None:
        """Record how a claimed confirmation ended, from its tool result."""
        if self.conversation_id is None:
            return
        record = self.store.confirmation(self.conversation_id, confirmation_id)
        if record is None or record.state != "claimed":
            return
        status = run.result.get("status") if isinstance(run.result, dict) else None
        final = {"executed": "executed", "cancelled": "rejected"}.get(str(status), "failed")
        self.store.finish_confirmation(
            self.conversation_id, confirmation_id, final, now=self.clock()
        )

    def _expire(self, confirmation_id: str) -> None:
        assert self.conversation_id is not None
        record = self.store.confirmation(self.conversation_id, confirmation_id)
        if record is not None and record.state == "pending":
            self.store.finish_confirmation(
                self.conversation_id, confirmation_id, "expired", now=self.clock()
            )

    async def _context(self, state: TurnState, *, pending_tail: bool) -> list[Message]:
        """The bounded context: system prompt, summary of older messages, the recent window."""
        assert self.conversation_id is not None
        stored = self.store.messages(self.conversation_id)
        start = _window_start(
            stored, self.settings.summarize_after, self.settings.max_recent_messages
        )
        messages = [Message("system", self._system_prompt)]
        if start > 0:
            summary = await self._summary(stored[:start], state)
            if summary:
                messages.append(
                    Message("system", f"Summary of the earlier conversation: {summary}")
                )
        messages.extend(_to_provider(stored[start:], pending_tail=pending_tail))
        return messages

    async def _summary(self, older: list[StoredMessage], state: TurnState) -> str:
        """The summary covering exactly ``older``: reused when its marker matches, else made."""
        assert self.conversation_id is not None
        record = self.store.conversation(self.conversation_id)
        through = older[-1].id
        if record is not None and record.summary and record.summarized_through == through:
            return record.summary
        lines = "\n".join(_summary_line(message) for message in older)
        state.rounds += 1  # a summary is a provider round like any other
        try:
            text, usage = await complete_text(
                self.provider,
                [Message("system", SUMMARY_INSTRUCTIONS), Message("user", lines)],
            )
        except (ProviderError, TimeoutError) as error:
            self.provider_failed(error)
            return ""
        state.add_usage(usage)
        self.record_usage(usage)
        if text.strip():
            self.store.set_summary(self.conversation_id, text.strip(), through)
        return text.strip()


_UNAVAILABLE = (
    "There is no pending confirmation with that id in this conversation: it is unknown, was "
    "already decided, or expired."
)


def _text_refusal(text: Any) -> str | None:
    """Why a user message cannot be accepted, or None."""
    if text is None:
        return "Message text is required."
    if not isinstance(text, str):
        return f"Message text must be a string, not {json_kind(text)}."
    if not text.strip():
        return "Message text is required."
    position = lone_surrogate_at(text)
    if position is not None:
        return (
            f"Message text has a lone surrogate (U+{ord(text[position]):04X}) at character "
            f"{position}, which is not valid Unicode; send the text as valid UTF-8."
        )
    return None


def _message_dict(message: Message) -> dict[str, Any]:
    """A provider message as :meth:`ChatStore.record_turn` takes it."""
    return {
        "role": message.role,
        "content": message.content,
        "tool_calls": [
            {"id": call.id, "name": call.name, "args": call.args} for call in message.tool_calls
        ],
        "tool_call_id": message.tool_call_id,
        "tool_name": message.tool_name,
        "tool_result": message.tool_result,
    }


# What a session offers the model depends only on the project and three settings, and building it
# (the tool schemas copied, the prompt written from the index) cost more than a small turn's
# queries; the server opens a session per request. Shared read-only: providers never change them.
_OFFERS: weakref.WeakKeyDictionary[
    Project, dict[tuple[Any, ...], tuple[tuple[ToolDefinition, ...], str]]
] = weakref.WeakKeyDictionary()


def _offer(
    project: Project, settings: ChatSettings, mutations: tuple[str, ...]
) -> tuple[tuple[ToolDefinition, ...], str]:
    """The tools and the system prompt for ``project`` under these settings (built once)."""
    key = (settings.tool_strategy, settings.system_prompt, mutations)
    offers = _OFFERS.setdefault(project, {})
    offer = offers.get(key)
    if offer is None:
        tools = tuple(
            ToolDefinition.from_dict(tool)
            for tool in project.tool_definitions(settings.tool_strategy)
            if tool["name"] != "mutate" or mutations
        )
        prompt = build_system_prompt(
            project.index, developer_instructions=settings.system_prompt, mutations=mutations
        )
        offer = offers[key] = (tools, prompt)
    return offer


def _title(text: str) -> str:
    """The first eight words of the first question, at most 120 characters."""
    words = text[:2000].split()
    title = " ".join(words[:8]) + ("…" if len(words) > 8 else "")
    return title if len(title) <= TITLE_LENGTH else title[: TITLE_LENGTH - 1] + "…"


def _window_start(stored: list[StoredMessage], summarize_after: int, max_recent: int) -> int:
    """Where the verbatim window begins: everything fits, or the last ``max_recent`` messages
    moved back so no tool result loses its call, and the latest tool exchange always kept."""
    if len(stored) <= summarize_after:
        return 0
    start = max(0, len(stored) - max_recent)
    latest_tool = max((i for i, m in enumerate(stored) if m.role == "tool"), default=-1)
    if 0 <= latest_tool < start:
        start = latest_tool
    while start > 0 and stored[start].role == "tool":
        start -= 1
    return start


def _to_provider(stored: Iterable[StoredMessage], *, pending_tail: bool) -> list[Message]:
    """Stored rows as provider messages; a tool exchange missing results becomes plain text."""
    rows = list(stored)
    answered = {m.tool_call_id for m in rows if m.role == "tool"}
    messages: list[Message] = []
    for position, row in enumerate(rows):
        if row.role == "assistant" and row.tool_calls:
            calls = tuple(
                ToolCallEvent(str(call["id"]), str(call["name"]), dict(call.get("args") or {}))
                for call in row.tool_calls
            )
            complete = all(call.id in answered for call in calls)
            is_tail = position == len(rows) - 1
            if complete or (pending_tail and is_tail):
                messages.append(Message("assistant", row.content, tool_calls=calls))
            else:
                names = ", ".join(call.name for call in calls)
                messages.append(
                    Message("assistant", f"{row.content}\n(Unfinished tool call: {names}.)".strip())
                )
        elif row.role == "tool":
            messages.append(
                Message(
                    "tool",
                    tool_call_id=row.tool_call_id,
                    tool_name=row.tool_name,
                    tool_result=row.tool_result,
                )
            )
        elif row.role in ("user", "assistant", "system"):
            messages.append(Message(row.role, row.content))  # type: ignore[arg-type]
    return messages


def _summary_line(message: StoredMessage) -> str:
    if message.role == "tool":
        return f"tool:{message.tool_name}: {str(message.tool_result)[:800]}"
    if message.tool_calls:
        calls = ", ".join(f"{call['name']}({call.get('args')})" for call in message.tool_calls)
        return f"assistant (called {calls}): {message.content}"
    return f"{message.role}: {message.content}"
