"""Record a real provider's responses into a cassette, and replay them offline.

A cassette is a JSON-lines file; each line is one provider request: the SHA-256 of the request
(messages and tools, canonical JSON) and the events streamed back. Replaying serves the next
recorded response only when the request hashes the same, so a notebook or an eval runs offline
exactly as it ran against the real model — and a request that differs is a clear error naming
both hashes, never a silent guess.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from .base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderError,
    ProviderEvent,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
)

__all__ = ["RecordingProvider", "ReplayProvider", "request_hash"]


def request_hash(messages: list[Message], tools: list[ToolDefinition]) -> str:
    """A stable digest of what a provider was asked."""
    payload = {
        "messages": [dataclasses.asdict(message) for message in messages],
        "tools": [dataclasses.asdict(tool) for tool in tools],
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


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
    return {"type": "done", "usage": event.usage.to_dict(), "finish_reason": event.finish_reason}


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
        usage = payload.get("usage") or {}
        return DoneEvent(
            TokenUsage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))),
            payload.get("finish_reason"),
        )
    raise ValueError(f"unknown cassette event {kind!r}")


class ReplayProvider(BaseLLMProvider):
    """Plays back a cassette (config ``path``) in order, checking each request's hash."""

    name: ClassVar[str] = "replay"

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        path = self.provider_config.get("path")
        if not path:
            raise ValueError("the replay provider needs the cassette path (replay:FILE.jsonl)")
        self.path = Path(str(path))
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError as error:
            raise ValueError(f"cannot read the cassette {self.path}: {error.strerror}") from None
        self._entries = [json.loads(line) for line in lines if line.strip()]
        self._position = 0

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        """Serve the next recorded response if this is the request that was recorded."""
        digest = request_hash(messages, tools)
        if self._position >= len(self._entries):
            raise ProviderError(
                f"the cassette {self.path.name} has no request {self._position + 1} "
                f"(hash {digest[:12]}); record it again"
            )
        entry = self._entries[self._position]
        if entry.get("request_hash") != digest:
            raise ProviderError(
                f"request {self._position + 1} differs from the cassette {self.path.name} "
                f"(recorded {str(entry.get('request_hash'))[:12]}, now {digest[:12]}); "
                "the prompt, tools or conversation changed: record it again"
            )
        self._position += 1
        for payload in entry.get("events") or []:
            yield _event_from_json(payload)


class RecordingProvider(BaseLLMProvider):
    """Wraps any provider and appends each completed response to a cassette file."""

    name: ClassVar[str] = "record"

    def __init__(self, inner: BaseLLMProvider, path: str | Path) -> None:
        super().__init__(inner.provider_config)
        self.inner = inner
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    @property
    def label(self) -> str:
        """The wrapped provider's label."""
        return self.inner.label

    @property
    def timeout_seconds(self) -> float:
        """The wrapped provider's first-event timeout."""
        return self.inner.timeout_seconds

    @property
    def stream_timeout_seconds(self) -> float:
        """The wrapped provider's between-events timeout."""
        return self.inner.stream_timeout_seconds

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        """Pass the stream through; write it down once it completed."""
        digest = request_hash(messages, tools)
        events: list[dict[str, Any]] = []
        async for event in self.inner.complete(messages, tools):
            events.append(_event_to_json(event))
            yield event
        line = json.dumps({"request_hash": digest, "events": events}, sort_keys=True)
        with self.path.open("a", encoding="utf-8") as cassette:
            cassette.write(line + "\n")
