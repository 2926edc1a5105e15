"""``gmchat_nb.Chat``: the object an analyst holds in a notebook.

>>> chat = Chat()                                    # the demo project, the offline provider
>>> turn = await chat.ask("Which projects use parts made of cobalt?")
>>> turn.answer, turn.frames[-1], turn.evidence

Every turn's events stream through :meth:`Chat.stream` (the widget and the server consume it);
:meth:`Chat.ask` collects them into a :class:`Turn` with the answer, one pandas DataFrame per
successful query, its charts and an evidence table that says where every number came from. A
notebook shows a ``Chat`` as its chat panel: :mod:`gmchat_nb.widget` tells IPython how (the
widget is a view on the chat, so it knows the chat and the chat does not know it).

Over 400 lines: the two classes of the notebook API, :class:`Turn` and :class:`Chat`, read the
same events and belong together.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .charts import Chart, turn_charts
from .chat_knowledge import ChatKnowledge
from .core.events import ChatEvent, ToolResult, answer_text, event_from_dict
from .core.frames import flatten_row
from .core.project import Project
from .core.project.project import QueryOutcome
from .core.session import (
    Actor,
    ChatSession,
    build_provider,
    connect_project,
    open_session,
    open_store,
)
from .core.session.messages import text_refusal
from .core.session.usage import conversation_usage
from .core.settings import ChatSettings, load_settings
from .core.trace import TurnTrace
from .core.turns import (
    FINAL_TURN_STATES,
    SERVER_STOPPED,
    Admission,
    ChatStore,
    TurnConflict,
)

if TYPE_CHECKING:
    import pandas as pd
    from nbformat import NotebookNode

__all__ = ["Chat", "Turn"]


@dataclass
class Turn:
    """One question and everything that answered it."""

    question: str
    events: list[dict[str, Any]] = field(default_factory=list)
    outcomes: list[QueryOutcome] = field(default_factory=list)
    call_ids: list[str] = field(default_factory=list)  # the tool call behind each outcome
    date_columns: dict[str, set[str]] = field(default_factory=dict)
    turn_id: str | None = None  # the turn's id in the store's journal
    positions: dict[int, int] = field(default_factory=dict)  # sequence -> journal position
    # what the turn did, step by step (model requests, retries, tool calls, guard and gate
    # decisions, timings): ``trace.to_dict()`` / ``trace.to_json()``; None for a turn this
    # process did not run (one rejoined or replayed)
    trace: TurnTrace | None = None
    settings: ChatSettings | None = field(default=None, repr=False)  # for the charts' cells

    def add(self, payload: dict[str, Any]) -> None:
        """Take one event of the turn. The first event a new driver wrote after a crash drops
        the events the crash cut off (its ``continues_after``)."""
        cut = payload.get("continues_after")
        if isinstance(cut, int):
            self.events = [e for e in self.events if int(e.get("sequence") or 0) <= cut]
        self.events.append(payload)

    @property
    def answer(self) -> str:
        """The assistant's text: its text_chunk contents, without those a stream_reset withdrew."""
        return answer_text(self.events)

    @property
    def error(self) -> dict[str, Any] | None:
        """The error event that ended the turn, if one did."""
        return next((e for e in self.events if e["type"] == "error"), None)

    @property
    def usage(self) -> dict[str, int]:
        """Tokens the turn used (``cost["tokens"]`` counts cached and reasoning tokens too)."""
        done = next((e for e in self.events if e["type"] == "done"), None)
        return dict(done["usage"]) if done else {"input_tokens": 0, "output_tokens": 0}

    @property
    def cost(self) -> dict[str, Any] | None:
        """What the turn's model requests cost (``done.cost``: ``usd``, ``None`` when a price is
        unknown; sources, tokens, models, context), or ``None`` before it ends."""
        done = next((e for e in self.events if e["type"] == "done"), None)
        return dict(done["cost"]) if done and done.get("cost") else None

    @property
    def recalled(self) -> list[dict[str, Any]]:
        """The knowledge recalled for the turn (its ``recall`` event's items)."""
        recall = next((e for e in self.events if e["type"] == "recall"), None)
        return list(recall["items"]) if recall else []

    @property
    def trusted(self) -> dict[str, str] | None:
        """``{"id", "name"}`` of the verified query the answer re-ran ("Verified query: name"),
        else ``None``."""
        done = next((e for e in self.events if e["type"] == "done"), None)
        return dict(done["trusted"]) if done and done.get("trusted") else None

    @property
    def pending_confirmation(self) -> dict[str, Any] | None:
        """A confirm_mutation that is still waiting (the turn stopped at it)."""
        last = self.events[-1] if self.events else None
        return last if last and last["type"] == "confirm_mutation" else None

    @property
    def frames(self) -> list[pd.DataFrame]:
        """One DataFrame per successful query: nested relations as dotted columns."""
        return [self._frame(outcome) for outcome in self.outcomes]

    @property
    def charts(self) -> list[Chart]:
        """One :class:`~gmchat_nb.charts.Chart` per chart the turn drew (its ``chart`` events):
        shown in a notebook, with ``.spec``, ``.to_png()`` and ``.code()``."""
        outcomes = dict(zip(self.call_ids, self.outcomes, strict=True))
        return turn_charts(self.events, outcomes, self.settings)

    @property
    def evidence(self) -> pd.DataFrame:
        """One row per query: what was asked, what came back, and the GraphQL that re-runs it."""
        import pandas as pd

        rows = []
        for outcome in self.outcomes:
            first = outcome.variables[0] if outcome.variables else {}
            rows.append(
                {
                    "manager": outcome.manager,
                    "filters": json.dumps(first.get("filter"), default=str),
                    "rows": len(outcome.rows),
                    "total_count": outcome.total_count,
                    "complete": outcome.complete,
                    "document": outcome.document,
                    "variables": json.dumps(outcome.variables, default=str),
                }
            )
        columns = ["manager", "filters", "rows", "total_count", "complete", "document", "variables"]
        return pd.DataFrame(rows, columns=columns)

    def _frame(self, outcome: QueryOutcome) -> pd.DataFrame:
        import pandas as pd

        frame = pd.DataFrame([flatten_row(row) for row in outcome.rows])
        for column in self.date_columns.get(outcome.manager, set()) & set(frame.columns):
            frame[column] = pd.to_datetime(frame[column], errors="coerce")
        return frame.convert_dtypes()

    def __repr__(self) -> str:
        status = f"error {self.error['code']}" if self.error else f"{len(self.outcomes)} queries"
        return f"<Turn {self.question!r}: {status}>"


