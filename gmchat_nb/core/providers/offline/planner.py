"""The planner: the next step of a turn (the plan in the package docstring), from the turn alone.

It refuses write requests and opinion questions, chooses the row manager and the other managers
whose schemas it fetches, and then hands over to the reading, locating, filter and answer modules
for each later step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...charts.tool import CHART
from ...project.names import clip
from ...project.tools import TOOLS
from .answers import (
    LONG_QUESTION_NOTE,
    OPINION_REFUSAL,
    answer_text,
    query_answer,
    write_refusal,
)
from .charting import (
    ChartAsk,
    asks_for_chart,
    chart_args,
    chart_fields,
    chart_sentence,
    chart_words,
)
from .conversation import Turn
from .filters import build_filters
from .grouping import group_starts, is_to_one
from .locating import relation_paths, value_probes
from .question import OPINION_QUESTION, WRITE_REQUEST
from .reading import QuestionReader
from .schemas import label_field, schema_fields
from .words import REFERENCE_WORDS, STOPWORDS, is_number, word_forms

__all__ = ["Planner", "Step"]

REQUIRED_TOOLS = (TOOLS.search_managers.name, TOOLS.get_manager_schema.name, TOOLS.query.name)
MAX_FIELD_HINTED = 2  # extra schemas fetched only because the question names one of their fields
MAX_LISTED_WORDS = 12  # words an answer quotes back when nothing matched


@dataclass(slots=True)
class Step:
    """What one response does: tool calls (name, args), or a final text."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    text: str = ""


