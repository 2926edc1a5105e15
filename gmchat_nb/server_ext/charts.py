"""A query result's chart over HTTP, for the side panel's result tables (their **Chart** button).

``GET {url}conversations/{id}/turns/{turn_id}/chart?call_id=…[&mark=&x=&y=&color=&aggregate=&limit=]``
answers ``{call_id, columns, marks, aggregates, intent, chart, error}``, the body of the
widget's ``chart_options`` (gmchat_nb/widget/protocol.py): what a chart of the query's rows may
use, and the chart its columns suggest (no intent parameter) or the one the parameters ask for;
a chart that cannot be drawn (an unknown column, a mark that does not fit the columns, too many
marks) is a 200 whose ``error`` says why, as the model's ``chart`` call would read it. The rows
are the query's ``tool_result`` in the turn's journal (``result.data``), read from the store
alone: any server sharing it answers, and nothing is queried again. ``call_id`` is the query's
tool call id (or a planned turn's evidence id).

Refusals: 404 for a conversation that is not the user's, an unknown turn or no query result with
that id in it (``bad_event``, as the evidence route); 400 for a missing ``call_id``, a parameter
the route does not take, one given twice or not text, or a ``limit`` that is not a whole number.
(A parameter named by digits alone, which JupyterLab's ``ServerConnection`` adds to a GET to
defeat caches, is ignored.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from tornado import web

from ..core.charts.answer import chart_answer
from .durable import UNKNOWN_TURN, DurableHandler
from .handlers import allow
from .requests import Refused, not_a_parameter

__all__ = ["TurnChartHandler", "chart_answer"]

INTENT_PARAMETERS: Final = ("mark", "x", "y", "color", "aggregate", "limit")
MAX_PARAMETER: Final = 1000
UNKNOWN_QUERY: Final = "No query result with that call id in this turn."


def query_rows(events: Sequence[Mapping[str, Any]], call_id: str) -> list[dict[str, Any]] | None:
    """The rows of the turn's query ``call_id`` (its tool call id or planned evidence id), as its
    journaled ``tool_result`` holds them, or None when the turn has no such result. The journal
    keeps a row's keys sorted: they are put back in the order of the result's columns (its
    ``frame.columns``, the table's), so a chart's columns and suggestion are the widget's."""
    for event in events:
        if event.get("type") != "tool_result" or call_id not in (
            event.get("id"),
            event.get("evidence_id"),
        ):
            continue
        result = event.get("result")
        data = result.get("data") if isinstance(result, Mapping) else None
        if isinstance(data, list):
            frame = event.get("frame")
            columns = frame.get("columns") if isinstance(frame, Mapping) else None
            rank = _ranks(columns if isinstance(columns, list) else [])
            return [_ordered(row, rank, "") for row in data if isinstance(row, dict)]
    return None


def _ranks(columns: Sequence[Any]) -> dict[str, int]:
    """Each dotted column and each of its prefixes (``material`` of ``material.name``): the place
    of the first column it begins."""
    rank: dict[str, int] = {}
    for index, column in enumerate(str(name) for name in columns):
        parts = column.split(".")
        for depth in range(1, len(parts) + 1):
            rank.setdefault(".".join(parts[:depth]), index)
    return rank


def _ordered(row: dict[str, Any], rank: Mapping[str, int], prefix: str) -> dict[str, Any]:
    last = len(rank)
    keys = sorted(row, key=lambda key: rank.get(prefix + str(key), last))  # stable: unknown last
    return {
        key: _ordered(row[key], rank, f"{prefix}{key}.") if isinstance(row[key], dict) else row[key]
        for key in keys
    }


class TurnChartHandler(DurableHandler):
    """``GET {url}conversations/{id}/turns/{turn_id}/chart``: a query result's chart."""

    @web.authenticated
    @allow("read")
    async def get(self, conversation_id: str, turn_id: str) -> None:
        self.check_permission()
        try:
            await self.own_conversation(conversation_id)
            call_id, intent = self._parameters()
            answer = await self.runtime.on_engine(
                self._chart, conversation_id, turn_id, call_id, intent
            )
        except Refused as refused:
            return self.refuse(refused)
        self.finish(json.dumps({"call_id": call_id, **answer}, default=str))

    def _parameters(self) -> tuple[str, dict[str, Any] | None]:
        """``call_id`` and the intent the query parameters ask for (None: none asked)."""
        arguments = {
            name: raw
            for name, raw in self.request.query_arguments.items()
            if not not_a_parameter(name)  # ?token=, a cache-buster
        }
        unknown = sorted(name for name in arguments if name not in ("call_id", *INTENT_PARAMETERS))
        if unknown:
            raise Refused(
                400,
                "bad_event",
                f"The chart route does not take {', '.join(repr(name[:40]) for name in unknown[:5])}; "
                f"it takes 'call_id', {', '.join(repr(name) for name in INTENT_PARAMETERS)}.",
            )
        values: dict[str, str] = {}
        for name, raw in arguments.items():
            if len(raw) != 1:
                raise Refused(
                    400, "bad_event", f"'{name}' is given {len(raw)} times; give it once."
                )
            try:
                value = raw[0].decode("utf-8")
            except UnicodeDecodeError:
                raise Refused(400, "bad_event", f"'{name}' is not UTF-8 text.") from None
            if len(value) > MAX_PARAMETER or "\x00" in value:
                raise Refused(400, "bad_event", f"'{name}' is not a name a chart could use.")
            values[name] = value
        call_id = values.pop("call_id", "").strip()
        if not call_id:
            raise Refused(400, "bad_event", "The query's call id is required ('call_id').")
        intent: dict[str, Any] = {name: value for name, value in values.items() if value != ""}
        if "limit" in intent:
            limit = intent["limit"]
            if not (limit.isascii() and limit.isdigit() and len(limit) <= 6):
                raise Refused(400, "bad_event", "'limit' must be a whole number.")
            intent["limit"] = int(limit)
        return call_id, intent or None

    def _chart(
        self, conversation_id: str, turn_id: str, call_id: str, intent: dict[str, Any] | None
    ) -> dict[str, Any]:
        """On the engine: the turn's journaled query result, charted."""
        store = self.runtime.store
        events = store.events(conversation_id, turn_id=turn_id)
        if not events and store.turn(conversation_id, turn_id) is None:
            raise Refused(404, "bad_event", UNKNOWN_TURN)
        rows = query_rows(events, call_id)
        if rows is None:
            raise Refused(404, "bad_event", UNKNOWN_QUERY)
        return chart_answer(rows, call_id, intent)
