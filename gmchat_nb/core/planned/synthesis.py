"""The answer: streamed from the evidence only, with the engine's numbers and citations.

The synthesizer sees the question and the turn's evidence as native tool history (each result
tagged with its evidence id), and no tools. Its text streams to the user as it comes. When it
fails before saying anything, the fallback profile gets one try; when that fails too, the engine
writes a plain answer from the evidence itself, so a turn with evidence always ends grounded.
The engine's calculations are appended when the answer does not already quote them: a number the
user asked for never depends on a model's arithmetic.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from ..events import Notice, StreamReset, TextChunk
from ..project.tools import TOOLS
from ..providers.attempts import NoticeEvent, StreamResetEvent
from ..providers.base import Message, ProviderError, TextChunkEvent, ToolCallEvent
from .evidence import EvidenceRecord
from .executor import TaskRun
from .prompts import SYNTHESIZER_PROMPT
from .work import TurnWork

__all__ = ["Synthesis", "synthesize"]

_CITATION = re.compile(r"\[([A-Za-z0-9_\-:]+)\]")
_MAX_LISTED = 20
_REASON_WORDS = {
    "manager_unresolved": "no matching data was found",
    "dependency_blocked": "a part it depends on failed",
    "budget_exhausted": "it reached its execution limit",
    "deadline_exceeded": "it reached its time limit",
    "provider_failed": "the model failed",
    "invalid_plan": "it could not be planned",
}


class Synthesis:
    """The answer's text and the evidence ids it cites."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.cited: list[str] = []

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _history(work: TurnWork, records: list[EvidenceRecord]) -> list[Message]:
    """The evidence as native tool history: consecutive calls of one kind form one round, as
    the executor made them (a model reads rounds, not a flat list)."""
    messages: list[Message] = []
    batch: list[EvidenceRecord] = []
    kind: str | None = None
    for record in [*records, None]:
        key = _round_key(record) if record is not None else None
        if batch and key != kind:
            messages.extend(_round(batch))
            batch = []
        if record is not None:
            batch.append(record)
            kind = key
    return messages


def _round_key(record: EvidenceRecord) -> str:
    """Locating steps (paths, one-row probes for a value) form one round; else one per tool."""
    name = _tool_name(record)
    if name == TOOLS.find_path.name or (
        name == TOOLS.query.name and _call_args(record).get("limit") == 1
    ):
        return "locate"
    return name


def _tool_name(record: EvidenceRecord) -> str:
    if record.kind == "calculation":
        return "calculate"
    return str(record.provenance.get("tool", TOOLS.query.name))


def _round(records: list[EvidenceRecord]) -> list[Message]:
    calls = []
    results = []
    for record in records:
        name = _tool_name(record)
        calls.append(ToolCallEvent(record.evidence_id, name, _call_args(record)))
        payload = record.payload_json()
        # A list result (a search) stays a list: its id is the call's id.
        result = (
            {"evidence_id": record.evidence_id, **payload} if isinstance(payload, dict) else payload
        )
        results.append(
            Message("tool", tool_call_id=record.evidence_id, tool_name=name, tool_result=result)
        )
    return [Message("assistant", tool_calls=tuple(calls)), *results]


def _call_args(record: EvidenceRecord) -> dict[str, Any]:
    """The call that produced the evidence, as it was made (a model reads what was asked)."""
    if record.call_identity:
        args = json.loads(record.call_identity).get("args")
        if isinstance(args, dict):
            return args
    payload = record.payload_json()
    if record.kind == "calculation" and isinstance(payload, dict):
        return {"operation": payload.get("operation")}
    return {}


def _system(unresolved: list[TaskRun]) -> str:
    if not unresolved:
        return SYNTHESIZER_PROMPT
    missing = "; ".join(
        f"{run.task.objective or run.task.task_id} ({_REASON_WORDS.get(run.reason or '', 'unresolved')})"
        for run in unresolved
    )
    return f"{SYNTHESIZER_PROMPT} Not answerable: {missing}."


def _engine_answer(records: list[EvidenceRecord]) -> str:
    """A plain, grounded answer written from the evidence (no model involved)."""
    lines = []
    for record in records:
        payload = record.payload_json()
        if record.kind == "query" and isinstance(payload, dict):
            rows = payload.get("data") or []
            manager = record.provenance.get("manager", "rows")
            shown = [
                ", ".join(f"{k}: {v}" for k, v in row.items() if not isinstance(v, dict | list))
                for row in rows[:_MAX_LISTED]
                if isinstance(row, dict)
            ]
            more = f" (and {len(rows) - _MAX_LISTED} more)" if len(rows) > _MAX_LISTED else ""
            lines.append(
                f"{manager}: {len(rows)} found [{record.evidence_id}]"
                + (": " + "; ".join(shown) + more if shown else "")
            )
    return "\n".join(lines) or "No records matched."


def _calculation_note(text: str, records: list[EvidenceRecord]) -> str:
    notes = []
    for record in records:
        if record.kind != "calculation":
            continue
        payload = record.payload_json()
        shown = str(payload.get("text", ""))
        groups = [str(group.get("text", "")) for group in payload.get("groups") or []]
        if any(group and group in text for group in groups):
            continue  # answered per group: the overall value would only confuse
        if shown and shown not in text:
            notes.append(f"{payload.get('operation')}: {shown} [{record.evidence_id}]")
    return ("\n\nComputed from the data: " + "; ".join(notes)) if notes else ""


async def synthesize(
    work: TurnWork,
    question: str,
    resolved: list[TaskRun],
    unresolved: list[TaskRun],
    result: Synthesis,
) -> AsyncIterator[TextChunk | StreamReset | Notice]:
    """Stream the answer's chunks; ``result`` collects the text and the citations."""
    ids = list(dict.fromkeys(evidence_id for run in resolved for evidence_id in run.evidence_ids))
    records = [work.evidence.get(evidence_id) for evidence_id in ids]
    messages = [
        Message("system", _system(unresolved)),
        Message("user", question),
        *_history(work, records),
    ]
    for role in ("synthesizer", "fallback_executor"):
        try:
            async with asyncio.timeout(work.settings.synthesis_timeout_seconds):
                async for event in work.roles.request(role, messages, [], stage="synthesizer"):
                    if isinstance(event, TextChunkEvent) and event.content:
                        result.parts.append(event.content)
                        yield TextChunk(content=event.content)
                    elif isinstance(event, StreamResetEvent) and result.parts:
                        result.parts.clear()  # asked again: the broken answer is withdrawn
                        yield StreamReset(reason=event.reason)
                    elif isinstance(event, NoticeEvent):
                        yield Notice(
                            kind=event.kind, message=event.message, details=dict(event.details)
                        )
        except (ProviderError, TimeoutError) as error:
            work.io.provider_failed(error)
            if result.parts:
                break  # what was said stands; the engine's numbers follow
            continue
        if result.text.strip():
            break
    if not result.text.strip():
        text = _engine_answer(records)
        result.parts.append(text)
        yield TextChunk(content=text)
    note = _calculation_note(result.text, records)
    if note:
        result.parts.append(note)
        yield TextChunk(content=note)
    cited = [item for item in _CITATION.findall(result.text) if item in work.evidence]
    result.cited = list(dict.fromkeys(cited)) or ids
