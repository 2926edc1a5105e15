"""The events of a chat turn and their JSON, exactly as GeneralManager 0.87 defines them.

The same event objects feed the notebook widget, SSE frames, WebSocket messages, the HTTP
envelope, the audit log, the persistence journal and eval traces. ``to_dict()`` gives the spec's
JSON; additions (``sequence``, a query result's ``frame`` summary and ``duration_ms``) are extra
fields that clients ignore. Every public error code and its fixed, non-sensitive message lives here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Self

__all__ = [
    "ERROR_MESSAGES",
    "JOURNALED_QUERY",
    "Chart",
    "ChatEvent",
    "ConfirmMutation",
    "Done",
    "Error",
    "Notice",
    "Recall",
    "StreamReset",
    "TextChunk",
    "ToolCall",
    "ToolResult",
    "answer_text",
    "error_event",
    "event_from_dict",
]

# code -> the fixed public message (GeneralManager 0.87.1's texts, so clients can match on them)
ERROR_MESSAGES: dict[str, str] = {
    "bad_event": "Unknown chat event.",
    "bad_message": "Message text is required.",
    "confirmation_pending": "A mutation confirmation is still pending.",
    "confirmation_unavailable": "Pending confirmation is no longer available.",
    "turn_in_progress": "A chat turn is already in progress.",
    "rate_limited": "Chat rate limit exceeded. Try again later.",
    "tool_retry_limit": "Chat tool retry limit exceeded.",
    "mutation_limit": "Chat mutation limit exceeded.",
    "turn_limit": "Chat turn limit exceeded.",
    "mutation_batch_unsupported": "Request mutations one at a time.",
    "confirmation_required_transport": "Confirmed mutations require WebSocket or SSE transport.",
    "chat_error": "Chat request failed.",
    "deadline_exceeded": "The request reached its time limit.",
    "provider_failed": "The provider could not complete the request.",
    "forbidden": "Forbidden.",
    # Not in GeneralManager: the journal's terminal event of a turn that stopped before it could
    # end (a client that went away, a server that was killed); see core/recovery.py.
    "interrupted": "The request was interrupted before it finished.",
    # Not in GeneralManager: a question refused by ``injection.question: refuse`` (it tries to
    # override the assistant's instructions).
    "input_refused": "The message was refused by this chat's input policy.",
    # Planned read orchestration's stable reasons (spec: PLANNED_PUBLIC_MESSAGES).
    "invalid_plan": "I could not prepare a safe plan for that request.",
    "manager_unresolved": "I could not resolve the required application data.",
    "dependency_blocked": "A required part of the request could not be completed.",
    "budget_exhausted": "The request reached its execution limit.",
    "synthesis_failed": "I could not produce a grounded answer from the available data.",
}
JOURNALED_QUERY = "query"  # the tool_result field journaling a query's request (ToolResult)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Event:
    """Fields every event has: its position in the turn (``sequence``, set by the session), and
    on the first event a turn's new driver wrote after a crash, ``continues_after``: the last
    sequence its stored steps covered. The turn's events after that one and before this one
    belonged to a step the crash cut off (partial answer text, calls that will be asked again):
    a reader drops them."""

    type: ClassVar[str]
    sequence: int | None = None
    continues_after: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The event's JSON: the spec's fields, then ``sequence`` (and ``continues_after``) when
        known."""
        payload: dict[str, Any] = {"type": self.type}
        optional = self._optional
        for name in _spec_fields(type(self)):
            value = getattr(self, name)
            if value is None and name in optional:
                continue
            payload[name] = value
        if self.sequence is not None:
            payload["sequence"] = self.sequence
        if self.continues_after is not None:
            payload["continues_after"] = self.continues_after
        return payload

    _optional: ClassVar[frozenset[str]] = frozenset()

    def numbered(self, sequence: int) -> Self:
        """The same event with its sequence number (a copy: events are frozen). Every event of
        every turn is numbered, so the copy skips :func:`dataclasses.replace`'s checks."""
        copy = object.__new__(type(self))
        for name in _all_fields(type(self)):
            object.__setattr__(copy, name, getattr(self, name))
        object.__setattr__(copy, "sequence", sequence)
        return copy


_FIELDS: dict[Any, tuple[str, ...]] = {}
_SPEC_FIELDS: dict[Any, tuple[str, ...]] = {}


def _all_fields(kind: Any) -> tuple[str, ...]:
    """Every field of an event class, in order (read once per class)."""
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(item.name for item in dataclasses.fields(kind))
    return names


def _spec_fields(kind: Any) -> tuple[str, ...]:
    """An event class's fields of the spec's JSON (its numbering fields apart)."""
    names = _SPEC_FIELDS.get(kind)
    if names is None:
        numbering = ("sequence", "continues_after")
        names = _SPEC_FIELDS[kind] = tuple(n for n in _all_fields(kind) if n not in numbering)
    return names


