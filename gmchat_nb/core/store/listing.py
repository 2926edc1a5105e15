"""A conversation's turns as a client lists them (``GET {url}conversations/{id}/turns/``): each
turn's question, state and place in the journal, read from the turns, events and messages tables."""

from __future__ import annotations

import json
from typing import Final

from .database import Database
from .records import TurnSummary

__all__ = ["TurnListings"]

ENDS: Final = {"done": "done", "error": "failed"}
"""The state a turn without a turns row ends in, by the type of its last event (an ``error``
with code ``interrupted``: ``interrupted``)."""


class TurnListings(Database):
    """The :class:`~gmchat_nb.core.store.ChatStore` method that lists a conversation's turns."""

    def conversation_turns(self, conversation_id: str) -> list[TurnSummary]:
        """Every turn of the conversation in the order of the journal (a turn with no event yet
        right after the events it was admitted after), as :class:`TurnSummary`: its turns rows
        and the turns its journal names without one (stored before turns had rows)."""
        rows = self._read(
            "SELECT id, state, input, started_at, ended_at, admitted_position, rowid "
            "FROM turns WHERE conversation_id = ?",
            (conversation_id,),
        )
        spans = {
            row[0]: (int(row[1]), int(row[2]), float(row[3]), float(row[4]))
            for row in self._read(
                "SELECT turn_id, MIN(position), MAX(position), MIN(created_at), MAX(created_at) "
                "FROM events WHERE conversation_id = ? GROUP BY turn_id",
                (conversation_id,),
            )
        }
        questions: dict[str, str] = {}
        for turn_id, content in self._read(
            "SELECT turn_id, content FROM messages WHERE conversation_id = ? AND role = 'user' "
            "AND turn_id IS NOT NULL ORDER BY id",
            (conversation_id,),
        ):
            questions.setdefault(turn_id, content)
        listed: list[tuple[tuple[float, float, int], TurnSummary]] = []
        for turn_id, state, text, started, ended, admitted, rowid in rows:
            span = spans.pop(turn_id, None)
            key = (span[0] if span else (admitted or 0) + 0.5, float(started), int(rowid))
            summary = TurnSummary(
                turn_id=turn_id,
                text=text if text is not None else questions.get(turn_id),
                state=state,
                started_at=float(started),
                ended_at=None if ended is None else float(ended),
                first_position=span[0] if span else None,
                last_position=span[1] if span else None,
            )
            listed.append((key, summary))
        ends = self._legacy_ends(conversation_id, [span[1] for span in spans.values()])
        for turn_id, (first, last, started, ended) in spans.items():
            state = ends.get(last, "unknown")
            summary = TurnSummary(
                turn_id=turn_id,
                text=questions.get(turn_id),
                state=state,
                started_at=started,
                ended_at=ended if state != "unknown" else None,
                first_position=first,
                last_position=last,
            )
            listed.append(((first, started, 0), summary))
        return [summary for _key, summary in sorted(listed, key=lambda item: item[0])]

    def _legacy_ends(self, conversation_id: str, positions: list[int]) -> dict[int, str]:
        """The state each of these last events ends its turn in (a turn without a turns row)."""
        if not positions:
            return {}
        marks = ", ".join("?" for _ in positions)
        ends: dict[int, str] = {}
        for position, payload in self._read(
            f"SELECT position, payload FROM events WHERE conversation_id = ? "
            f"AND position IN ({marks})",
            (conversation_id, *positions),
        ):
            event = json.loads(payload)
            state = ENDS.get(str(event.get("type")))
            if state is not None:
                interrupted = event.get("code") == "interrupted"
                ends[int(position)] = "interrupted" if interrupted else state
        return ends
