"""What a chart question groups by: the words after "by", "per" or "for each", read against the
row manager's schema (the rule is in :mod:`.charting`'s docstring).

A grouping is a field of the row manager ("by status", "by order date", "by date" when it has one
date field), a to-one relation ("by material" reads ``material.name``, "by supplier country"
``supplier.country``) or the row manager itself ("for each part": its label). A number field
never groups: it is what the chart measures ("parts by quantity" is a bar of quantity per part).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ...project.names import singular, split_words
from .schemas import field_kind, label_field, schema_fields
from .words import Token

__all__ = ["Group", "find_group", "group_starts", "is_key", "is_to_one", "name_forms"]

_GROUPING: Final = frozenset({"by", "per"})
_EACH: Final = frozenset({"each", "every"})
_SKIPPED: Final = frozenset({"the", "a", "an", "their", "its", "each", "every"})
# "sorted by quantity" orders the rows; it groups nothing.
_SORTING: Final = frozenset({"sort", "sorted", "sorting", "ordered", "ordering", "rank", "ranked"})
_DATE_WORDS: Final = frozenset({"date", "day", "time"})


@dataclass(frozen=True, slots=True)
class Group:
    """What a chart groups by: the query field that reads it, the result column it becomes and
    the question's words it took (the grouping word included)."""

    field: str | dict[str, list[str]]
    column: str
    tokens: frozenset[int]


def is_to_one(name: str, info: Any, fields: Iterable[str]) -> bool:
    """Whether the relation ``name`` leads to one row: its schema says so, else GeneralManager's
    naming tells (a to-one relation has an ``<name>Id`` field; a to-many one ends in ``List``)."""
    if isinstance(info, Mapping) and info.get("kind") in ("one", "many"):
        return bool(info.get("kind") == "one")
    return f"{name}Id" in set(fields) or not name.endswith("List")


def is_key(column: str) -> bool:
    """Whether a column is an id (``id``, ``materialId``): no number to draw."""
    last = column.rsplit(".", 1)[-1]
    return last.lower() == "id" or last.endswith("Id")


def name_forms(name: str) -> list[str]:
    """A name's words as the question's singular words compare with them."""
    return [singular(word) for word in split_words(name)]


def _at(tokens: Sequence[Token], start: int, words: Sequence[str]) -> bool:
    """Whether the question's words from ``start`` are ``words`` (singular, lower case)."""
    if not words or start + len(words) > len(tokens):
        return False
    return all(tokens[start + k].base == word for k, word in enumerate(words))


def group_starts(tokens: Sequence[Token]) -> list[tuple[int, int]]:
    """``(grouping word, first word after it)`` for each "by", "per" and "for/of each"."""
    starts: list[tuple[int, int]] = []
    for index, token in enumerate(tokens):
        before = tokens[index - 1].lower if index else ""
        grouping = token.lower in _GROUPING and before not in _SORTING
        if not grouping and not (token.lower in _EACH and before in ("for", "of")):
            continue
        start = index + 1
        while start < len(tokens) and tokens[start].lower in _SKIPPED:
            start += 1
        starts.append((index, start))
    return starts


def find_group(
    tokens: Sequence[Token],
    row: str,
    schema: Mapping[str, Any],
    known: Mapping[str, Iterable[str]] | None = None,
) -> Group | None:
    """The grouping of a chart question (module docstring) against the row manager's ``schema``;
    ``known`` lists other managers' field names (a relation's target), when known."""
    for index, start in group_starts(tokens):
        group = _group_at(tokens, index, start, row, schema, known or {})
        if group is not None:
            return group
    return None


def _group_at(
    tokens: Sequence[Token],
    index: int,
    start: int,
    row: str,
    schema: Mapping[str, Any],
    known: Mapping[str, Iterable[str]],
) -> Group | None:
    """What the words from ``start`` group by (``index``: the grouping word), the longest phrase
    first and a field before a relation of the same length."""
    own = schema_fields(schema)
    listed = schema.get("relations")
    relations: Mapping[str, Any] = listed if isinstance(listed, Mapping) else {}
    found: list[tuple[int, int, Any, str]] = []  # (end, preference, field, column)
    for name, info in relations.items():
        words = name_forms(name)
        if not _at(tokens, start, words) or not is_to_one(name, info, own):
            continue
        end = start + len(words)
        target = str(info.get("target")) if isinstance(info, Mapping) else str(info)
        named = list(known.get(target, ()))
        chosen = next((f for f in named if not is_key(f) and _at(tokens, end, name_forms(f))), None)
        if chosen is not None:
            end += len(name_forms(chosen))
        else:
            chosen = _label(named) if named else "name"
        found.append((end, 0, {name: [chosen]}, f"{name}.{chosen}"))
    # A number is what a chart measures, not what it groups ("parts by quantity": a bar per part).
    fields = [
        name
        for name, info in own.items()
        if field_kind(info) not in ("id", "number", "measurement") and not is_key(name)
    ]
    for name in fields:
        if _at(tokens, start, name_forms(name)):
            found.append((start + len(name_forms(name)), 1, name, name))
    dates = [name for name in fields if field_kind(own[name]) == "date"]
    if len(dates) == 1 and start < len(tokens) and tokens[start].base in _DATE_WORDS:
        found.append((start + 1, 0, dates[0], dates[0]))  # "by date": the one date field
    if _at(tokens, start, name_forms(row)):  # "for each part" of parts: one bar a part
        label = label_field(schema)
        found.append((start + len(name_forms(row)), 0, label, label))
    if not found:
        return None
    end, _, field, column = max(found, key=lambda match: match[:2])
    return Group(field, column, frozenset(range(index, end)))


def _label(names: Sequence[str]) -> str:
    """The field that names a row of another manager: ``name``, else its first plain field."""
    if "name" in names:
        return "name"
    return next((name for name in names if not is_key(name)), "name")
