"""Small-model mode (``constrained: true``): a small model makes one small, typed decision per step.

A 270M-parameter model asked to write ``query`` arguments against gmchat's open tool schema wrote
syntactically valid JSON that the project rejected every time (junk optional fields such as
``fields: ["name__icontains"]``). Under a *typed* schema -- the manager's own field names and filter
paths as enums, every filter value typed from the schema (a number, a boolean, an ISO date,
``"12 EUR"``), strings capped at 40 characters -- every call was accepted. So this mode wraps any
provider that can give structured answers (:meth:`~.base.BaseLLMProvider.complete_structured`:
a grammar in process for ``local:``, ``response_format`` on a server) and drives the tool loop
itself, as the planned executors' slots do:

0. when the context holds recalled verified queries, the model picks the one that answers the
   question or none (an enum, :mod:`.constrained_recall`); a pick that fits runs at once and
   step 5 answers from it;
1. ``search_managers`` with the question (no model request);
2. the model picks the manager among the ranked candidates (an enum; skipped when only one);
3. ``get_manager_schema`` for it, then for the managers one relation away (no model request);
4. the model fills the query under the typed schema: fields, and at most one filter;
5. the model answers from the rows alone, streamed; an empty answer is replaced by the engine's
   account of the rows (labelled as such), so a turn never ends without a grounded answer.

Every call still goes through the loop's guards and the project's validation. A request without
the read tools (a planned synthesizer's, a summary) and every structured request pass straight to
the wrapped provider. The mode reads only: it never calls ``mutate``.

Over 400 lines: small-model mode is one provider whose step schemas and engine answers
share the turn it walks through.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar

from ..project.tools import TOOLS
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
from .constrained_recall import RECALL_PROMPT, verified_calls

__all__ = ["ConstrainedProvider", "query_slot_schema"]

NEEDED_TOOLS = (TOOLS.search_managers.name, TOOLS.get_manager_schema.name, TOOLS.query.name)
PROBE = "constrained_probe_"  # the id prefix of the one-row query that shows measurement units
MAX_CANDIDATES = 6
MAX_RELATED = 4
MAX_FIELDS = 5
MAX_STRING = 40
ROWS_SHOWN = 20
PICK_PROMPT = "Pick the data type whose records answer the question."
FILL_PROMPT = (
    "the fields to show, and one filter taken from the question, or null when the question "
    "names no condition."
)
ANSWER_PROMPT = (
    "Answer the question in one or two sentences using only these records. If there are none, "
    "say so."
)
_DATE = "^(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])$"
# GraphQL scalar -> the JSON schema of a filter value of that type
VALUE_SCHEMAS: dict[str, dict[str, Any]] = {
    "Int": {"type": "integer"},
    "Float": {"type": "number"},
    "Decimal": {"type": "number"},
    "Boolean": {"type": "boolean"},
    "ID": {"type": "string", "pattern": "^[1-9][0-9]{0,8}$"},
    # days 29-31 are left out: a valid pattern must not admit 2024-02-30
    "Date": {"type": "string", "pattern": _DATE},
    "DateTime": {"type": "string", "pattern": _DATE},
}
MEASUREMENT = "MeasurementScalar"
STRING_VALUE: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": MAX_STRING}
# the lookups offered per kind of value: few, so the model's choice stays small
TEXT_LOOKUPS = ("", "__icontains")
ORDERED_LOOKUPS = ("", "__gt", "__lt")
ORDERED = frozenset({"Int", "Float", "Decimal", "Date", "DateTime", "MeasurementScalar"})


def _value_schema(type_name: str, unit: str | None) -> dict[str, Any] | None:
    """The schema of a filter value, or None when no valid value can be promised (a measurement
    whose unit was not seen: "12 kg" for a price in EUR is rejected)."""
    if type_name == MEASUREMENT:
        if unit is None or not unit.isalpha():
            return None
        # "[.]", not an escaped dot: llama.cpp's schema-to-grammar writes "\\." into a rule
        # its own grammar parser then rejects
        return {"type": "string", "pattern": f"^[0-9]{{1,7}}([.][0-9]{{1,2}})? {unit}$"}
    return dict(VALUE_SCHEMAS.get(type_name, STRING_VALUE))


def _lookups(type_name: str, offered: list[str]) -> list[str]:
    wanted: tuple[str, ...] = ORDERED_LOOKUPS if type_name in ORDERED else TEXT_LOOKUPS
    if type_name in ("Boolean", "ID"):
        wanted = ("",)
    return [suffix for suffix in wanted if not suffix or suffix[2:] in offered]


def filter_paths(
    schema: Mapping[str, Any],
    related: Mapping[str, Mapping[str, Any]],
    units: Mapping[str, str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Filter path -> the JSON schema of its value: the manager's own scalar filters and those
    of the managers one relation away (``material__name``), with a few lookups each.
    ``units`` gives the unit seen for each of the manager's measurement fields."""
    paths: dict[str, dict[str, Any]] = {}

    def add(prefix: str, filters: Mapping[str, Any]) -> None:
        for name, spec in filters.items():
            type_name = spec.get("type") if isinstance(spec, Mapping) else None
            if not isinstance(type_name, str):
                continue  # a relation: reached through ``related`` instead
            value = _value_schema(type_name, None if prefix else (units or {}).get(name))
            if value is None:
                continue
            lookups = [str(item) for item in spec.get("lookups") or ("exact",)]
            for suffix in _lookups(type_name, lookups):
                paths[f"{prefix}{name}{suffix}"] = value

    add("", schema.get("filters") or {})
    for relation, spec in (schema.get("filters") or {}).items():
        target = spec.get("relation") if isinstance(spec, Mapping) else None
        if isinstance(target, str) and target in related:
            add(f"{relation}__", related[target].get("filters") or {})
    return paths