class Planner(QuestionReader):
    """Decides one step of one turn. Stateless: everything is recomputed from the turn."""

    def __init__(self, turn: Turn, offered: frozenset[str], *, answering: bool = False) -> None:
        super().__init__(turn.question)
        self.turn = turn
        self.offered = offered
        self.answering = answering  # a planned turn's synthesis: the turn's results, no tools

    def step(self) -> Step:
        """The next response of this turn (an answer says when the question was cut)."""
        step = self._step()
        if self.cut and not step.calls:
            step.text = f"{LONG_QUESTION_NOTE} {step.text}"
        return step

    def _step(self) -> Step:
        if not self.question:
            return Step(text="Ask me a question about the project's data.")
        if write := WRITE_REQUEST.search(self.question):
            return Step(text=write_refusal(self.question, write.start()))
        if OPINION_QUESTION.search(self.question):
            return Step(text=OPINION_REFUSAL)
        missing = [name for name in REQUIRED_TOOLS if name not in self.offered]
        if missing:
            return Step(
                text="I can't look this up: the offline assistant needs the tools "
                + ", ".join(missing)
                + ", which are not available here."
            )
        search = self.turn.rounds.get("search")
        final = self.turn.rounds.get("final")
        if search is None and self.answering and final is not None:
            return Step(text=query_answer(final[-1]))
        if search is None:
            return Step(calls=[(TOOLS.search_managers.name, {"query": self.question})])
        if not search[0].ok:
            return Step(
                text=f"I could not search the project's data types: {search[0].error_message}"
            )
        listed = search[0].result if isinstance(search[0].result, list) else []
        hits = [hit for hit in listed if isinstance(hit, dict) and hit.get("manager")]
        row, others = self._choose(hits)
        if row is None:
            return Step(text=self._no_match_text())
        schema_round = self.turn.rounds.get("schema")
        if schema_round is None:
            return Step(
                calls=[
                    (TOOLS.get_manager_schema.name, {"manager": name}) for name in [row, *others]
                ]
            )
        schemas = {
            str(call.args.get("manager")): call.result
            for call in schema_round
            if call.ok and isinstance(call.result, dict)
        }
        if row not in schemas:
            failed = next((c for c in schema_round if c.args.get("manager") == row), None)
            reason = failed.error_message if failed is not None else "no schema came back"
            return Step(text=f"I could not read the schema of {row}: {reason}")
        return self._after_schemas(row, [name for name in others if name in schemas], schemas, hits)

    # -- choosing managers -----------------------------------------------------------------------

    def _choose(self, hits: list[dict[str, Any]]) -> tuple[str | None, list[str]]:
        """The row manager and the other managers whose schemas help read the question."""
        known: list[str] = []
        for hit in hits:
            known.append(str(hit["manager"]))
            relations = hit.get("relations")
            if isinstance(relations, dict):
                known.extend(str(target) for target in relations.values())
        known = list(dict.fromkeys(known))
        named = self.named_in_order(known)
        row: str | None = named[0] if named else None
        previous = self.turn.previous
        referring = any(token.lower in REFERENCE_WORDS for token in self.tokens)
        if row is None and previous is not None and previous[0] and (referring or not hits):
            row = previous[0]
        if row is None and hits:
            row = str(hits[0]["manager"])
        if row is None:
            return None, []
        others = [name for name in named if name != row]
        # Hits with a field the question names and the row manager lacks ("hazardous" parts):
        # their schemas say how to filter on it. A chart's own words name no field ("number of").
        charted = asks_for_chart(self.question)
        skipped = chart_words(self.tokens) if charted else set()
        words = {token.base for index, token in enumerate(self.tokens) if index not in skipped}
        summaries = {str(hit["manager"]): hit for hit in hits}
        own = set(summaries[row].get("fields") or ()) if row in summaries else set()
        extra = 0
        for name, hit in summaries.items():
            if name == row or name in others or extra >= MAX_FIELD_HINTED:
                continue
            plain = [f for f in hit.get("fields") or () if isinstance(f, str) and f not in own]
            for field_name in plain:
                forms = word_forms(field_name)
                if field_name in ("id", "name", "...") or not forms:
                    continue
                if all(word in words for word in forms[0]):
                    others.append(name)
                    extra += 1
                    break
        if charted:
            row_hit = summaries.get(row)
            others = [name for name in others if not self._grouped_by(name, row_hit)]
        return row, others

    def _grouped_by(self, name: str, row_hit: Mapping[str, Any] | None) -> bool:
        """Whether a chart question names the manager ``name`` only as what it groups by, through
        the row manager's to-one relation of that name ("by material"): the query reads it
        through the relation, so its schema is not fetched (a chart costs four calls)."""
        relations = row_hit.get("relations") if row_hit is not None else None
        if not isinstance(relations, Mapping):
            return False
        fields = [f for f in (row_hit or {}).get("fields") or () if isinstance(f, str)]
        words = word_forms(name)
        if not any(
            target == name and word_forms(relation) == words and is_to_one(relation, None, fields)
            for relation, target in relations.items()
        ):
            return False
        starts = {start for _, start in group_starts(self.tokens)}
        spans = self.manager_spans(name)
        return bool(spans) and all(start in starts for start, _ in spans)

    def _content_words(self) -> list[str]:
        return [
            token.text
            for token in self.tokens
            if token.lower not in STOPWORDS and not is_number(token.text)
        ]

    def _no_match_text(self) -> str:
        words = [f'"{clip(word, 40)}"' for word in self._content_words()]
        if len(words) > MAX_LISTED_WORDS:
            words[MAX_LISTED_WORDS:] = ["…"]
        looked = ", ".join(words) if words else "any data words"
        return (
            f"I could not find a data type in this project that matches your question (I looked "
            f"for {looked}). I can only answer questions about the project's records, such as "
            f"which rows match a value or how many there are."
        )

    # -- after the schemas -----------------------------------------------------------------------

    def _after_schemas(
        self,
        row: str,
        others: list[str],
        schemas: dict[str, dict[str, Any]],
        hits: list[dict[str, Any]],
    ) -> Step:
        known = {str(hit["manager"]): list(hit.get("fields") or ()) for hit in hits}
        known.update({name: list(schema_fields(schema)) for name, schema in schemas.items()})
        reading = self.read(row, others, schemas, known)
        if reading.problem is not None:
            return Step(text=reading.problem)
        probes = value_probes(reading.phrases, row, others, schemas, hits)
        targets = list(
            dict.fromkeys(
                [c.manager for c in reading.conditions if c.manager != row]
                + [p.manager for p in probes if p.manager != row]
            )
        )
        locate = self.turn.rounds.get("locate")
        if locate is None and (probes or targets):
            calls: list[tuple[str, dict[str, Any]]] = [(TOOLS.query.name, p.args()) for p in probes]
            if TOOLS.find_path.name in self.offered:
                calls.extend(
                    (TOOLS.find_path.name, {"from_manager": row, "to_manager": target})
                    for target in targets
                )
            if calls:
                return Step(calls=calls)
        paths = relation_paths(row, schemas[row], locate or [])
        filters, problem = build_filters(
            row, reading, locate or [], paths, self.turn.previous, self.tokens
        )
        if problem is not None:
            return Step(text=problem)
        final = self.turn.rounds.get("final")
        label = label_field(schemas[row])
        fields: list[Any] = [label, *(name for name in reading.shown if name != label)]
        # The rows show what a chart question groups by even where no chart can be drawn.
        chart_asked = asks_for_chart(self.question)
        charting = chart_asked and CHART.name in self.offered
        if chart_asked:
            extra = chart_fields(ChartAsk.read(self.question), schemas[row], reading.group)
            fields += [name for name in extra if name not in fields]
        if final is None:
            args = reading.query_args(row, fields, filters, chart=bool(charting))
            return Step(calls=[(TOOLS.query.name, args)])
        outcome = final[0]
        if not outcome.ok or not isinstance(outcome.result, dict):
            return Step(text=f"The query on {row} failed: {outcome.error_message}")
        shown = [name for name in fields[1:] if isinstance(name, str)]
        text = answer_text(row, outcome.result, filters, label, shown, reading)
        if charting:
            drawn = self.turn.rounds.get("chart")
            if drawn is not None:
                return Step(text=f"{text} {chart_sentence(drawn[0], outcome)}")
            chart = chart_args(self.question, self.tokens, outcome.result, reading.group)
            if chart is not None:
                return Step(calls=[(CHART.name, chart)])
        return Step(text=text)