class Chat:
    """A chat with one project, one provider and one conversation (resumable from the store).

    Arguments override ``settings`` (a YAML path, a mapping or :class:`ChatSettings`):
    ``project`` (a demo name, a GraphQL URL, a schema or a :class:`Project`), ``provider`` (a spec
    such as ``"openai:gpt-4.1-mini"`` or a provider object), ``store`` (a path, ``":memory:"``,
    a ``postgresql://`` URL or a :class:`ChatStore`), ``record_to`` (record the provider's
    responses into a cassette).
    """

    def __init__(
        self,
        project: Any = None,
        provider: Any = None,
        settings: Any = None,
        *,
        store: Any = None,
        actor: Actor | None = None,
        conversation_id: str | None = None,
        record_to: str | Path | None = None,
        **overrides: Any,
    ) -> None:
        if project is not None and not isinstance(project, str):
            overrides.setdefault("project", "demo")
        elif project is not None:
            overrides["project"] = project
        if provider is not None and isinstance(provider, str):
            overrides["provider"] = provider
        self.settings: ChatSettings = load_settings(settings, **overrides)
        self._project_arg = (
            project if project is not None and not isinstance(project, str) else None
        )
        self._provider_arg = (
            provider if provider is not None and not isinstance(provider, str) else None
        )
        self._store_arg = store
        self._record_to = record_to
        self.actor = actor or Actor.local()
        self._conversation_id = conversation_id
        self._session: ChatSession | None = None
        self._project: Project | None = None
        self._owns_project = False
        self.turns: list[Turn] = []
        self._dates: dict[str, set[str]] | None = None  # date columns by manager, for frames
        self.knowledge = ChatKnowledge(self)  # verified queries, definitions, notes

    # -- lazily connected parts ------------------------------------------------------------------

    async def session(self) -> ChatSession:
        """The session (connecting the project and building the provider on first use)."""
        if self._session is None:
            project = await self._connect()
            self._session = open_session(
                project,
                build_provider(self.settings, self._provider_arg, record_to=self._record_to),
                self.settings,
                store=open_store(self.settings, self._store_arg),
                actor=self.actor,
                conversation_id=self._conversation_id,
            )
        return self._session

    async def _connect(self) -> Project:
        if self._project is None:
            target = self._project_arg if self._project_arg is not None else self.settings.project
            self._project = await connect_project(self.settings, target)
            self._owns_project = not isinstance(target, Project)
        return self._project

    # -- asking ----------------------------------------------------------------------------------

    async def stream(self, text: str, *, turn_id: str | None = None) -> AsyncIterator[ChatEvent]:
        """The events of one turn as they happen.

        With ``turn_id`` (your idempotency key for this question) the turn is admitted under it
        first: asking again with the same id and text replays the turn's journaled events and
        never runs it twice — a turn still running elsewhere (another kernel, a server sharing
        the store) is followed to its end, and one that a dead process cut off before any data
        change goes on here from its last committed step, as a restarted server's does. Another
        text under the same id is a ``ValueError``."""
        session = await self.session()
        if self._dates is None:
            self._dates = _date_columns(session.project)
        turn = Turn(
            question=text, date_columns=self._dates, turn_id=turn_id, settings=self.settings
        )
        self.turns.append(turn)
        events: AsyncIterator[ChatEvent]
        ran_here = True  # else replayed, followed or continued: its positions are read back
        if turn_id is None or text_refusal(text) is not None:
            events = session.run_turn(text)  # (text it cannot take is refused, never admitted)
        else:
            try:
                admission = session.admit(text, turn_id=turn_id)
            except TurnConflict:
                raise ValueError(f"turn {turn_id!r} was asked with another question") from None
            ran_here = admission.created and admission.refusal is None
            events = (
                session.drive(admission, text, transport="stream")
                if admission.created
                else self._rejoin(session, admission)
            )
        try:
            async for event in events:
                turn.add(event.to_dict())
                if isinstance(event, ToolResult) and event.id in session.outcomes:
                    turn.outcomes.append(session.outcomes[event.id])
                    turn.call_ids.append(event.id)
                yield event
        finally:  # a stopped turn too: the widget places it in the journal
            turn.turn_id = session.turn_id
            if ran_here:
                turn.trace = session.trace
            if turn.turn_id is not None:
                turn.positions = (
                    dict(session.positions)
                    if ran_here
                    else _journal_positions(session, turn.turn_id)
                )

    async def _rejoin(self, session: ChatSession, admission: Admission) -> AsyncIterator[ChatEvent]:
        """A turn admitted before under this id: its journal so far, then the rest as it is
        written wherever it runs, or (its driver gone) run on here or closed."""
        turns, store = session.turns, session.store
        conversation_id, turn_id = admission.conversation_id, admission.turn_id
        seen = 0
        for payload in store.events(conversation_id, turn_id=turn_id):
            seen = int(payload.get("sequence") or seen)
            yield event_from_dict(payload)
        while True:
            record = store.turn(conversation_id, turn_id)
            if record is None or record.state in (*FINAL_TURN_STATES, "suspended"):
                for payload in store.events(conversation_id, turn_id=turn_id, after_sequence=seen):
                    yield event_from_dict(payload)
                return
            if turns.live(record):
                async for payload in turns.follow(record, after=seen):
                    seen = int(payload.get("sequence") or seen)
                    yield event_from_dict(payload)
                continue
            taken = turns.take_over(record)
            if taken is not None:
                async for event in session.continue_turn(taken, transport="stream"):
                    yield event
                return
            turns.close(record, SERVER_STOPPED)

    async def ask(self, text: str, *, turn_id: str | None = None) -> Turn:
        """Run one turn to its end and return it (``turn_id``: see :meth:`stream`)."""
        async for _ in self.stream(text, turn_id=turn_id):
            pass
        return self.turns[-1]

    async def events(self, after: int = 0) -> list[dict[str, Any]]:
        """The current conversation's journaled events after position ``after``, each with its
        ``position`` (also as ``sequence``) and its ``turn_id``, as the server's events stream
        sends them: what a second view or a reconnecting client replays."""
        session = await self.session()
        if session.conversation_id is None:
            return []
        return [
            entry.frame() for entry in session.store.journal_since(session.conversation_id, after)
        ]

    async def usage(self) -> dict[str, Any]:
        """The current conversation's usage: every model request's tokens, latency and cost
        summed (``cost_usd`` ``None`` when one price is unknown), and per provider."""
        session = await self.session()
        return conversation_usage(session.store, session.conversation_id)

    def ask_sync(self, text: str) -> Turn:
        """:meth:`ask` for scripts (not inside a running event loop: use ``await chat.ask``)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._ask_and_close(text))
        raise RuntimeError("an event loop is running here (a notebook?): use `await chat.ask(...)`")

    async def _ask_and_close(self, text: str) -> Turn:
        try:
            return await self.ask(text)
        finally:
            await self.aclose()

    def confirm(self, confirmation_id: str, confirmed: bool = True, *, via: str = "kernel") -> bool:
        """Approve (or reject) the mutation a running turn waits for (``via``: where the
        decision was made, as its change record keeps it: the notebook's kernel by default)."""
        if self._session is None:
            return False
        return self._session.confirm(confirmation_id, confirmed, via=via)

    async def decide(self, confirmation_id: str, confirmed: bool = True) -> list[dict[str, Any]]:
        """Approve (or reject) a mutation that waits in the store rather than in a turn running
        here -- a change an agent asked for over ``gmchat mcp``, or a turn a stream left at its
        confirmation -- in whichever of your conversations holds it (which becomes the current
        one). Returns the events of the rest of its turn (the mutation's ``tool_result``...,
        ``done``). The decision is claimed once in the store: one made elsewhere first, an
        expired or an unknown id gives a single ``bad_event`` error and nothing runs."""
        if self.confirm(confirmation_id, confirmed):
            return []
        session = await self.session()
        holder = session.store.pending_conversation(self.actor.id, confirmation_id)
        if holder is not None and not session.busy:
            session.conversation_id = holder
        events = session.resume(confirmation_id, bool(confirmed), transport="sse")
        return [event.to_dict() async for event in events]

    # -- conversations -------------------------------------------------------------------------

    @property
    def conversation_id(self) -> str | None:
        """The current conversation's id (None before the first turn)."""
        return self._session.conversation_id if self._session else self._conversation_id

    async def conversations(self) -> list[dict[str, Any]]:
        """This user's conversations, newest first."""
        session = await self.session()
        return [
            {"id": c.id, "title": c.title, "updated_at": c.updated_at, "messages": c.message_count}
            for c in session.store.conversations(self.actor.id)
        ]

    async def new_conversation(self, title: str = "") -> str:
        """Start a fresh conversation."""
        session = await self.session()
        self.turns.clear()
        return session.new_conversation(title)

    async def delete_conversation(self, conversation_id: str) -> bool:
        """Delete one of this user's conversations with everything it stored."""
        session = await self.session()
        record = session.store.conversation(conversation_id)
        if record is None or record.actor_id != self.actor.id:
            return False
        if conversation_id == session.conversation_id:
            session.conversation_id = None
            self.turns.clear()
        return session.store.delete_conversation(conversation_id)

    async def cleanup(self) -> dict[str, int]:
        """Delete what is older than ``ttl_hours`` from the store (GeneralManager's chat_cleanup)."""
        session = await self.session()
        return session.store.cleanup(self.settings.ttl_hours)

    def to_notebook(
        self,
        path: str | Path | None = None,
        *,
        overwrite: bool = False,
        conversation_id: str | None = None,
    ) -> NotebookNode:
        """The current conversation (or ``conversation_id``, one of yours) as a notebook that
        re-runs its queries and charts: an ``nbformat`` notebook without outputs, written to
        ``path`` when given (an existing file only with ``overwrite=True``). Built from the
        store alone. :class:`~gmchat_nb.chat_export.ExportError` ``not_found`` for no (or
        another user's) conversation, ``empty`` before a turn finished. See docs/export.md."""
        # (nbformat and the exporter load on the first export, not with gmchat_nb)
        from .chat_export import ExportError, export_conversation, write_notebook

        wanted = conversation_id or self.conversation_id
        store = self._session.store if self._session else open_store(self.settings, self._store_arg)
        try:
            if wanted is None:
                raise ExportError("not_found", "This chat has no conversation yet: ask first.")
            notebook = export_conversation(
                store, wanted, actor_id=self.actor.id, settings=self.settings
            )
        finally:
            if self._session is None and not isinstance(self._store_arg, ChatStore):
                store.close()  # opened for this export alone
        if path is not None:
            write_notebook(notebook, path, overwrite=overwrite)
        return notebook

    @property
    def frames(self) -> list[pd.DataFrame]:
        """Every DataFrame of this chat's turns, in order (``chat.frames[-1]`` is the latest)."""
        return [frame for turn in self.turns for frame in turn.frames]

    async def aclose(self) -> None:
        """Close the store and the project this chat opened."""
        if self._session is not None and not isinstance(self._store_arg, ChatStore):
            self._session.store.close()
        if self._project is not None and self._owns_project:
            await self._project.aclose()
        self._session = None
        self._project = None

    def __repr__(self) -> str:
        project = self._project.label if self._project else self.settings.project
        provider = self.settings.provider
        label = provider if isinstance(provider, str) else type(provider).__name__
        return f"Chat(project={str(project)!r}, provider={label!r}, turns={len(self.turns)})"


def _journal_positions(session: ChatSession, turn_id: str) -> dict[int, int]:
    """Sequence -> journal position of every event of ``turn_id`` in the session's conversation."""
    conversation_id = str(session.conversation_id)
    first = session.store.turn(conversation_id, turn_id)
    after = int(first.admitted_position or 0) if first is not None else 0
    return {
        int(entry.payload.get("sequence") or 0): entry.position
        for entry in session.store.journal_since(conversation_id, after)
        if entry.turn_id == turn_id
    }


def _date_columns(project: Project) -> dict[str, set[str]]:
    """Columns to parse as dates, by manager (fields typed Date or DateTime)."""
    return {
        name: {f.name for f in info.fields if f.type.rstrip("!") in ("Date", "DateTime")}
        for name, info in project.index.managers.items()
    }
