"""Providers that play GeneralManager's planned-eval scripts, one provider per planned role.

GeneralManager 0.87.1's ``planned_orchestration.yaml`` scripts every role of a planned turn:
``planner`` (the plan), ``executor`` (entries ``{task_id, tool, args}``, ``{task_id, text:
action}`` or ``{task_id, repeat_tool: {count, tool, args}}``, optionally ``sleep_seconds``
first), ``synthesizer`` (``{text: {answer, evidence_ids}}``) and ``fallback``. These classes
serve those entries to the real planned engine: the executor finds the task it is asked about
in the ``REFERENCE_DATA`` of its system message and plays that task's next entry, as
GeneralManager's ``DeterministicPlannedProvider`` does (entries without a ``task_id`` serve any
task). Each provider counts its requests and tokens, so a run reports what every role cost.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, ClassVar

from ..core.planned.prompts import EXECUTOR_PROMPT
from ..core.providers.base import (
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
    structured_object,
)

__all__ = [
    "ExecutorScript",
    "FallbackScript",
    "PlannerScript",
    "RoleScript",
    "SynthesizerScript",
    "expand_script",
    "reference_task_id",
]

_REFERENCE = "REFERENCE_DATA="


def expand_script(entries: Sequence[Any]) -> list[dict[str, Any]]:
    """Entries with each ``repeat_tool`` unrolled into ``count`` tool entries.

    As GeneralManager does, every repeated call gets ``eval_round`` (and ``eval_task``) in its
    arguments, so the rounds are distinct calls and the engine cannot serve them from its
    duplicate cache: the budget case must reach its round limit by real work.
    """
    expanded: list[dict[str, Any]] = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        repeat = entry.get("repeat_tool")
        if not isinstance(repeat, Mapping):
            expanded.append(dict(entry))
            continue
        count = repeat.get("count")
        if not isinstance(count, int) or count < 1:
            continue
        for number in range(1, count + 1):
            args = dict(repeat.get("args") or {})
            args["eval_round"] = number
            if isinstance(entry.get("task_id"), str):
                args["eval_task"] = entry["task_id"]
            expanded.append(
                {"task_id": entry.get("task_id"), "tool": repeat.get("tool"), "args": args}
            )
    return expanded


def reference_task_id(messages: Sequence[Message]) -> str | None:
    """The ``task_id`` in the executor's reference (its system message), else None."""
    for message in messages:
        if message.role != "system" or _REFERENCE not in message.content:
            continue
        try:
            reference = json.loads(message.content.split(_REFERENCE, 1)[1])
        except ValueError:
            return None
        task_id = reference.get("task_id") if isinstance(reference, dict) else None
        return task_id if isinstance(task_id, str) else None
    return None


class RoleScript(BaseLLMProvider):
    """One role's script: entries served in order (the executor's per task), each counted."""

    name: ClassVar[str] = "gm-script"
    role: ClassVar[str] = "role"

    def __init__(self, entries: Sequence[Any] = ()) -> None:
        super().__init__({})
        self.entries = expand_script(entries)
        self.served: set[int] = set()
        self.requests = 0
        self.usage = TokenUsage()
        self.evidence_ids: list[str] = []  # what the synthesizer's answers cite

    @property
    def label(self) -> str:
        return f"gm-script:{self.role}"

    @property
    def remaining(self) -> int:
        return len(self.entries) - len(self.served)

    async def _take(self, task_id: str | None) -> dict[str, Any]:
        self.requests += 1
        for number, entry in enumerate(self.entries):
            if number not in self.served and entry.get("task_id") in (None, task_id):
                self.served.add(number)
                delay = entry.get("sleep_seconds")
                if isinstance(delay, int | float) and delay > 0:
                    await asyncio.sleep(float(delay))
                return entry
        # A ProviderError, as a model that fails: the engine's fallback and reasons take over.
        task = f" for task {task_id}" if task_id else ""
        raise ProviderError(f"the {self.role} script has no entry left{task}")

    def _usage(self, entry: Mapping[str, Any]) -> TokenUsage:
        # GeneralManager's scripted provider reports one token each way unless told otherwise.
        usage = entry.get("usage") or {}
        counted = TokenUsage(int(usage.get("input_tokens", 1)), int(usage.get("output_tokens", 1)))
        self.usage = self.usage + counted
        return counted

    def _text(self, entry: Mapping[str, Any]) -> str:
        text = entry.get("text", entry)
        return text if isinstance(text, str) else json.dumps(text, separators=(",", ":"))

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        executing = any(
            m.role == "system" and m.content.startswith(EXECUTOR_PROMPT) for m in messages
        )
        entry = await self._take(reference_task_id(messages) if executing else None)
        if "tool" in entry:
            number = len(self.served)
            args = dict(entry.get("args") or {})
            yield ToolCallEvent(f"{self.role}-{number}", str(entry["tool"]), args)
        else:
            yield TextChunkEvent(self._answer(entry))
        yield DoneEvent(self._usage(entry), "tool_calls" if "tool" in entry else "stop")

    def _answer(self, entry: Mapping[str, Any]) -> str:
        return self._text(entry)

    async def complete_structured(
        self,
        messages: list[Message],
        response_schema: Mapping[str, Any],
        *,
        name: str = "response",
    ) -> StructuredReply:
        entry = await self._take(None)
        value = entry.get("text", entry)
        if isinstance(value, str):
            value = json.loads(value)
        return StructuredReply(structured_object(json.loads(json.dumps(value))), self._usage(entry))


class PlannerScript(RoleScript):
    """Plays the plans (``text`` is the plan object)."""

    role = "planner"


class ExecutorScript(RoleScript):
    """Plays tool calls and JSON actions, per task."""

    role = "executor"


class SynthesizerScript(RoleScript):
    """Streams ``text.answer`` and remembers ``text.evidence_ids`` for the judge."""

    role = "synthesizer"

    def _answer(self, entry: Mapping[str, Any]) -> str:
        text = entry.get("text")
        if isinstance(text, Mapping) and "answer" in text:
            self.evidence_ids.extend(str(item) for item in text.get("evidence_ids") or [])
            return str(text["answer"])
        return self._text(entry)


class FallbackScript(SynthesizerScript):
    """The fallback profile: whatever its entries say (GeneralManager's are all empty)."""

    role = "fallback"
