"""The notebook chat widget (kernel side): drives a :class:`~gmchat_nb.Chat`, streams its events
to the front end in batches, keeps the transcript, serves result tables and binds DataFrames.

No loop logic lives here: turns run through ``Chat.stream``; this module only translates events
to messages (see :mod:`gmchat_nb.widget.protocol`) and user actions back into chat calls.

Over 400 lines: one anywidget class whose traits, message handlers and transcript share
their state; the module's functions are the replay rows it sends (evidence rows are
``core/session/evidence.py``'s, shared with the server's evidence route).
"""

from __future__ import annotations

import asyncio
import json
import keyword
import logging
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets

from ..core.events import ChatEvent, Error, StreamReset, TextChunk, ToolResult, answer_text
from ..core.session.evidence import evidence_row, planned_ids
from ..core.turns import new_turn_id
from .charts import chart_answer, chart_library
from .export import EXPORT_TYPE, export_answer
from .knowledge import KNOWLEDGE_TYPES, knowledge_answer
from .protocol import BATCH_CHARACTERS, BATCH_SECONDS, FRONT_END_TYPES, PAGE_SIZE
from .replay import TranscriptPositions, pending_confirmation, place_turn, requested_cursor
from .tables import ResultTable

if TYPE_CHECKING:
    from ..chat import Chat, Turn
    from ..core.session import ChatSession

__all__ = ["ChatWidget"]

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"


