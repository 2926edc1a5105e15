"""Record a real provider's responses into a cassette, and replay them offline.

A cassette is a JSON-lines file. Its optional first line is a header,
``{"cassette": {"label": ..., "description": ...}}``, naming what was recorded (the label is the
provider's column in eval reports; the description is printed beside it, so a scripted stand-in
can never pass for a real model). Every other line is one provider request: the SHA-256 of the
request (messages and tools, canonical JSON) and the events streamed back. A structured request
(``complete_structured``) is a line with the hash of its messages, schema and name
(:func:`structured_request_hash`) and ``structured: {value, usage}`` instead of ``events``; the
two kinds share the file, so a recorded planned turn (a plan, then streamed requests) replays.

Replaying serves a recorded response only for a request that hashes the same, so a notebook or an
eval runs offline exactly as it ran against the real model, and a request that differs is a clear
error naming its hash, never a silent guess. Responses are looked up by hash (repeated requests are
served in recorded order), so one cassette holds a whole eval run whose cases replay concurrently.
"""

from __future__ import annotations

import dataclasses
import json
from collections import deque
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from ..digest import digest
from .base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderError,
    ProviderEvent,
    StructuredReply,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
    WrappingProvider,
)
from .cassettes import cassette_path

__all__ = [
    "CASSETTE_HEADER",
    "RecordingProvider",
    "ReplayProvider",
    "request_hash",
    "structured_request_hash",
]

CASSETTE_HEADER = "cassette"


def request_hash(messages: list[Message], tools: list[ToolDefinition]) -> str:
    """A stable digest of what a provider was asked."""
    payload = {
        "messages": [message.to_dict() for message in messages],
        "tools": [dataclasses.asdict(tool) for tool in tools],
    }
    return digest(payload)


def structured_request_hash(
    messages: list[Message], response_schema: Mapping[str, Any], name: str
) -> str:
    """A stable digest of a structured request. Its payload has other keys than
    :func:`request_hash`'s, so the two kinds never share a hash."""
    payload = {
        "messages": [message.to_dict() for message in messages],
        "response_schema": dict(response_schema),
        "response_name": name,
    }
    return digest(payload)


def _event_to_json(event: ProviderEvent) -> dict[str, Any]:
    if isinstance(event, TextChunkEvent):
        return {"type": "text", "content": event.content}
    if isinstance(event, ToolCallEvent):
        return {
            "type": "tool_call",
            "id": event.id,
            "name": event.name,
            "args": event.args,
            "error": event.error,
        }
    return {
        "type": "done",
        "usage": _usage_to_json(event.usage),
        "finish_reason": event.finish_reason,
    }


def _event_from_json(payload: Mapping[str, Any]) -> ProviderEvent:
    kind = payload.get("type")
    if kind == "text":
        return TextChunkEvent(str(payload["content"]))
    if kind == "tool_call":
        return ToolCallEvent(
            str(payload["id"]),
            str(payload["name"]),
            dict(payload.get("args") or {}),
            payload.get("error"),
        )
    if kind == "done":
        return DoneEvent(_usage_from_json(payload.get("usage")), payload.get("finish_reason"))
    raise ValueError(f"unknown cassette event {kind!r}")


_EXTRA_COUNTS = ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


def _usage_to_json(usage: TokenUsage) -> dict[str, Any]:
    """A usage as a cassette keeps it: the input and output counts, then the cache and reasoning
    counts and ``estimated`` only when set (so cassettes recorded before them stay the same)."""
    recorded: dict[str, Any] = usage.to_dict()
    details = usage.details()
    for name in _EXTRA_COUNTS:
        if details[name]:
            recorded[name] = details[name]
    if usage.estimated:
        recorded["estimated"] = True
    return recorded


def _usage_from_json(usage: Any) -> TokenUsage:
    usage = usage if isinstance(usage, Mapping) else {}
    return TokenUsage(
        input_tokens=int(usage.get("input_tokens", 0)),
        output_tokens=int(usage.get("output_tokens", 0)),
        cache_read_tokens=int(usage.get("cache_read_tokens", 0)),
        cache_write_tokens=int(usage.get("cache_write_tokens", 0)),
        reasoning_tokens=int(usage.get("reasoning_tokens", 0)),
        estimated=usage.get("estimated") is True,
    )


