"""One turn's trace: what the turn did, span by span, recorded as it happens.

A :class:`TurnTrace` is the source of truth of a turn's work: a root ``turn`` span and, under it,
one ``model_request`` span per request to a model (a retried or fallen-back request stays one
span with ``retry``/``fallback`` events) and one ``tool_call`` span per tool call. Point
decisions (``loop_guard``, ``gate``, ``injection_flag``, ``stream_reset``, ...) are events on the
span they concern, or on the root. Everything else reads the trace: the OpenTelemetry export
(:mod:`gmchat_nb.core.telemetry`), debugging views, stored diagnostics.

Conventions the readers rely on (attribute names are plain words; the exporter maps them):
``provider``/``model``, ``input_tokens``/``output_tokens``, ``finish_reason``, ``response_model``,
``input_messages``/``output_messages`` on model requests; ``tool``/``call_id``/``arguments``,
``result``, ``rows``, ``status`` on tool calls; ``error_type`` on any span that failed; a ``gate``
event carries ``gate`` and ``passed``, a ``loop_guard`` event ``stopped_by``.

Recording runs on every turn, so it is cheap: spans and events are plain appends, attribute values
are passed through :func:`sanitize` once, at the door. Sanitizing is bounded (strings, lists, maps,
depth and the number of values visited are capped) and removes secrets (values under keys named
like passwords, tokens, API keys, ``Authorization``; bearer tokens and ``sk-`` keys in text), so a
trace can be logged, stored or exported as it is. Only :meth:`TurnTrace.to_dict` copies the whole structure.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import itertools
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final, Literal

__all__ = [
    "MAX_DEPTH",
    "MAX_ITEMS",
    "MAX_KEYS",
    "MAX_STRING",
    "MAX_VALUES",
    "REDACTED",
    "ROOT_NAME",
    "SECRET_WORDS",
    "SECRET_WORD_PAIRS",
    "Span",
    "SpanKind",
    "TurnTrace",
    "is_secret_key",
    "iso_utc",
    "sanitize",
]

SpanKind = Literal["turn", "model_request", "tool_call"]

ROOT_NAME: Final = "invoke_agent gmchat_nb"
REDACTED: Final = "[redacted]"
MAX_STRING: Final = 2_000
"""Characters kept of a string; the rest becomes ``…[n more]``."""
MAX_ITEMS: Final = 20
"""Items kept of a list (or tuple, set); a last item ``…[n more]`` counts the rest."""
MAX_KEYS: Final = 50
"""Keys kept of a mapping; a key ``…`` counts the rest."""
MAX_DEPTH: Final = 6
"""Containers nested deeper are summarized (``[dict: 3 keys]``)."""
MAX_VALUES: Final = 1_000
"""Values visited per sanitized value; later ones become ``…[truncated]`` (bounds the cost)."""
SECRET_WORDS: Final = frozenset(
    {
        *("password", "passwords", "passwd", "passphrase", "secret", "secrets", "token"),
        *("authorization", "cookie", "cookies", "credential", "credentials", "apikey"),
        *("accesstoken", "refreshtoken", "privatekey", "clientsecret"),
    }
)
"""Key words whose values are redacted. ``tokens`` is not one: it names counters
(``input_tokens``)."""
SECRET_WORD_PAIRS: Final = frozenset({("api", "key"), ("private", "key"), ("access", "key")})
"""Consecutive key words whose values are redacted (``api_key``, ``X-Api-Key``, ``apiKey``)."""

_SCALARS: Final = (bool, int, type(None))
_CHUNK: Final = re.compile(r"[^A-Za-z0-9]+")
_WORD: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")  # apiKey, APIKey -> api, key
# Credentials in text: bearer tokens and sk-... API keys (OpenAI, Anthropic).
_CREDENTIAL: Final = re.compile(r"\b[Bb]earer\s+[A-Za-z0-9\-._~+/]{6,}=*|\bsk-[A-Za-z0-9_\-]{16,}")


@functools.lru_cache(maxsize=1024)
def is_secret_key(key: str) -> bool:
    """Whether a key names a secret: one of its words (snake_case, camelCase and kebab-case split,
    lowercased) is in :data:`SECRET_WORDS`, or two consecutive ones in :data:`SECRET_WORD_PAIRS`."""
    words = [word.lower() for chunk in _CHUNK.split(key) for word in _WORD.findall(chunk)]
    return any(word in SECRET_WORDS for word in words) or any(
        pair in SECRET_WORD_PAIRS for pair in itertools.pairwise(words)
    )


def _cap(text: str) -> str:
    if len(text) > MAX_STRING:
        text = f"{text[:MAX_STRING]}…[{len(text) - MAX_STRING} more]"
    return _CREDENTIAL.sub(REDACTED, text) if ("earer" in text or "sk-" in text) else text


class _Sanitizer:
    """One sanitizing pass: its budget of values is shared by everything the value holds."""

    __slots__ = ("budget",)

    def __init__(self) -> None:
        self.budget = MAX_VALUES

    def __call__(self, value: Any, depth: int = 0) -> Any:
        if isinstance(value, _SCALARS):
            return value
        self.budget -= 1
        if self.budget < 0:
            return "…[truncated]"
        if isinstance(value, str):
            return _cap(value)
        if isinstance(value, float):
            return value if math.isfinite(value) else str(value)
        if isinstance(value, bytes | bytearray | memoryview):
            return f"[{len(value)} bytes]"
        if isinstance(value, enum.Enum):
            return self(value.value, depth)
        if isinstance(value, datetime | date):
            return value.isoformat()
        if isinstance(value, BaseException):
            return _cap(f"{type(value).__name__}: {value}")
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = {item.name: getattr(value, item.name) for item in dataclasses.fields(value)}
        if isinstance(value, Mapping):
            return self._mapping(value, depth)
        if isinstance(value, list | tuple | set | frozenset):
            return self._sequence(value, depth)
        try:
            return _cap(repr(value))
        except Exception:
            return f"<{type(value).__name__}>"

    def _mapping(self, value: Mapping[Any, Any], depth: int) -> Any:
        if depth >= MAX_DEPTH:
            return f"[{type(value).__name__}: {len(value)} keys]"
        out: dict[str, Any] = {}
        for index, (key, item) in enumerate(value.items()):
            if index == MAX_KEYS:
                out["…"] = f"[{len(value) - MAX_KEYS} more keys]"
                break
            name = key if isinstance(key, str) else str(key)
            out[name] = REDACTED if is_secret_key(name) else self(item, depth + 1)
        return out

    def _sequence(
        self, value: list[Any] | tuple[Any, ...] | set[Any] | frozenset[Any], depth: int
    ) -> Any:
        if depth >= MAX_DEPTH:
            return f"[{type(value).__name__}: {len(value)} items]"
        out: list[Any] = []
        for index, item in enumerate(value):
            if index == MAX_ITEMS:
                out.append(f"…[{len(value) - MAX_ITEMS} more]")
                break
            out.append(self(item, depth + 1))
        return out


def sanitize(value: Any) -> Any:
    """``value`` made JSON-ready, bounded and free of secrets: strings over :data:`MAX_STRING`
    characters cut (``…[n more]``) and scanned for credentials, lists cut to :data:`MAX_ITEMS`
    items plus a count, mappings to :data:`MAX_KEYS` keys, containers deeper than
    :data:`MAX_DEPTH` summarized, values under secret-named keys replaced by ``[redacted]``;
    dataclasses become mappings, other objects their (cut) ``repr``. Never raises."""
    return _Sanitizer()(value)


def _attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: REDACTED if is_secret_key(key) else sanitize(value)
        for key, value in attributes.items()
    }


def _copy(value: Any) -> Any:
    """A copy of a sanitized value (dicts, lists and scalars only)."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def iso_utc(ns: int) -> str:
    """Nanoseconds since the epoch as ISO-8601 UTC, to the microsecond (``…T12:00:00.000001Z``)."""
    return (
        (_EPOCH + timedelta(microseconds=ns // 1_000))
        .isoformat(timespec="microseconds")
        .replace("+00:00", "Z")
    )


@dataclass(slots=True)
class Span:
    """One timed piece of a turn: the turn itself, a model request or a tool call."""

    kind: SpanKind
    name: str  # "invoke_agent gmchat_nb", "chat {model}", "execute_tool {tool}"
    start_ns: int
    end_ns: int | None = None
    attributes: dict[str, Any] = field(default_factory=dict)  # sanitized values
    events: list[dict[str, Any]] = field(default_factory=list)  # {"name", "at_ns", "attributes"}
    children: list[Span] = field(default_factory=list)

    @property
    def ended(self) -> bool:
        return self.end_ns is not None

    @property
    def duration_ns(self) -> int | None:
        """``None`` while the span is open."""
        return None if self.end_ns is None else self.end_ns - self.start_ns

    def to_dict(self) -> dict[str, Any]:
        """The span and its children, JSON-ready (a copy: changing it leaves the trace alone)."""
        duration = self.duration_ns
        return {
            "kind": self.kind,
            "name": self.name,
            "start": iso_utc(self.start_ns),
            "end": None if self.end_ns is None else iso_utc(self.end_ns),
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "duration_ms": None if duration is None else round(duration / 1_000_000, 3),
            "attributes": _copy(self.attributes),
            "events": [
                {
                    "name": event["name"],
                    "at": iso_utc(event["at_ns"]),
                    "at_ns": event["at_ns"],
                    "attributes": _copy(event["attributes"]),
                }
                for event in self.events
            ],
            "children": [child.to_dict() for child in self.children],
        }


class TurnTrace:
    """The recorder of one turn. Opening it opens the root ``turn`` span; :meth:`finish` ends
    it. Spans of model requests and tool calls are children of the root, in the order opened."""

    __slots__ = ("_clock", "_sealed", "conversation_id", "root", "turn_id")

    def __init__(
        self,
        *,
        conversation_id: str | None = None,
        turn_id: str | None = None,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.conversation_id = conversation_id
        self.turn_id = turn_id
        self._clock = clock
        self._sealed = True  # nothing recorded raw yet
        self.root = Span("turn", ROOT_NAME, clock())

    @property
    def spans(self) -> list[Span]:
        """The root's children (model requests and tool calls), in the order opened."""
        return self.root.children

    @property
    def finished(self) -> bool:
        return self.root.end_ns is not None

    def now(self) -> int:
        """The trace's clock: nanoseconds since the epoch."""
        return self._clock()

    def _open(self, kind: SpanKind, name: str, attributes: dict[str, Any]) -> Span:
        self._sealed = False
        span = Span(kind, name, self._clock(), attributes=attributes)
        self.root.children.append(span)
        return span

    def model_request(self, *, provider: str, model: str) -> Span:
        """Opens the span of one request to ``model`` (``chat {model}``)."""
        return self._open(
            "model_request", f"chat {model}", {"provider": _cap(provider), "model": _cap(model)}
        )

    def tool_call(self, *, call_id: str, tool: str, arguments: Any) -> Span:
        """Opens the span of one tool call (``execute_tool {tool}``); ``arguments`` sanitized."""
        return self._open(
            "tool_call",
            f"execute_tool {tool}",
            {"tool": tool, "call_id": call_id, "arguments": arguments},
        )

    def end(self, span: Span, **attributes: Any) -> None:
        """Ends ``span`` now (a span already ended keeps its end) and adds ``attributes``."""
        if span.end_ns is None:
            span.end_ns = self._clock()
        if attributes:
            self._sealed = False
            span.attributes.update(attributes)

    def event(self, name: str, span: Span | None = None, **attributes: Any) -> None:
        """Records the point event ``name`` now, on ``span`` or else on the root."""
        target = self.root if span is None else span
        self._sealed = False
        target.events.append({"name": name, "at_ns": self._clock(), "attributes": attributes})

    def finish(self, **attributes: Any) -> None:
        """Ends the turn: the root, and any child still open (marked ``unfinished``)."""
        end = self._clock() if self.root.end_ns is None else self.root.end_ns
        for child in self.root.children:
            if child.end_ns is None:
                child.end_ns = end
                child.attributes["unfinished"] = True
        self.root.end_ns = end
        if attributes:
            self._sealed = False
            self.root.attributes.update(attributes)

    def seal(self) -> None:
        """Sanitize what was recorded (in place, once): recording keeps values as they are,
        since a turn's trace is often never read; whoever reads it (:meth:`to_dict`, the
        OpenTelemetry export) seals it first."""
        if self._sealed:
            return
        for span in (self.root, *self.root.children):
            span.attributes = _attributes(span.attributes)
            for event in span.events:
                event["attributes"] = _attributes(event["attributes"])
        self._sealed = True

    def to_dict(self) -> dict[str, Any]:
        """The trace, JSON-ready: ids and the root span with its children nested, times as
        ISO-8601 UTC (and nanoseconds), durations in milliseconds (``None`` while open)."""
        self.seal()
        return {
            "conversation_id": self.conversation_id,
            "turn_id": self.turn_id,
            "root": self.root.to_dict(),
        }

    def to_json(self, **dumps_kwargs: Any) -> str:
        """:meth:`to_dict` as JSON (``dumps_kwargs`` go to :func:`json.dumps`)."""
        dumps_kwargs.setdefault("ensure_ascii", False)
        return json.dumps(self.to_dict(), **dumps_kwargs)