class ChatWidget(anywidget.AnyWidget):
    """A chat panel for a :class:`~gmchat_nb.Chat` (``display(chat)`` shows one)."""

    _esm = STATIC / "chat.js"
    _css = STATIC / "chat.css"
    # Synced only when a turn ends (the stream itself travels as custom messages).
    transcript: traitlets.List[dict[str, Any]] = traitlets.List([]).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    # What a view's saved state is filed under in the browser's sessionStorage: this widget's
    # own id (anywidget's model proxy does not show a view the model id, a trait it can read).
    storage_key = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self, chat: Chat, *, namespace: dict[str, Any] | None = None, batching: bool = True
    ) -> None:
        super().__init__(storage_key=secrets.token_hex(12))
        self.chat = chat
        self.batching = batching
        self.namespace = namespace if namespace is not None else _user_namespace()
        self.turns: list[dict[str, Any]] = []
        self.tables: dict[str, ResultTable] = {}
        # The chat's Turn of each finished turn by its index here (Save as verified query).
        self.chat_turns: dict[int, Turn] = {}
        self.sent_messages = 0
        self.sent_bytes = 0
        self._task: asyncio.Task[None] | None = None
        self._positions = TranscriptPositions()  # where finished turns end in the journal
        self._tasks: set[asyncio.Task[Any]] = set()
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # built outside a running loop (a script): dispatch inline
            self._loop = None
        self.title = f"{_project_label(chat)} · {chat.settings.provider if isinstance(chat.settings.provider, str) else type(chat.settings.provider).__name__}"
        self.on_msg(self._receive)

    def __repr__(self) -> str:
        return f"ChatWidget(project={_project_label(self.chat)!r}, turns={len(self.turns)})"

    # -- messages in -------------------------------------------------------------------------------

    def _receive(self, _widget: Any, content: Any, buffers: Any) -> None:
        # JupyterLab may deliver comm messages on a subshell thread with its own loop: every
        # action hops onto the kernel's loop before it touches asyncio objects.
        if self._loop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self.dispatch, content)
        else:
            self.dispatch(content)

    def dispatch(self, message: Any) -> None:
        """Handle one front-end message (on the kernel's loop)."""
        if not isinstance(message, dict) or message.get("type") not in FRONT_END_TYPES:
            self._post({"type": "error", "code": "bad_event", "message": "Unknown chat event."})
            return
        kind = message["type"]
        if kind == "hello":
            self._spawn(self._hello(message))
        elif kind == "ask":
            self.ask(message.get("text"))
        elif kind == "stop":
            if self._task is not None:
                self._task.cancel()
        elif kind == "confirm":
            if not self.chat.confirm(str(message.get("call_id")), bool(message.get("ok"))):
                self._post(
                    {
                        "type": "error",
                        "code": "confirmation_unavailable",
                        "message": "Pending confirmation is no longer available.",
                    }
                )
        elif kind == "to_frame":
            self._bind_frame(str(message.get("table")), message.get("name"))
        elif kind == "table_page":
            self._page(message)
        elif kind == "chart_request":
            self._chart(message)
        elif kind == "chart_library":
            self._post(chart_library())
        elif kind in KNOWLEDGE_TYPES:
            self._spawn(self._knowledge(message))
        elif kind == EXPORT_TYPE:
            self._spawn(self._export(message))
        elif kind == "new_conversation":
            self._spawn(self._new_conversation())
        elif kind == "list_conversations":
            self._spawn(self._conversations())
        elif kind == "open_conversation":
            self._spawn(self._open(str(message.get("conversation_id"))))
        elif kind == "clear":
            self.turns.clear()
            self.tables.clear()
            self.chat_turns.clear()
            self.transcript = []
            self._positions.settled = False  # the views' cursors describe turns now gone
            self._spawn(self._snapshot())

    # -- turns -----------------------------------------------------------------------------------

    def ask(self, text: Any) -> None:
        """Start a turn (the widget's Send button does this)."""
        if self._task is not None and not self._task.done():
            self._post(
                {
                    "type": "error",
                    "code": "turn_in_progress",
                    "message": "A chat turn is already in progress.",
                }
            )
            return
        self._task = self._spawn(self.run_turn(text))

    async def run_turn(self, text: Any) -> dict[str, Any]:
        """Run one turn through the chat, streaming its events to the front end."""
        record: dict[str, Any] = {
            "index": len(self.turns),
            "question": text if isinstance(text, str) else "",
            "events": [],
            "answer": "",
            "usage": {},
            "error": None,
            "tables": [],
            "evidence": [],
            "orchestration": None,
            "running": True,
        }
        self.turns.append(record)
        self._post({"type": "turn_start", "turn": _without_events(record)})
        batch: list[dict[str, Any]] = []
        waiting = 0
        started = time.perf_counter()
        # Text held for a batch goes out when its window closes even if no event follows: a model
        # that pauses after a chunk must not keep that chunk from the screen until it goes on.
        trailing: asyncio.TimerHandle | None = None

        def flush() -> None:
            nonlocal waiting, started, trailing
            if trailing is not None:
                trailing.cancel()
                trailing = None
            self._flush(record, batch)
            waiting, started = 0, time.perf_counter()

        session: ChatSession | None = None
        try:
            session = await self.chat.session()  # (a failure here is the turn's, as below)
            # Durable like any admitted turn: its own id, its events' journal positions known.
            async for event in self.chat.stream(text, turn_id=new_turn_id()):
                payload = _for_display(event)
                record["events"].append(payload)
                batch.append(payload)
                if isinstance(event, TextChunk):
                    record["answer"] += event.content
                    waiting += len(event.content)
                if isinstance(event, StreamReset):  # rare: read the answer again, withdrawn
                    record["answer"] = answer_text(record["events"])
                urgent = not isinstance(event, TextChunk)
                elapsed = time.perf_counter() - started
                if (
                    not self.batching
                    or urgent
                    or elapsed >= BATCH_SECONDS
                    or waiting >= BATCH_CHARACTERS
                ):
                    flush()
                elif trailing is None:
                    trailing = asyncio.get_running_loop().call_later(BATCH_SECONDS - elapsed, flush)
                if isinstance(event, ToolResult):
                    self._table_for(record, event)
                if isinstance(event, Error):
                    record["error"] = {"code": event.code, "message": event.message}
                if payload.get("orchestration") is not None:
                    # A planned turn's plan, kept with the turn so a later view (a snapshot)
                    # and turn_end show it without replaying the events.
                    record["orchestration"] = payload["orchestration"]
        except asyncio.CancelledError:
            record["error"] = {"code": "cancelled", "message": "Stopped."}
        except Exception as error:  # never a silent task failure in a notebook
            log.exception("the chat turn failed")
            record["error"] = {
                "code": "chat_error",
                "message": f"Chat request failed: {type(error).__name__}",
            }
        finally:
            flush()
            record["running"] = False
            turn = self.chat.turns[-1] if self.chat.turns else None
            if turn is not None and turn.question == record["question"]:
                self.chat_turns[int(record["index"])] = turn
                record["usage"] = turn.usage
                planned = planned_ids(record["events"])
                record["evidence"] = [
                    evidence_row(call_id, outcome, self.chat.settings, planned.get(call_id))
                    for outcome, call_id in zip(turn.outcomes, turn.call_ids, strict=False)
                ]
            self.transcript = [_summary(item) for item in self.turns]
            self._place(record, session)
            # The front end has the events already; a later view gets them in a snapshot or a
            # replay, and a view that saw them all goes on from this cursor.
            self._post(
                {
                    "type": "turn_end",
                    "turn": _without_events(record),
                    "cursor": self._positions.cursor(),
                }
            )
        return record

    def _place(self, record: dict[str, Any], session: ChatSession | None) -> None:
        """Give the ended turn's events their journal ``position`` (known from its writes) and
        the turn its end, which later cursors are measured from (never raises: it runs in
        ``finally``)."""
        conversation_id = session.conversation_id if session is not None else None
        turn = self.chat.turns[-1] if self.chat.turns else None
        end, placed = self._positions.position, False
        if session is not None and conversation_id is not None and turn is not None:
            try:
                end, placed = place_turn(session.store, conversation_id, turn, record["events"])
            except Exception:  # the store failed: views that missed this turn resync instead
                log.exception("could not find the chat turn in the journal")
        self._positions.turn_ended(int(record["index"]), conversation_id, end, placed)

    def _flush(self, record: dict[str, Any], batch: list[dict[str, Any]]) -> None:
        if batch:
            self._post({"type": "events", "turn": record["index"], "events": _merged(batch)})
            batch.clear()

    def _table_for(self, record: dict[str, Any], event: ToolResult) -> None:
        turn = self.chat.turns[-1] if self.chat.turns else None
        if turn is None or event.id not in turn.call_ids:
            return  # not a successful query
        outcome = turn.outcomes[turn.call_ids.index(event.id)]
        result = ResultTable(
            turn, outcome, event.id
        )  # no DataFrame: pandas waits for "→ DataFrame"
        key = f"t{record['index']}-{event.id}"
        self.tables[key] = result
        table = {
            "key": key,
            "call_id": event.id,
            "manager": outcome.manager,
            "columns": result.columns,
            "total_rows": len(result.rows),
            "total_count": outcome.total_count,
            "complete": outcome.complete,
            "page_size": PAGE_SIZE,
            "rows": result.page(0, PAGE_SIZE),
        }
        record["tables"].append(table)
        self._post({"type": "table", "turn": record["index"], "table": table})

    # -- tables and frames ---------------------------------------------------------------------

    def _page(self, message: dict[str, Any]) -> None:
        key = str(message.get("table"))
        if key not in self.tables:
            self._post({"type": "error", "code": "bad_event", "message": "Unknown table."})
            return
        table = self.tables[key]
        offset = max(0, int(message.get("offset") or 0))
        limit = max(1, min(500, int(message.get("limit") or PAGE_SIZE)))
        sort = message.get("sort") or {}
        column = sort.get("column") if isinstance(sort, dict) else None
        rows = table.page(
            offset,
            limit,
            column if isinstance(column, str) else None,
            descending=isinstance(sort, dict) and bool(sort.get("descending")),
        )
        self._post(
            {
                "type": "table_page",
                "table": key,
                "offset": offset,
                "rows": rows,
                "total": len(table.rows),
            }
        )

    def _chart(self, message: dict[str, Any]) -> None:
        """A table's Chart button or picker: the chart of its rows, as ``chart_options``."""
        key = str(message.get("table"))
        table = self.tables.get(key)
        if table is None:
            self._post({"type": "error", "code": "bad_event", "message": "Unknown table."})
            return
        answer = chart_answer(table.outcome.rows, table.call_id, message.get("intent"))
        self._post({"type": "chart_options", "table": key, **answer})

    def _bind_frame(self, key: str, name: Any) -> None:
        if key not in self.tables:
            self._post({"type": "error", "code": "bad_event", "message": "Unknown table."})
            return
        variable = name.strip() if isinstance(name, str) and name.strip() else "gm_frame"
        if not variable.isidentifier() or keyword.iskeyword(variable):
            self._post(
                {
                    "type": "error",
                    "code": "bad_event",
                    "message": f"{variable!r} is not a Python name.",
                }
            )
            return
        frame = self.tables[key].frame()  # a new DataFrame per binding (pandas loads here)
        self.namespace[variable] = frame
        self._post(
            {"type": "frame_bound", "table": key, "name": variable, "shape": list(frame.shape)}
        )

    # -- conversations ---------------------------------------------------------------------------

    async def _snapshot(self) -> None:
        session = await self.chat.session()
        conversations = await self.chat.conversations()
        self._settle(session)  # after the last await: nothing may change before the post
        self._post(
            {
                "type": "snapshot",
                "turns": self.turns,
                "busy": self._task is not None and not self._task.done(),
                "cursor": self._positions.cursor(),
                **self._header(session, conversations),
            }
        )

    async def _hello(self, message: dict[str, Any]) -> None:
        """A view appeared: a replay when its cursor allows one, else a snapshot."""
        cursor = requested_cursor(message)
        session = await self.chat.session()
        if cursor is None or cursor.conversation_id != session.conversation_id:
            await self._snapshot()
            return
        conversations = await self.chat.conversations()
        # From here to the post nothing awaits, so no event slips between the two.
        self._settle(session)
        try:
            store, conversation_id = session.store, cursor.conversation_id
            first, last = (
                store.first_position(conversation_id),
                store.last_position(conversation_id),
            )
        except Exception:
            log.exception("could not read the journal's positions")
            first, last = 1, -1  # no cursor fits: a snapshot
        if not self._positions.replays(cursor, first, last):
            await self._snapshot()
            return
        turns = self._positions.turns_after(self.turns, cursor.after)
        running = next((record for record in turns if record["running"]), None)
        self._post(
            {
                "type": "replay",
                "conversation_id": cursor.conversation_id,
                "after": cursor.after,
                "cursor": self._positions.cursor(),
                "turns": turns,
                "busy": self._task is not None and not self._task.done(),
                "pending_confirmation": pending_confirmation(running) if running else None,
                **self._header(session, conversations),
            }
        )

    def _settle(self, session: ChatSession) -> None:
        """Start the epoch of turn positions (once, and again after clear/new/open): the turns
        so far are what a snapshot brings, a running one is replayed whole."""
        if self._positions.settled:
            return
        conversation_id = session.conversation_id
        position = session.store.last_position(conversation_id) if conversation_id else 0
        first = next((r["index"] for r in self.turns if r["running"]), len(self.turns))
        self._positions.reset(conversation_id, position, first)

    def _header(self, session: ChatSession, conversations: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "provider": session.provider.label if hasattr(session.provider, "label") else "",
            "project": _project_label(self.chat),
            "conversation_id": session.conversation_id,
            "conversations": conversations,
        }

    async def _conversations(self) -> None:
        self._post(
            {
                "type": "conversations",
                "items": await self.chat.conversations(),
                "current": self.chat.conversation_id,
            }
        )

    async def _knowledge(self, message: dict[str, Any]) -> None:
        self._post(await knowledge_answer(self.chat, message, self.chat_turns))

    async def _export(self, message: dict[str, Any]) -> None:
        self._post(await export_answer(self.chat, message))

    async def _new_conversation(self) -> None:
        await self.chat.new_conversation()
        self.turns.clear()
        self.tables.clear()
        self.chat_turns.clear()
        self.transcript = []
        self._positions.settled = False
        await self._snapshot()

    async def _open(self, conversation_id: str) -> None:
        session = await self.chat.session()
        record = session.store.conversation(conversation_id)
        if record is None or record.actor_id != self.chat.actor.id:
            self._post({"type": "error", "code": "bad_event", "message": "Unknown conversation."})
            return
        session.conversation_id = conversation_id
        self.chat.turns.clear()
        self.turns = _turns_from_history(session.history())
        self.tables.clear()
        self.chat_turns.clear()
        self.transcript = [_summary(item) for item in self.turns]
        self._positions.settled = False
        await self._snapshot()

    # -- plumbing ------------------------------------------------------------------------------

    def _spawn(self, coroutine: Any) -> asyncio.Task[Any]:
        loop = self._loop if self._loop is not None else asyncio.get_event_loop()
        task = loop.create_task(coroutine)
        self._tasks.add(task)  # strong references: an unreferenced task may be collected
        task.add_done_callback(self._tasks.discard)
        return task

    def _post(self, message: dict[str, Any]) -> None:
        # Through JSON once: dates and decimals become text, and the byte count is what travels.
        text = json.dumps(message, default=str)
        self.sent_messages += 1
        self.sent_bytes += len(text)
        self.send(json.loads(text))


