"""A chart question planned up front: the query and its chart, named in the offline plan.

The planned engine offers its executors no ``chart`` tool: it draws the chart a plan's query
requirement carries, from that query's rows. So for a question that asks for a chart (the rule
in :mod:`.charting`) the offline planner reads the question against the candidates' compact
schemas, as the classic loop reads it against fetched ones, and names the query -- the row
manager, its label, the fields the question names, the grouping, filters on the row manager's
own fields, an ordering -- and the chart, each column's kind read from the schema instead of the
rows. The engine then runs both with no executor request.

A question that needs more than the candidates say -- a value to look up first ("orders of
Acme by part"), a condition on another manager, a reference to the previous answer -- gets no
such plan: its executor reads it as the classic loop would, with the tools the engine offers it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .charting import ChartAsk, asks_for_chart, chart_fields, chart_intent
from .filters import build_filters
from .grouping import is_to_one
from .question import QuestionText
from .reading import QuestionReader
from .schemas import field_kind, label_field, schema_fields
from .words import REFERENCE_WORDS

__all__ = ["chart_plan"]


def chart_plan(
    question: str, candidates: Sequence[Mapping[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The ``query`` tool's arguments and the ``chart`` intent for a chart question, or ``None``
    when the question asks for no chart or needs more than the candidates say."""
    if not asks_for_chart(question):
        return None
    schemas = {
        str(candidate["manager"]): _schema(candidate)
        for candidate in candidates
        if isinstance(candidate, Mapping) and candidate.get("manager")
    }
    reader = QuestionReader(question)
    if not schemas or reader.cut or any(t.lower in REFERENCE_WORDS for t in reader.tokens):
        return None
    row = _row(reader, list(schemas))
    known = {name: list(schema_fields(schema)) for name, schema in schemas.items()}
    # The row manager's schema alone: a word naming an unrelated manager stays a value to look
    # up, and so ends the plan here rather than being read past.
    reading = reader.read(row, [], {row: schemas[row]}, known)
    if (
        reading.problem is not None
        or reading.phrases
        or reading.unordered is not None
        or any(condition.manager != row for condition in reading.conditions)
    ):
        return None
    filters, problem = build_filters(row, reading, [], {row: []}, None, reader.tokens)
    if problem is not None:
        return None
    ask = ChartAsk.read(question)
    label = label_field(schemas[row])
    fields: list[Any] = [label, *(name for name in reading.shown if name != label)]
    fields += [f for f in chart_fields(ask, schemas[row], reading.group) if f not in fields]
    group = reading.group.column if reading.group is not None else None
    chart = chart_intent(ask, reader.tokens, _kinds(fields, row, schemas), group)
    if chart is None:
        return None
    query = reading.query_args(row, fields, filters, chart=True)
    return query, chart


def _row(text: QuestionText, names: list[str]) -> str:
    """The manager the question names first (a full name before a partial one at the same
    place), else the best-ranked candidate -- as the classic loop chooses."""
    named = text.named_in_order(names)
    return named[0] if named else names[0]


def _schema(candidate: Mapping[str, Any]) -> dict[str, Any]:
    """A candidate's compact schema in ``get_manager_schema``'s shape, as far as it tells: a
    plain field's filter takes ``exact`` too (compact schemas leave it out), a relation's kind
    follows GeneralManager's naming, and what can be ordered is every plain field."""
    listed = candidate.get("fields")
    types: Mapping[str, Any] = listed if isinstance(listed, Mapping) else {}
    fields = {
        str(name): {
            "type": str(kind),
            **({"parts": ["value", "unit"]} if "Measurement" in str(kind) else {}),
        }
        for name, kind in types.items()
    }
    targets = candidate.get("relations")
    relations = {
        str(name): {
            "target": str(target),
            "kind": "one" if is_to_one(name, None, fields) else "many",
        }
        for name, target in (targets.items() if isinstance(targets, Mapping) else ())
    }
    lookups = candidate.get("filters")
    filters = {
        str(name): {"lookups": ["exact", *(str(item) for item in found or ())]}
        for name, found in (lookups.items() if isinstance(lookups, Mapping) else ())
        if name in fields
    }
    ordered = [name for name, info in fields.items() if field_kind(info) != "id"]
    return {
        "manager": str(candidate.get("manager")),
        "fields": fields,
        "relations": relations,
        "filters": filters,
        "order_by": ordered,
    }


def _kinds(fields: list[Any], row: str, schemas: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The result columns the query's ``fields`` become, with the kind the schema gives them."""
    kinds: dict[str, str] = {}
    relations = schemas[row].get("relations") or {}
    for item in fields:
        if isinstance(item, str):
            _column(kinds, item, schema_fields(schemas[row]).get(item, {}))
            continue
        for relation, names in item.items():
            target = str((relations.get(relation) or {}).get("target"))
            known = schema_fields(schemas.get(target, {}))
            for name in names:
                _column(kinds, f"{relation}.{name}", known.get(name, {}))
    return kinds


def _column(kinds: dict[str, str], column: str, info: Mapping[str, Any]) -> None:
    kind = field_kind(info)
    if kind == "measurement":  # read back as {value, unit}: two columns, as the table shows
        kinds[f"{column}.value"] = "quantitative"
        kinds[f"{column}.unit"] = "nominal"
    else:
        kinds[column] = {"number": "quantitative", "date": "temporal"}.get(kind, "nominal")
