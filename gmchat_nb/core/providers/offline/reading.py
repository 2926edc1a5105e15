"""The question read against the fetched schemas: conditions, an ordering, values to locate.

:class:`QuestionReader` turns comparisons (``denser than 5``, ``before 2025-06-01``) into numeric
or date filters, boolean field words (``urgent``) into ``true`` filters and "highest density" into
an ordering; the words left over are the value phrases (``cobalt``, ``Germany``, ``active``) that
probes locate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...project.names import singular, split_words
from .charting import asks_for_chart, chart_words
from .comparisons import DATE_ADJECTIVES, DESCENDING, SUPERLATIVE, SYNONYMS, TOP_N, Comparison
from .grouping import Group, find_group
from .prose import humanize
from .question import QuestionText
from .schemas import field_kind, filter_lookups, relation_targets, schema_fields
from .words import (
    NEGATIONS,
    STOPWORDS,
    adjective_stems,
    find_words,
    is_number,
    verb_stem,
    word_forms,
)

__all__ = ["RESULT_LIMIT", "Condition", "QuestionReader", "Reading"]

RESULT_LIMIT = 50  # rows the final query asks for (the answer names each of them)


@dataclass(frozen=True, slots=True)
class _Mention:
    """A field of a fetched manager named in the question (token range ``start:end``)."""

    start: int
    end: int
    manager: str
    field: str
    kind: str
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Condition:
    """A filter on ``manager.field`` (the row manager's own, or reached by a path)."""

    manager: str
    field: str
    lookup: str
    value: Any


@dataclass(slots=True)
class Reading:
    """The question read against the fetched schemas."""

    conditions: list[Condition] = field(default_factory=list)
    phrases: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    order: tuple[str, bool] | None = None  # field, descending
    unordered: str | None = None  # a superlative with no field to sort by
    limit: int = RESULT_LIMIT  # "the 3 cheapest": fewer rows
    dates: frozenset[str] = frozenset()  # the row manager's date fields, for wording
    group: Group | None = None  # what a chart question groups by
    problem: str | None = None

    def query_args(
        self, row: str, fields: list[Any], filters: dict[str, Any], *, chart: bool
    ) -> dict[str, Any]:
        """The final ``query`` call's arguments: the rows, filters and order read, and the
        answer's rows; a chart's counts every row one call can read unless the question asked
        for fewer (never one row: a one-row query is how probes are told apart in the history)."""
        args: dict[str, Any] = {"manager": row, "fields": fields}
        if filters:
            args["filters"] = filters
        if self.order is not None:
            name, descending = self.order
            args["order_by"] = [f"-{name}" if descending else name]
        if not chart or self.limit < RESULT_LIMIT:
            args["limit"] = max(self.limit, 2)
        return args


class QuestionReader(QuestionText):
    """Reads the question against the schemas of the managers it names."""

    def read(
        self,
        row: str,
        others: list[str],
        schemas: dict[str, dict[str, Any]],
        known: Mapping[str, Iterable[str]] | None = None,
    ) -> Reading:
        """The question read against ``schemas`` (``reading.problem`` says why no query runs);
        ``known`` names the fields of managers whose schema was not fetched (a chart's grouping
        may go through one)."""
        reading = Reading()
        reading.dates = frozenset(
            name for name, info in schema_fields(schemas[row]).items() if field_kind(info) == "date"
        )
        used: set[int] = set()
        managers = [row, *others]
        for name in list(dict.fromkeys([*managers, *self._named_anywhere(schemas)])):
            for start, end in self.manager_spans(name):
                used.update(range(start, end))
        if asks_for_chart(self.question):
            # A chart's own words and its grouping are no values to look up ("parts per material
            # as a bar chart"), and "by urgent" groups by the flag rather than filtering on it.
            reading.group = find_group(self.tokens, row, schemas[row], known)
            used.update(chart_words(self.tokens))
            if reading.group is not None:
                used.update(reading.group.tokens)
        quoted = self.quoted(used)
        comparisons = self.comparisons(used)
        mentions = self._mentions(managers, schemas, used)
        for mention in mentions:
            used.update(range(mention.start, mention.end))
        for mention in mentions:
            if mention.kind == "boolean" and "exact" in filter_lookups(
                schemas[mention.manager], mention.field
            ):
                reading.conditions.append(
                    Condition(mention.manager, mention.field, "exact", not mention.negated)
                )
        for comparison in comparisons:
            condition, problem = self._resolve(comparison, row, others, schemas, mentions)
            if problem is not None:
                reading.problem = problem
                return reading
            assert condition is not None
            reading.conditions.append(condition)
        self._order(reading, row, schemas[row], mentions, used)
        reading.problem = self._numbers(reading, mentions, used, schemas)
        if reading.problem is not None:
            return reading
        own_equal = {
            c.field for c in reading.conditions if c.manager == row and c.lookup == "exact"
        }
        shown = [m.field for m in mentions if m.manager == row and m.kind not in ("boolean", "id")]
        shown += [c.field for c in reading.conditions if c.manager == row and c.lookup != "exact"]
        if reading.order is not None:
            shown.append(reading.order[0])
        reading.shown = [name for name in dict.fromkeys(shown) if name not in own_equal]
        reading.phrases = quoted + self.phrases(used)
        return reading

    def _numbers(
        self,
        reading: Reading,
        mentions: list[_Mention],
        used: set[int],
        schemas: dict[str, dict[str, Any]],
    ) -> str | None:
        """Numbers no comparison took: "quantity of 0" is an equality, anything else unclear."""
        ends = {m.end: m for m in mentions if m.kind == "number"}
        for index, token in enumerate(self.tokens):
            if index in used or not is_number(token.text):
                continue
            before = index
            while before > 0 and self.tokens[before - 1].lower in ("of", "is", "equal", "to", "="):
                before -= 1
            mention = ends.get(before)
            if mention is not None and "exact" in filter_lookups(
                schemas[mention.manager], mention.field
            ):
                info = schema_fields(schemas[mention.manager])[mention.field]
                number = float(token.text)
                value = int(number) if info.get("type") == "Int" and number.is_integer() else number
                reading.conditions.append(Condition(mention.manager, mention.field, "exact", value))
                used.add(index)
                continue
            # Silently dropping a number would answer a different question.
            return (
                f'I could not tell what "{token.text}" refers to in your question, so I did not '
                'run a query. Put it in a comparison with a field, e.g. "quantity over 100".'
            )
        return None

    def _named_anywhere(self, schemas: dict[str, dict[str, Any]]) -> list[str]:
        """Relation targets of the fetched schemas: their names are not values either."""
        return [target for schema in schemas.values() for _, target in relation_targets(schema)]

    def _mentions(
        self, managers: list[str], schemas: dict[str, dict[str, Any]], used: set[int]
    ) -> list[_Mention]:
        """Field names of the fetched managers in the question; the row manager claims first."""
        mentions: list[_Mention] = []
        claimed: set[int] = set()
        for manager in managers:
            fields = schema_fields(schemas[manager])
            last_words = [split_words(name)[-1] for name in fields if split_words(name)]
            for name, info in fields.items():
                kind = field_kind(info)
                if kind == "id" or (name.endswith("Id") and name != "id"):
                    continue
                forms = word_forms(name)
                if (
                    forms
                    and len(forms[0]) > 1
                    and len(forms[0][-1]) >= 4
                    and last_words.count(split_words(name)[-1]) == 1
                ):
                    forms.append(forms[0][-1:])  # "price" for unitPrice
                first_words = [split_words(other)[0] for other in fields if split_words(other)]
                if (
                    kind == "date"
                    and forms
                    and len(forms[0]) > 1
                    and first_words.count(split_words(name)[0]) == 1
                ):
                    forms.append(forms[0][:1])  # "due before 2030" is about dueDate
                for words in forms:
                    for start, end in find_words(self.tokens, words):
                        if any(i in claimed or i in used for i in range(start, end)):
                            continue
                        negated = start > 0 and self.tokens[start - 1].lower in NEGATIONS
                        mentions.append(_Mention(start, end, manager, name, kind, negated))
                        claimed.update(range(start, end))
                for index, token in enumerate(self.tokens):
                    if index in claimed or index in used or not forms:
                        continue
                    lower = token.lower
                    if kind == "boolean" and lower.startswith("non-"):
                        if singular(lower[4:]) == "".join(forms[0]):  # "non-urgent"
                            mentions.append(_Mention(index, index + 1, manager, name, kind, True))
                            claimed.add(index)
                    elif lower not in STOPWORDS and verb_stem(lower) == forms[0][0]:
                        # "started after 2025" is about startDate
                        mentions.append(_Mention(index, index + 1, manager, name, kind))
                        claimed.add(index)
        for mention in mentions:
            if mention.negated and mention.start > 0:
                claimed.add(mention.start - 1)
        used.update(claimed)
        return sorted(mentions, key=lambda m: (m.start, managers.index(m.manager)))

    def _resolve(
        self,
        comparison: Comparison,
        row: str,
        others: list[str],
        schemas: dict[str, dict[str, Any]],
        mentions: list[_Mention],
    ) -> tuple[Condition | None, str | None]:
        """The field a comparison is about, and the filter value in that field's format."""
        wanted = {"date"} if comparison.kind == "date" else {"number", "measurement"}
        if comparison.kind == "number" and comparison.unit is not None:
            measured = [
                (m, n)
                for m in [row, *others]
                for n, info in schema_fields(schemas[m]).items()
                if field_kind(info) == "measurement"
            ]
            if measured:
                wanted = {"measurement"}

        def usable(manager: str, name: str) -> bool:
            info = schema_fields(schemas[manager]).get(name, {})
            return field_kind(info) in wanted and comparison.lookup in filter_lookups(
                schemas[manager], name
            )

        chosen: tuple[str, str] | None = None
        if comparison.hint is not None:
            chosen = self._hinted(comparison.hint, [row, *others], schemas, usable)
        if chosen is None:
            nearby = [m for m in mentions if usable(m.manager, m.field)]
            if nearby:

                def distance(m: _Mention) -> float:
                    if m.end <= comparison.start:
                        return comparison.start - m.end
                    return m.start - comparison.end + 0.5  # after the comparison: less likely

                best = min(nearby, key=distance)
                chosen = (best.manager, best.field)
        if chosen is None and comparison.hint is None:
            own = [name for name in schema_fields(schemas[row]) if usable(row, name)]
            if len(own) == 1:
                chosen = (row, own[0])
        if chosen is None:
            candidates = [
                humanize(name)
                for name, info in schema_fields(schemas[row]).items()
                if field_kind(info) in ("number", "measurement", "date")
            ]
            about = f'"{comparison.hint}"' if comparison.hint else f'"{comparison.phrase.strip()}"'
            listed = ", ".join(candidates) if candidates else "none"
            return None, (
                f"I could not tell which field of {row} {about} refers to, so I did not run a "
                f"query. Name the field in the question ({row}'s comparable fields: {listed})."
            )
        manager, name = chosen
        kind = field_kind(schema_fields(schemas[manager])[name])
        value: Any = comparison.value
        if kind == "measurement":
            if comparison.unit is None:
                return None, (
                    f"{manager}.{name} is a measurement; give the value with its unit (for "
                    f'example "{comparison.value} EUR") and ask again.'
                )
            value = f"{comparison.value} {comparison.unit}"
        elif kind == "number":
            number = float(comparison.value)
            info = schema_fields(schemas[manager])[name]
            value = int(number) if info.get("type") == "Int" and number.is_integer() else number
        return Condition(manager, name, comparison.lookup, value), None

    def _hinted(
        self,
        hint: str,
        managers: list[str],
        schemas: dict[str, dict[str, Any]],
        usable: Callable[[str, str], bool],
    ) -> tuple[str, str] | None:
        """The field an adjective points at: ``denser`` -> density, ``cheaper`` -> unitPrice."""
        for manager in managers:
            for name, info in schema_fields(schemas[manager]).items():
                if not usable(manager, name):
                    continue
                words = split_words(name)
                for stem in adjective_stems(hint):
                    if stem in DATE_ADJECTIVES and field_kind(info) == "date":
                        return manager, name
                    if any(word in SYNONYMS.get(stem, ()) for word in words):
                        return manager, name
                    if len(stem) >= 4 and any(word.startswith(stem) for word in words):
                        return manager, name
        return None

    def _order(
        self,
        reading: Reading,
        row: str,
        schema: dict[str, Any],
        mentions: list[_Mention],
        used: set[int],
    ) -> None:
        # "at least 3" is a comparison the parser already consumed, not an ordering.
        match = next(
            (
                found
                for found in SUPERLATIVE.finditer(self.question)
                if not any(i in used for i in self.tokens_in(found.start(), found.end()))
            ),
            None,
        )
        if match is None:
            return
        word = " ".join(match.group("word").lower().split())
        descending = word in DESCENDING
        orderable = [str(name) for name in schema.get("order_by") or () if isinstance(name, str)]
        indices = self.tokens_in(match.start(), match.end())
        position = min(indices, default=0)
        chosen: str | None = None
        near = [m for m in mentions if m.manager == row and m.field in orderable]
        if near:
            chosen = min(near, key=lambda m: abs(m.start - position)).field
        if chosen is None:
            hint = word.split()[-1]

            def usable(manager: str, name: str) -> bool:
                return name in orderable and field_kind(schema_fields(schema).get(name, {})) != "id"

            found = self._hinted(hint, [row], {row: schema}, usable)
            chosen = found[1] if found is not None else None
        used.update(indices)
        if chosen is None:
            reading.unordered = word
            return
        reading.order = (chosen, descending)
        for limit_match in TOP_N.finditer(self.question):
            number = limit_match.group("after") or limit_match.group("before")
            span = self.tokens_in(limit_match.start(), limit_match.end())
            if int(number) > 0 and not any(i in used for i in span if i not in indices):
                reading.limit = min(int(number), RESULT_LIMIT)
                used.update(span)
                break
        else:
            spans = self.manager_spans(row)
            if spans and all(
                self.tokens[end - 1].lower == self.tokens[end - 1].base for _, end in spans
            ):
                reading.limit = 1  # "Which material has the highest density?" asks for one