def measurement_fields(schema: Mapping[str, Any]) -> list[str]:
    """The manager's filters on measurements, whose units a probe row shows."""
    return [
        name
        for name, spec in (schema.get("filters") or {}).items()
        if isinstance(spec, Mapping) and spec.get("type") == MEASUREMENT
    ]


def query_slot_schema(
    schema: Mapping[str, Any],
    related: Mapping[str, Mapping[str, Any]],
    units: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The typed JSON schema of one query's choices: fields (an enum of the manager's scalar
    fields) and ``filter`` -- ``null`` or one ``{path, value}`` branch per filter path."""
    fields = [name for name in (schema.get("fields") or {}) if not name.endswith("Id")]
    branches: list[dict[str, Any]] = [{"type": "null"}]
    for path, value in filter_paths(schema, related, units).items():
        branches.append(
            {
                "type": "object",
                "properties": {"path": {"const": path}, "value": value},
                "required": ["path", "value"],
                "additionalProperties": False,
            }
        )
    return {
        "type": "object",
        "properties": {
            "fields": {
                "type": "array",
                "items": {"type": "string", "enum": fields or ["id"]},
                "minItems": 1,
                "maxItems": MAX_FIELDS,
            },
            "filter": {"anyOf": branches},
        },
        "required": ["fields", "filter"],
        "additionalProperties": False,
    }


class _Turn:
    """What the current turn (after the last user message) has found out so far."""

    def __init__(self, messages: list[Message]) -> None:
        start = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        self.question = messages[start].content if start >= 0 else ""
        self.results: dict[str, list[Any]] = {}
        self.probes: list[Any] = []
        for message in messages[start + 1 :]:
            if message.role != "tool" or not message.tool_name:
                continue
            if (message.tool_call_id or "").startswith(PROBE):
                self.probes.append(message.tool_result)
            else:
                self.results.setdefault(message.tool_name, []).append(message.tool_result)
        self.calls = sum(len(m.tool_calls) for m in messages)

    def units(self) -> dict[str, str]:
        """The unit of each measurement the probe row showed (``unitPrice`` -> ``EUR``)."""
        seen: dict[str, str] = {}
        for result in self.probes:
            for row in (result.get("data") or ()) if isinstance(result, dict) else ():
                for name, value in row.items() if isinstance(row, dict) else ():
                    if isinstance(value, dict) and isinstance(value.get("unit"), str):
                        seen.setdefault(name, value["unit"])
        return seen

    def schemas(self) -> dict[str, dict[str, Any]]:
        found = {}
        for result in self.results.get(TOOLS.get_manager_schema.name, []):
            if isinstance(result, dict) and isinstance(result.get("manager"), str):
                found[result["manager"]] = result
        return found


class ConstrainedProvider(WrappingProvider):
    """Drives a read turn in typed steps over ``inner`` (see the module docstring)."""

    name: ClassVar[str] = "constrained"
    # The fixed texts of the prompts this provider writes itself: a judge that checks whether an
    # answer only repeats what the model was told needs them (the loop never sees these prompts).
    instructions: ClassVar[tuple[str, ...]] = (
        PICK_PROMPT,
        FILL_PROMPT,
        ANSWER_PROMPT,
        RECALL_PROMPT,
    )

    def __init__(self, inner: BaseLLMProvider) -> None:
        super().__init__(inner)
        self.model_requests = 0  # requests to the model; the engine's own steps make none

    @property
    def label(self) -> str:
        return f"{self.inner.label} (constrained)"

    async def complete_structured(
        self, messages: list[Message], response_schema: Mapping[str, Any], *, name: str = "response"
    ) -> StructuredReply:
        self.model_requests += 1
        return await self.inner.complete_structured(messages, response_schema, name=name)

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        offered = {tool.name for tool in tools}
        if not all(name in offered for name in NEEDED_TOOLS):
            self.model_requests += 1
            async for event in self.inner.complete(messages, tools):
                yield event
            return
        turn = _Turn(messages)
        usage = TokenUsage()
        step = 0
        if TOOLS.search_managers.name not in turn.results:
            if TOOLS.query.name in turn.results:  # a recalled verified query ran: answer
                async for event in self._answer(turn):
                    yield event
                return
            calls, usage, asked = await verified_calls(self.inner, messages, turn.question)
            self.model_requests += asked
            if calls:
                for step, (name, args) in enumerate(calls):
                    yield self._call(turn, step, name, args)
                yield DoneEvent(usage, "tool_calls")
                return
            yield self._call(turn, step, TOOLS.search_managers.name, {"query": turn.question[:200]})
            yield DoneEvent(usage, "tool_calls")
            return
        schemas = turn.schemas()
        if not schemas and TOOLS.get_manager_schema.name in turn.results:
            yield TextChunkEvent(_engine_answer(turn.results[TOOLS.get_manager_schema.name][-1]))
            yield DoneEvent(usage, "stop")
            return
        if not schemas:
            candidates = _candidates(turn.results[TOOLS.search_managers.name][-1])
            if not candidates:
                yield TextChunkEvent(
                    "I found no data type in this project that matches the question."
                )
                yield DoneEvent(usage, "stop")
                return
            manager, usage = await self._pick_manager(turn.question, candidates)
            yield self._call(turn, step, TOOLS.get_manager_schema.name, {"manager": manager})
            yield DoneEvent(usage, "tool_calls")
            return
        chosen = next(iter(schemas.values()))
        missing = [t for t in _relation_targets(chosen) if t not in schemas][:MAX_RELATED]
        measured = measurement_fields(chosen)
        if (missing or measured) and len(turn.results[TOOLS.get_manager_schema.name]) == 1:
            for step, target in enumerate(missing):
                yield self._call(turn, step, TOOLS.get_manager_schema.name, {"manager": target})
            if measured:
                probe = {"manager": chosen["manager"], "fields": measured, "limit": 1}
                yield ToolCallEvent(f"{PROBE}{turn.calls + 1}", TOOLS.query.name, probe)
            yield DoneEvent(usage, "tool_calls")
            return
        if TOOLS.query.name not in turn.results:
            related = {name: schema for name, schema in schemas.items() if schema is not chosen}
            args, usage = await self._fill_query(turn.question, chosen, related, turn.units())
            yield self._call(turn, step, TOOLS.query.name, args)
            yield DoneEvent(usage, "tool_calls")
            return
        async for event in self._answer(turn):
            yield event

    def _call(self, turn: _Turn, step: int, name: str, args: dict[str, Any]) -> ToolCallEvent:
        return ToolCallEvent(f"constrained_{turn.calls + step + 1}", name, args)

    async def _pick_manager(
        self, question: str, candidates: list[tuple[str, str]]
    ) -> tuple[str, TokenUsage]:
        if len(candidates) == 1:
            return candidates[0][0], TokenUsage()
        listing = "\n".join(f"- {name}: {description}" for name, description in candidates)
        prompt = [
            Message("system", PICK_PROMPT),
            Message("user", f"Question: {question}\n\nData types:\n{listing}"),
        ]
        schema = {
            "type": "object",
            "properties": {"manager": {"type": "string", "enum": [n for n, _ in candidates]}},
            "required": ["manager"],
            "additionalProperties": False,
        }
        self.model_requests += 1
        reply = await self.inner.complete_structured(prompt, schema, name="pick_manager")
        manager = reply.value.get("manager")
        names = [name for name, _ in candidates]
        if manager not in names:  # a server that ignored the schema: the best-ranked one
            manager = names[0]
        return str(manager), reply.usage

    async def _fill_query(
        self,
        question: str,
        schema: Mapping[str, Any],
        related: Mapping[str, Mapping[str, Any]],
        units: Mapping[str, str],
    ) -> tuple[dict[str, Any], TokenUsage]:
        manager = str(schema["manager"])
        slot = query_slot_schema(schema, related, units)
        fields = slot["properties"]["fields"]["items"]["enum"]
        paths = filter_paths(schema, related, units)
        prompt = [
            Message(
                "system",
                f"Choose what to read from {manager} records to answer the question: {FILL_PROMPT}",
            ),
            Message(
                "user",
                f"Question: {question}\n\nFields: {', '.join(fields)}\n"
                f"Filter paths: {', '.join(list(paths)[:60])}",
            ),
        ]
        self.model_requests += 1
        reply = await self.inner.complete_structured(prompt, slot, name=TOOLS.query.name)
        chosen = [f for f in reply.value.get("fields") or () if f in fields]
        args: dict[str, Any] = {
            "manager": manager,
            "fields": list(dict.fromkeys(chosen))[:MAX_FIELDS] or fields[:1],
        }
        picked = reply.value.get("filter")
        if isinstance(picked, dict) and picked.get("path") in paths and "value" in picked:
            args["filters"] = {picked["path"]: picked["value"]}
        return args, reply.usage

    async def _answer(self, turn: _Turn) -> AsyncIterator[ProviderEvent]:
        result = turn.results[TOOLS.query.name][-1]
        if not isinstance(result, dict) or "data" not in result:
            yield TextChunkEvent(_engine_answer(result))
            yield DoneEvent(TokenUsage(), "stop")
            return
        rows = result.get("data")
        shown = json.dumps(
            rows[:ROWS_SHOWN] if isinstance(rows, list) else result,
            ensure_ascii=False,
            default=str,
        )
        prompt = [
            Message("system", ANSWER_PROMPT),
            Message("user", f"Question: {turn.question}\n\nRecords: {shown}"),
        ]
        text: list[str] = []
        done = DoneEvent(TokenUsage(), "stop")
        self.model_requests += 1
        async for event in self.inner.complete(prompt, []):
            if isinstance(event, TextChunkEvent):
                text.append(event.content)
                yield event
            elif isinstance(event, DoneEvent):
                done = event
            elif isinstance(event, ToolCallEvent):
                raise ProviderError("the model called a tool while answering without tools")
        if not "".join(text).strip():
            yield TextChunkEvent(_engine_answer(result))
        yield DoneEvent(done.usage, "stop")


def _candidates(result: Any) -> list[tuple[str, str]]:
    """(manager, description) of a ``search_managers`` result, best first."""
    found: list[tuple[str, str]] = []
    for hit in result if isinstance(result, list) else ():
        if isinstance(hit, dict) and isinstance(hit.get("manager"), str):
            description = str(hit.get("description") or "")[:120]
            found.append((hit["manager"], description))
    return found[:MAX_CANDIDATES]


def _relation_targets(schema: Mapping[str, Any]) -> list[str]:
    targets = []
    for spec in (schema.get("relations") or {}).values():
        target = spec.get("target") if isinstance(spec, Mapping) else None
        if isinstance(target, str) and target not in targets:
            targets.append(target)
    return targets


def _engine_answer(result: Any) -> str:
    """The rows described by the engine (the model gave no answer): counted and named."""
    if not isinstance(result, dict) or result.get("status") == "error" or "data" not in result:
        message = result.get("message") if isinstance(result, dict) else None
        return f"(Written by gmchat: the step failed: {message or 'no data'})"
    rows = [row for row in result.get("data") or () if isinstance(row, dict)]
    total = result.get("total_count")
    count = total if isinstance(total, int) else len(rows)
    if not rows:
        return "(Written by gmchat, the model gave no answer.) No records match."
    names = [str(next(iter(row.values()))) for row in rows[:10] if row]
    more = "" if count <= len(names) else f" and {count - len(names)} more"
    return (
        f"(Written by gmchat, the model gave no answer.) {count} record(s): "
        f"{', '.join(names)}{more}."
    )
