"""A provider that plays a script: a list of rounds, one per provider request.

For tests, examples and notebooks. Each round is a mapping with optional ``text``, optional
``tool_calls`` (a list of ``{name, args, id?}``) and optional ``usage``
(``{input_tokens, output_tokens}``)::

    - tool_calls: [{name: query, args: {manager: Part, fields: [name]}}]
    - text: "Parts: Bolt, Bearing, Gear"

Rounds are served in order; running out of rounds is a provider failure. A few keys script
failures, so every guardrail can be tested without a real model: ``chunks`` (stream the text in
these pieces), ``finish_reason``, ``delay_seconds`` (wait before the first event),
``stall_after`` (stop sending after this many events, without Done), ``error`` (fail the request
with this server-side message) and ``done: false`` (end the stream without a Done).
"""

from __future__ import annotations

import asyncio
import copy
import functools
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import yaml

from ._wire import decode_arguments
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

__all__ = ["ScriptedProvider", "load_rounds"]

ROUND_KEYS = frozenset(
    {
        "text",
        "tool_calls",
        "usage",
        "chunks",
        "finish_reason",
        "delay_seconds",
        "stall_after",
        "error",
        "done",
    }
)


@functools.lru_cache(maxsize=32)
def _parsed(path: str, mtime_ns: int, size: int) -> Any:
    """A script file parsed once per version of it: a server builds a provider for every
    conversation, and parsing YAML cost more than a small turn's queries."""
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def load_rounds(source: str | Path | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rounds from a YAML/JSON file path or a list; malformed rounds are a ValueError."""
    if isinstance(source, str | Path):
        path = Path(source)
        try:
            stat = path.stat()
            loaded = _parsed(str(path), stat.st_mtime_ns, stat.st_size)
        except OSError as error:
            raise ValueError(f"cannot read the script {path}: {error.strerror}") from None
        except yaml.YAMLError as error:
            raise ValueError(f"the script {path} is not valid YAML: {error}") from None
        source = copy.deepcopy(loaded) if loaded is not None else []
    if not isinstance(source, Sequence) or isinstance(source, str | bytes):
        raise ValueError("a script is a list of rounds")
    rounds: list[dict[str, Any]] = []
    for number, item in enumerate(source, start=1):
        if not isinstance(item, Mapping):
            raise ValueError(f"round {number} of the script is not a mapping")
        unknown = set(item) - ROUND_KEYS
        if unknown:
            raise ValueError(
                f"round {number} has unknown keys {sorted(unknown)}; allowed: {sorted(ROUND_KEYS)}"
            )
        for call in item.get("tool_calls") or []:
            if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
                raise ValueError(f"round {number}: each tool call needs a 'name'")
        rounds.append(dict(item))
    return rounds


class ScriptedProvider(BaseLLMProvider):
    """Serves scripted rounds (config ``rounds``: a list, or ``path``: a YAML file).

    ``requests`` records every request it received, for tests that check what the loop sent.
    """

    name: ClassVar[str] = "scripted"

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        source = self.provider_config.get("rounds", self.provider_config.get("path"))
        self.rounds = load_rounds(source if source is not None else [])
        self.requests: list[tuple[list[Message], list[ToolDefinition]]] = []
        self._served = 0
        self._call_number = 0

    @property
    def remaining(self) -> int:
        """Rounds not served yet."""
        return len(self.rounds) - self._served

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        """Serve the next round."""
        self.requests.append((list(messages), list(tools)))
        if self._served >= len(self.rounds):
            raise ProviderError(f"the script has no round {self._served + 1}")
        script = self.rounds[self._served]
        self._served += 1
        if script.get("delay_seconds"):
            await asyncio.sleep(float(script["delay_seconds"]))
        if script.get("error"):
            raise ProviderError(str(script["error"]))
        stall_after = script.get("stall_after")
        for count, event in enumerate(self._events(script)):
            if stall_after is not None and count >= int(stall_after):
                await asyncio.sleep(3600)  # a stream that stops talking
            yield event

    def _events(self, script: Mapping[str, Any]) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        chunks = script.get("chunks")
        if chunks is None and script.get("text"):
            chunks = [script["text"]]
        events.extend(TextChunkEvent(str(chunk)) for chunk in chunks or [])
        for call in script.get("tool_calls") or []:
            self._call_number += 1
            # A script may give raw (even broken) argument JSON; read it as the vendor adapters
            # read a model's, so anything but an object is a tool error the model sees.
            args, error = decode_arguments(call.get("args", {}))
            call_id = str(call.get("id") or f"call-{self._call_number}")
            events.append(ToolCallEvent(call_id, call["name"], args, error=error))
        if script.get("done", True):
            usage = script.get("usage") or {}
            finish = script.get("finish_reason") or (
                "tool_calls" if script.get("tool_calls") else "stop"
            )
            events.append(
                DoneEvent(
                    TokenUsage(
                        int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
                    ),
                    finish,
                )
            )
        return events
