"""A provider that plays a script: a list of rounds, one per provider request.

For tests, examples and notebooks. Each round is a mapping with optional ``text``, optional
``tool_calls`` (a list of ``{name, args, id?}``) and optional ``usage``
(``{input_tokens, output_tokens}``)::

    - tool_calls: [{name: query, args: {manager: Part, fields: [name]}}]
    - text: "Parts: Bolt, Bearing, Gear"

Rounds are served in order; running out of rounds is a provider failure. A few keys script
failures, so every guardrail can be tested without a real model: ``chunks`` (stream the text in
these pieces), ``finish_reason``, ``delay_seconds`` (wait before the first event),
``chunk_delay_seconds`` (wait before each later event: a model that streams slowly),
``stall_after`` (stop sending after this many events, without Done), ``error`` (fail the request
with this server-side message) and ``done: false`` (end the stream without a Done).

A structured request (:meth:`~ScriptedProvider.complete_structured`, a planner's) takes the next
round too, from the same sequence: its ``structured`` mapping is the answer, or else its ``text``
(or ``chunks``) must be a JSON object (fences allowed), just as a model's text is read::

    - structured: {steps: [{tool: query, args: {manager: Part}}]}
      usage: {input_tokens: 40, output_tokens: 12}

``usage``, ``error``, ``delay_seconds`` and ``stall_after`` (any value: no answer ever comes) work
there as in a streamed round. A ``structured`` round served to ``complete`` (a streamed request) is
a provider failure, so a script whose rounds are out of step with the requests says so.
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
    StructuredReply,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
    structured_text,
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
        "chunk_delay_seconds",
        "stall_after",
        "error",
        "done",
        "structured",
    }
)
# What a structured round may carry besides its answer: a streamed round's text or tool calls
# would mean the script is out of step with the requests, so they are refused when loading.
STRUCTURED_KEYS = frozenset({"structured", "usage", "error", "delay_seconds", "stall_after"})


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
        if "structured" in item:
            if not isinstance(item["structured"], Mapping):
                raise ValueError(f"round {number}: 'structured' must be a mapping (the answer)")
            extra = set(item) - STRUCTURED_KEYS
            if extra:
                raise ValueError(
                    f"round {number}: a structured round cannot have {sorted(extra)}; "
                    f"allowed: {sorted(STRUCTURED_KEYS)}"
                )
        rounds.append(dict(item))
    return rounds


class ScriptedProvider(BaseLLMProvider):
    """Serves scripted rounds (config ``rounds``: a list, or ``path``: a YAML file).

    ``requests`` records every streamed request it received, for tests that check what the loop
    sent; ``structured_requests`` every structured one as ``(messages, schema, name)``.
    """

    name: ClassVar[str] = "scripted"

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        source = self.provider_config.get("rounds", self.provider_config.get("path"))
        self.rounds = load_rounds(source if source is not None else [])
        self.requests: list[tuple[list[Message], list[ToolDefinition]]] = []
        self.structured_requests: list[tuple[list[Message], dict[str, Any], str]] = []
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
        number, script = await self._next_round()
        if "structured" in script:
            raise ProviderError(
                f"round {number} of the script is a structured answer, but the request was a "
                "streamed one (complete): the script is out of step with the requests"
            )
        stall_after = script.get("stall_after")
        pause = float(script.get("chunk_delay_seconds") or 0)
        for count, event in enumerate(self._events(script)):
            if stall_after is not None and count >= int(stall_after):
                await asyncio.sleep(3600)  # a stream that stops talking
            if pause and count:
                await asyncio.sleep(pause)
            yield event

    async def complete_structured(
        self,
        messages: list[Message],
        response_schema: Mapping[str, Any],
        *,
        name: str = "response",
    ) -> StructuredReply:
        """Serve the next round as a structured answer: its ``structured`` mapping, else its
        text read as a JSON object."""
        self.structured_requests.append((list(messages), dict(response_schema), name))
        number, script = await self._next_round()
        if script.get("stall_after") is not None:
            await asyncio.sleep(3600)  # a request that never answers
        usage = _usage(script)
        if "structured" in script:
            # A copy: the caller may change its plan, and the round must replay the same.
            return StructuredReply(copy.deepcopy(dict(script["structured"])), usage)
        chunks = script.get("chunks")
        text = "".join(str(chunk) for chunk in chunks) if chunks is not None else script.get("text")
        if not text:
            raise ProviderError(
                f"round {number} of the script has no structured answer (no 'structured' and no "
                "JSON 'text') for a structured request"
            )
        return StructuredReply(structured_text(str(text)), usage)

    async def _next_round(self) -> tuple[int, dict[str, Any]]:
        """The next round and its number, after its ``delay_seconds``; its ``error`` raised. Both
        kinds of request take rounds from here, so a script reads in request order."""
        if self._served >= len(self.rounds):
            raise ProviderError(f"the script has no round {self._served + 1}")
        script = self.rounds[self._served]
        self._served += 1
        if script.get("delay_seconds"):
            await asyncio.sleep(float(script["delay_seconds"]))
        if script.get("error"):
            raise ProviderError(str(script["error"]))
        return self._served, script

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
            finish = script.get("finish_reason") or (
                "tool_calls" if script.get("tool_calls") else "stop"
            )
            events.append(DoneEvent(_usage(script), finish))
        return events


def _usage(script: Mapping[str, Any]) -> TokenUsage:
    """A round's ``usage`` (zeros when it has none)."""
    usage = script.get("usage") or {}
    return TokenUsage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)))
