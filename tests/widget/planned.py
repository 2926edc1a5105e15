"""A recorded planned (orchestrated) turn, played through a real ``Chat`` (test-only).

The planned engine (``gmchat_nb/core/planned``) is not wired into ``Chat`` yet, so no provider
can produce a planned turn. :class:`PlannedReplay` stands in for it: a ``Chat`` whose ``stream``
plays :data:`EVENTS` the way ``Chat.stream`` reports a real turn. Its query is real: the demo
project runs it, so the widget gets its result table and evidence row as for any query.

The browser test runs this module's source as its notebook's chat cell (the kernel cannot
import ``tests``); the widget and CLI tests import it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from gmchat_nb import Chat, Turn
from gmchat_nb.core.events import ChatEvent, event_from_dict
from gmchat_nb.core.frames import frame_summary

QUESTION = "What do our copper parts cost in total, and which vehicles use them?"
# Markup a planner model might put into an objective: it must show as these characters.
HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
COPPER = {
    "manager": "Part",
    "filters": {"material__name": "Copper"},
    "fields": ["name", "quantity", "unitPrice"],
}
ORCHESTRATION: dict[str, Any] = {
    "status": "partial",
    "coverage": {"resolved": 1, "total": 3},
    "unresolved": [
        {"task_id": "task_2", "reason": "manager_unresolved"},
        {"task_id": "task_3", "reason": "dependency_blocked"},
    ],
    "tasks": [
        {
            "task_id": "task_1",
            "objective": "Unit prices of copper parts",
            "managers": ["Part"],
            "status": "resolved",
            "depends_on": [],
        },
        {
            "task_id": "task_2",
            "objective": f"Vehicles that use them {HOSTILE}",
            "managers": [],
            "status": "blocked",
            "depends_on": [],
            "reason": "manager_unresolved",
        },
        {
            "task_id": "task_3",
            "objective": "Owners of those vehicles",
            "managers": [],
            "status": "blocked",
            "depends_on": ["task_2"],
            "reason": "dependency_blocked",
        },
    ],
    "calculations": [
        {
            "evidence_id": "task_1:calculation:2",
            "task_id": "task_1",
            "operation": "sum",
            "text": "117.25 EUR",
            "value": "117.25",
            "unit": "EUR",
            # The first three of the five prices summed (the engine lists a sample).
            "inputs": [
                {
                    "evidence_id": "task_1:query:1",
                    "path": ["data", row, "unitPrice"],
                    "value": value,
                }
                for row, value in enumerate(["34 EUR", "22.4 EUR", "18.75 EUR"])
            ],
            "input_count": 5,
            "groups": [
                {
                    "group": "in stock",
                    "text": "76.05 EUR",
                    "value": "76.05",
                    "unit": "EUR",
                    "count": 4,
                },
                {
                    "group": "<b>sold out</b>",
                    "text": "41.2 EUR",
                    "value": "41.2",
                    "unit": "EUR",
                    "count": 1,
                },
            ],
        }
    ],
    "cited": ["task_1:query:1", "task_1:calculation:2"],
    "requests": {"planner": 1, "executor": 0, "synthesizer": 1},
}
# A tool_result without "result" is filled in by running its call on the demo project.
EVENTS: list[dict[str, Any]] = [
    {"type": "tool_call", "id": "call_1", "name": "query", "args": COPPER, "task_id": "task_1"},
    {
        "type": "tool_result",
        "id": "call_1",
        "name": "query",
        "task_id": "task_1",
        "evidence_id": "task_1:query:1",
    },
    {"type": "text_chunk", "content": "Our five copper parts cost **117.25 EUR** in total "},
    {"type": "text_chunk", "content": "[task_1:calculation:2]. I found no data about vehicles."},
    {
        "type": "done",
        "usage": {"input_tokens": 120, "output_tokens": 40},
        "orchestration": ORCHESTRATION,
    },
]


class PlannedReplay(Chat):
    """A chat (the demo project) whose every turn plays ``events``, as ``Chat.stream`` would
    report a planned turn: numbered events, kept in ``turns``, query outcomes with their calls."""

    def __init__(self, events: list[dict[str, Any]] | None = None, **settings: Any) -> None:
        settings.setdefault("provider", "offline")
        settings.setdefault("store", ":memory:")
        super().__init__(**settings)
        self.recorded = EVENTS if events is None else events

    async def stream(self, text: str, *, turn_id: str | None = None) -> AsyncIterator[ChatEvent]:
        session = await self.session()
        turn = Turn(question=text, turn_id=turn_id)
        self.turns.append(turn)
        calls = {e["id"]: e["args"] for e in self.recorded if e["type"] == "tool_call"}
        for sequence, recorded in enumerate(self.recorded):
            payload = dict(recorded)
            if payload["type"] == "tool_result" and "result" not in payload:
                outcome = await session.project.query(**calls[payload["id"]])
                payload.update(result=outcome.to_result(), frame=frame_summary(outcome.rows))
                payload["duration_ms"] = 1.5
                turn.outcomes.append(outcome)
                turn.call_ids.append(payload["id"])
            event = event_from_dict(payload).numbered(sequence)
            turn.events.append(event.to_dict())
            yield event