class ReplayProvider(BaseLLMProvider):
    """Plays back a cassette (config ``path``: a file, else a bundled cassette's name, see
    :mod:`.cassettes`), serving each request its recorded response."""

    name: ClassVar[str] = "replay"

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        path = self.provider_config.get("path")
        if not path:
            raise ValueError(
                "the replay provider needs a cassette: a path or a bundled cassette's name "
                "(replay:FILE.jsonl, replay:oracle-openai)"
            )
        self.path = cassette_path(str(path))
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError as error:
            raise ValueError(f"cannot read the cassette {self.path}: {error.strerror}") from None
        self.header: dict[str, Any] = {}
        # Each entry is a cassette line: ``events`` for a streamed request, ``structured`` for a
        # structured one (their hashes differ, so one queue holds one kind).
        self._responses: dict[str, deque[dict[str, Any]]] = {}
        self.recorded = 0
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{self.path.name} line {number} is not JSON: {error}") from None
            if CASSETTE_HEADER in entry:
                self.header = dict(entry[CASSETTE_HEADER] or {})
                continue
            key = entry.get("request_hash")
            if not isinstance(key, str):
                raise ValueError(f"{self.path.name} line {number} has no request_hash")
            self._responses.setdefault(key, deque()).append(entry)
            self.recorded += 1
        self._served = 0
        self.model_requests = 0  # as the recorded provider counted them (see RecordingProvider)

    @property
    def label(self) -> str:
        """The recorded provider's label from the header, else ``replay:<file stem>``."""
        return str(self.header.get("label") or f"replay:{self.path.stem}")

    @property
    def description(self) -> str | None:
        """What the cassette holds, from its header (shown in eval reports)."""
        text = self.header.get("description")
        return str(text) if text else None

    @property
    def instructions(self) -> tuple[str, ...]:
        """The fixed prompt texts the recorded provider wrote itself (small-model mode's), from
        the header: what its model was told, for judges that look for echoes."""
        listed = self.header.get("instructions")
        return tuple(str(text) for text in listed) if isinstance(listed, list) else ()

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        """Serve the recorded response to this exact request."""
        entry = self._recorded(request_hash(messages, tools))
        made = entry.get("model_requests")
        self.model_requests += made if isinstance(made, int) and made >= 0 else 1
        for payload in entry.get("events") or []:
            yield _event_from_json(payload)

    async def complete_structured(
        self,
        messages: list[Message],
        response_schema: Mapping[str, Any],
        *,
        name: str = "response",
    ) -> StructuredReply:
        """Serve the recorded structured answer to this exact request."""
        entry = self._recorded(structured_request_hash(messages, response_schema, name))
        self.model_requests += 1
        recorded = entry.get("structured")
        if not isinstance(recorded, Mapping) or not isinstance(recorded.get("value"), Mapping):
            raise ProviderError(
                f"the cassette {self.path.name} has a malformed structured answer to request "
                f"{entry.get('request_hash', '')[:12]}: record it again"
            )
        return StructuredReply(dict(recorded["value"]), _usage_from_json(recorded.get("usage")))

    def _recorded(self, key: str) -> dict[str, Any]:
        """The next recorded line for the request hashing to ``key``, else why there is none."""
        self._served += 1
        queue = self._responses.get(key)
        if queue is None:
            raise ProviderError(
                f"request {self._served} differs from the cassette {self.path.name}: it recorded "
                f"no request with hash {key[:12]}; the prompt, tools, data or conversation "
                "changed since it was recorded: record it again"
            )
        if not queue:
            raise ProviderError(
                f"the cassette {self.path.name} has no more responses to request {key[:12]} "
                "(it was asked more often than when it was recorded): record it again"
            )
        return queue.popleft()


class RecordingProvider(WrappingProvider):
    """Wraps any provider and appends each completed response to a cassette file.

    A new (or empty) cassette starts with a header naming the wrapped provider's label and
    ``description`` (default: "recorded from <label>").
    """

    name: ClassVar[str] = "record"

    def __init__(
        self, inner: BaseLLMProvider, path: str | Path, description: str | None = None
    ) -> None:
        super().__init__(inner)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.description = description or f"recorded from {inner.label}"

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        """Pass the stream through; write it down once it completed (with how many requests
        reached the model, when the wrapped provider takes some steps itself)."""
        key = request_hash(messages, tools)
        events: list[dict[str, Any]] = []
        before = getattr(self.inner, "model_requests", None)
        async for event in self.inner.complete(messages, tools):
            events.append(_event_to_json(event))
            yield event
        entry: dict[str, Any] = {"request_hash": key, "events": events}
        after = getattr(self.inner, "model_requests", None)
        if isinstance(before, int) and isinstance(after, int):
            entry["model_requests"] = after - before
        self._append(entry)

    @property
    def instructions(self) -> tuple[str, ...]:
        """The wrapped provider's own prompt texts, if it writes any."""
        return tuple(getattr(self.inner, "instructions", ()))

    @property
    def model_requests(self) -> int | None:
        """The wrapped provider's count of requests that reached its model, if it keeps one."""
        made = getattr(self.inner, "model_requests", None)
        return made if isinstance(made, int) else None

    async def complete_structured(
        self,
        messages: list[Message],
        response_schema: Mapping[str, Any],
        *,
        name: str = "response",
    ) -> StructuredReply:
        """Ask the wrapped provider (its own structured output); write the answer down."""
        key = structured_request_hash(messages, response_schema, name)
        reply = await self.inner.complete_structured(messages, response_schema, name=name)
        recorded = {"value": reply.value, "usage": _usage_to_json(reply.usage)}
        self._append({"request_hash": key, "structured": recorded})
        return reply

    def _append(self, entry: Mapping[str, Any]) -> None:
        """Append one request's line, after the header when the cassette is new."""
        lines = []
        if not self.path.exists() or self.path.stat().st_size == 0:
            header: dict[str, Any] = {"label": self.label, "description": self.description}
            if self.instructions:
                header["instructions"] = list(self.instructions)
            lines.append(json.dumps({CASSETTE_HEADER: header}, sort_keys=True))
        lines.append(json.dumps(entry, sort_keys=True))
        with self.path.open("a", encoding="utf-8") as cassette:
            cassette.write("".join(line + "\n" for line in lines))