@dataclass(frozen=True, slots=True, kw_only=True)
class TextChunk(_Event):
    """One fragment of the assistant's answer."""

    type: ClassVar[str] = "text_chunk"
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall(_Event):
    """The model asked for a tool."""

    type: ClassVar[str] = "tool_call"
    _optional: ClassVar[frozenset[str]] = frozenset({"task_id"})
    id: str
    name: str
    args: dict[str, Any]
    task_id: str | None = None  # the planned task the call belongs to


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult(_Event):
    """What the tool answered (also errors, as ``{"status": "error", ...}`` results).

    ``frame`` summarises a query's rows for displays (``{"rows": n, "columns": [...]}``).
    ``duration_ms`` is how long the tool worked, measured in the kernel around its execution
    (never the wait for a human's decision); absent when nothing ran (a rejected mutation).
    Neither is part of what the model receives. A planned turn's results also carry their
    ``task_id`` and ``evidence_id`` (``task_1:query:1``). ``flags`` (gmchat_nb's addition) marks
    text in the result that looks written for the model rather than for a person
    (``[{path, reasons, excerpt}]``: instructions, chat-template tokens, tool names, markdown
    images, URLs with query strings, invisible characters); the read is not blocked. ``query``
    (ours, on a query that ran; not for the model) is the request it sent, so that evidence and
    notebooks never compile it again: ``{manager, document, variables, pages?, window?}``.
    """

    type: ClassVar[str] = "tool_result"
    _optional: ClassVar[frozenset[str]] = frozenset(
        {"frame", "duration_ms", "task_id", "evidence_id", "flags", JOURNALED_QUERY}
    )
    id: str
    name: str
    result: Any
    frame: dict[str, Any] | None = None
    duration_ms: float | None = None
    task_id: str | None = None
    evidence_id: str | None = None
    flags: list[dict[str, Any]] | None = None
    query: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfirmMutation(_Event):
    """An allow-listed, validated mutation waits for a human's decision.

    ``expires_in_seconds`` tells a display how long the decision may take. ``provenance``
    (gmchat_nb's addition) says where the input came from: ``from_data`` lists the input paths
    whose values are not in the user's words (the model took them from data or made them up) and
    ``flagged_data_read`` warns that text flagged as suspicious was read in this turn.
    """

    type: ClassVar[str] = "confirm_mutation"
    _optional: ClassVar[frozenset[str]] = frozenset({"expires_in_seconds", "provenance"})
    id: str
    mutation: str
    input: dict[str, Any]
    expires_in_seconds: float | None = None
    provenance: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamReset(_Event):
    """gmchat_nb's addition: the model request that was streaming failed midway and is asked
    again (or continued on a fallback provider). Every ``text_chunk`` since the last event of
    another type is withdrawn: a display removes that text, a reader of the answer drops it
    (:func:`answer_text`); it never entered the conversation's history. ``reason`` is public
    and short (``"connection error (RemoteProtocolError)"``, ``"in-band overloaded_error"``).
    Older clients ignore the type (and would show the withdrawn text twice at worst)."""

    type: ClassVar[str] = "stream_reset"
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice(_Event):
    """gmchat_nb's addition: something the person waiting should know while it happens, which
    does not change the answer. ``kind``: ``"retry"`` (a model request is asked again after
    ``details.wait_seconds``), ``"fallback"`` (the turn goes on with another provider:
    ``details.from``/``to``), ``"loop_guard"`` (a repeated call was answered from its earlier
    result, or the turn was ended with one final answer), ``"gate"`` (the answer was sent back
    once for a correction), ``"injection"`` (the question looks like it tries to override the
    assistant's instructions), ``"chart"`` (a planned turn's chart could not be drawn:
    ``details.evidence_id`` and ``code``). ``message`` is a sentence for people; ``details`` is for
    programs."""

    type: ClassVar[str] = "notice"
    _optional: ClassVar[frozenset[str]] = frozenset({"details"})
    kind: str
    message: str
    details: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Recall(_Event):
    """gmchat_nb's addition: the knowledge recalled for this turn, sent before its first model
    request when recall is on and the project has any knowledge (a project with none has nothing
    to recall from, and its turns look as before). ``items`` are ``{"kind", "id", "name", "score"}``, best first:
    ``kind`` is ``verified_query``, ``definition`` or ``note``, ``score`` the fused rank score;
    empty when nothing relevant was found. See :mod:`gmchat_nb.core.knowledge`."""

    type: ClassVar[str] = "recall"
    items: list[dict[str, Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Chart(_Event):
    """gmchat_nb's addition: a chart of a query result of the turn, drawn for the user.

    ``id`` is the ``chart`` tool call's; ``evidence_id`` names the query it draws (its tool call
    id, or a planned turn's evidence id); ``spec`` is a Vega-Lite v5 specification gmchat_nb
    built from that result's rows (inline data, no URL, no expression: see
    :mod:`gmchat_nb.core.charts`); ``intent`` is what was asked (mark, columns, aggregate) as
    applied, ``marks`` how many marks it draws. Titles and labels are text. Older clients ignore
    the type.
    """

    type: ClassVar[str] = "chart"
    id: str
    evidence_id: str
    title: str
    spec: dict[str, Any]
    intent: dict[str, Any]
    marks: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Done(_Event):
    """The turn is complete; ``usage`` sums the provider's tokens over the turn.

    A planned turn adds ``orchestration``: ``status`` (complete/partial), ``coverage``
    ``{resolved, total}`` and ``unresolved`` ``[{task_id, reason}]`` as the spec says, plus the
    tasks, the engine's calculations and the cited evidence ids for displays.

    ``attempts`` (gmchat_nb's addition) is there only when a model request of the turn failed
    before its answer began and was asked again (``provider_retries``):
    ``{"requests": R, "retried": Q, "retries": K}`` -- the turn made R model requests, Q of them
    were retried, K retries in all (the vendor saw R + K requests). ``fallbacks`` lists each switch
    to a ``provider_fallbacks`` provider (``{"from", "to", "reason"}``) when there was one.
    ``gates`` are the completion gates' verdicts on the answer (``[{name, passed, details}]``,
    when any gate is on) and ``guards`` what the loop guard and the injection scorer did
    (``{"repeats", "refusals", "requests", "tool_calls", "stopped_by", "flagged"}``, when
    anything happened). ``cost`` (gmchat_nb's addition, when a model was asked) is what the
    turn's model requests cost and carried: ``usd`` (``None`` when a price is unknown), the
    price ``sources`` (``genai-prices X.Y.Z``, ``override``, ``local``, ...), ``tokens`` of each
    kind, the ``models`` and the ``context`` the next request carries (``tokens``, the model's
    ``window``, their ``share``); see :mod:`gmchat_nb.core.providers.pricing`. ``trusted``
    (gmchat_nb's addition) is ``{"id", "name"}`` of the verified query the answer re-ran (its
    query calls, with the same or other filter values), absent otherwise.
    """

    type: ClassVar[str] = "done"
    _optional: ClassVar[frozenset[str]] = frozenset(
        {"orchestration", "attempts", "fallbacks", "gates", "guards", "cost", "trusted"}
    )
    usage: dict[str, int]
    orchestration: dict[str, Any] | None = None
    attempts: dict[str, int] | None = None
    fallbacks: list[dict[str, str]] | None = None
    gates: list[dict[str, Any]] | None = None
    guards: dict[str, Any] | None = None
    cost: dict[str, Any] | None = None
    trusted: dict[str, str] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Error(_Event):
    """A public, non-sensitive failure that ends the turn (or refuses a request)."""

    type: ClassVar[str] = "error"
    _optional: ClassVar[frozenset[str]] = frozenset({"retry_after_seconds"})
    message: str
    code: str
    retry_after_seconds: int | None = None


ChatEvent = (
    TextChunk
    | ToolCall
    | ToolResult
    | ConfirmMutation
    | Done
    | Error
    | StreamReset
    | Notice
    | Chart
    | Recall
)
EventType = Literal[
    "text_chunk",
    "tool_call",
    "tool_result",
    "confirm_mutation",
    "done",
    "error",
    "stream_reset",
    "notice",
    "chart",
    "recall",
]


def error_event(
    code: str, *, retry_after_seconds: int | None = None, message: str | None = None
) -> Error:
    """The error event for ``code``: its fixed public message, or ``message`` when the caller
    can say more precisely what was wrong (clients match on ``code``, people read ``message``).
    An unknown code becomes ``chat_error`` with the generic message."""
    known = code in ERROR_MESSAGES
    return Error(
        message=(message if known and message else None)
        or ERROR_MESSAGES.get(code, ERROR_MESSAGES["chat_error"]),
        code=code if known else "chat_error",
        retry_after_seconds=retry_after_seconds,
    )


_BY_TYPE: dict[str, type[_Event]] = {
    cls.type: cls
    for cls in (
        TextChunk,
        ToolCall,
        ToolResult,
        ConfirmMutation,
        Done,
        Error,
        StreamReset,
        Notice,
        Chart,
        Recall,
    )
}
# Every public event type: each surface that shows events has a renderer for each of these.
EVENT_TYPES: tuple[str, ...] = tuple(_BY_TYPE)


def event_from_dict(payload: dict[str, Any]) -> ChatEvent:
    """Rebuild an event from its JSON (the persisted journal, replayed transcripts)."""
    cls = _BY_TYPE.get(str(payload.get("type")))
    if cls is None:
        raise ValueError(f"unknown event type {payload.get('type')!r}")
    names = {item.name for item in dataclasses.fields(cls)}
    return cls(**{key: value for key, value in payload.items() if key in names})  # type: ignore[return-value]


def answer_text(events: Iterable[ChatEvent | Mapping[str, Any]]) -> str:
    """The answer a turn's events spell: its ``text_chunk`` contents, without the ones a
    ``stream_reset`` withdrew (each withdraws the chunks since the last event of another type).
    Takes event objects or their JSON."""
    kept: list[str] = []
    pending: list[str] = []
    for event in events:
        kind = event.get("type") if isinstance(event, Mapping) else event.type
        if kind == TextChunk.type:
            content = event.get("content") if isinstance(event, Mapping) else event.content  # type: ignore[union-attr]
            pending.append(str(content or ""))
            continue
        if kind != StreamReset.type:
            kept.extend(pending)
        pending = []
    kept.extend(pending)
    return "".join(kept)