def _for_display(event: ChatEvent) -> dict[str, Any]:
    """The event as the front end gets it: a query's rows travel as a paged table, not inside
    the tool_result (a 10,000-row result would otherwise cross the wire whole)."""
    payload = event.to_dict()
    if isinstance(event, ToolResult) and event.frame is not None and isinstance(event.result, dict):
        result = {key: value for key, value in event.result.items() if key != "data"}
        result["rows"] = event.frame["rows"]
        payload["result"] = result
    return payload


def _merged(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adjacent text chunks of one batch as one (the front end only appends them)."""
    merged: list[dict[str, Any]] = []
    for event in batch:
        previous = merged[-1] if merged else None
        if (
            event["type"] == "text_chunk"
            and previous is not None
            and previous["type"] == "text_chunk"
        ):
            merged[-1] = {
                **previous,
                "content": previous["content"] + event["content"],
                "sequence": event.get("sequence"),
            }
        else:
            merged.append(event)
    return merged


def _without_events(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key != "events"}


def _summary(record: dict[str, Any]) -> dict[str, Any]:
    summary = {
        "index": record["index"],
        "question": record["question"],
        "answer": record["answer"],
        "error": record["error"],
        "queries": len(record["tables"]),
    }
    plan = record.get("orchestration")
    if isinstance(plan, dict):  # a planned turn: whether it answered the whole question
        summary["plan"] = {"status": plan.get("status"), "coverage": plan.get("coverage")}
    return summary


def _turns_from_history(history: list[Any]) -> list[dict[str, Any]]:
    """Earlier conversations shown again: questions and answers (their tables are not kept)."""
    turns: list[dict[str, Any]] = []
    for message in history:
        if message.role == "user":
            turns.append(
                {
                    "index": len(turns),
                    "question": message.content,
                    "events": [],
                    "answer": "",
                    "usage": {},
                    "error": None,
                    "tables": [],
                    "evidence": [],
                    "orchestration": None,
                    "running": False,
                }
            )
        elif message.role == "assistant" and turns and not message.tool_calls and message.content:
            turns[-1]["answer"] = message.content
            turns[-1]["events"].append({"type": "text_chunk", "content": message.content})
    return turns


def _project_label(chat: Chat) -> str:
    project = getattr(chat, "_project", None)
    if project is not None:
        return str(project.label)
    return str(chat.settings.project)


def _user_namespace() -> dict[str, Any]:
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    shell = get_ipython()
    return shell.user_ns if shell is not None else {}
