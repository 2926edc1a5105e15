"""Recall before a turn: the knowledge relevant to a question, found by words and by meaning.

Two searches, each with its own minimum, so that a question with nothing relevant recalls
nothing (reciprocal rank fusion's scores sit in a narrow band whatever the fit, so a threshold
on them would pass everything or nothing):

- **keywords**: the question's words (:func:`~.terms.search_terms`, never its raw text) against
  the full-text index, each hit kept when it covers at least half the question's words (or two
  of them);
- **meaning** (``hybrid``, with the ``[knowledge]`` extra): the question's vector against the
  entries', each hit kept at a cosine of at least :data:`MIN_COSINE`.

The survivors are fused by reciprocal rank (k = 60), cut to :data:`MAX_ITEMS` entries and
:data:`MAX_CHARACTERS` characters, and handed to the model as data, in the envelope tool results
use (:mod:`gmchat_nb.core.guards.recalled`). A recalled verified query's query calls
become the turn's reference calls, so an answer that re-runs it is marked trusted.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Final

from ..guards.recalled import RECALL_MARK, RECALL_TOOL, recall_message, recall_text, recalled_in
from ..project.project import Project
from ..project.tools import TOOLS
from ..providers.base import Message
from ..store import KnowledgeRecord
from ..toolcalls import ReferenceCall
from .book import KnowledgeBook
from .checking import calls_problem
from .terms import overlap, search_terms

__all__ = [
    "MODES",
    "RECALL_MARK",
    "RECALL_TOOL",
    "Recalled",
    "recall",
    "recall_message",
    "recalled_in",
]

MODES: Final = ("off", "keyword", "hybrid")
MAX_ITEMS: Final = 5
MAX_CHARACTERS: Final = 8000  # an entry at the largest texts a save accepts fits, with its calls
MIN_OVERLAP: Final = 0.5
MIN_COSINE: Final = 0.55
CANDIDATES: Final = 20
RRF_K: Final = 60


@dataclass(frozen=True, slots=True)
class Recalled:
    """What one recall found, best first, with each entry's fused score."""

    entries: list[tuple[KnowledgeRecord, float]] = field(default_factory=list)

    @property
    def items(self) -> list[dict[str, Any]]:
        """The ``recall`` event's items."""
        return [
            {"kind": record.kind, "id": record.id, "name": record.name, "score": round(score, 4)}
            for record, score in self.entries
        ]

    @property
    def verified_queries(self) -> list[KnowledgeRecord]:
        return [record for record, _ in self.entries if record.kind == "verified_query"]

    @property
    def references(self) -> tuple[ReferenceCall, ...]:
        """Each recalled verified query's ``query`` calls, numbered by part."""
        calls: list[ReferenceCall] = []
        for record in self.verified_queries:
            queries = [c for c in record.calls if c.get("tool") == TOOLS.query.name]
            for part, call in enumerate(queries):
                calls.append(
                    ReferenceCall(record.id, TOOLS.query.name, call["arguments"], part=part)
                )
        return tuple(calls)

    def trusted(
        self,
        matched_parts: AbstractSet[tuple[str, int]],
        exact_parts: AbstractSet[tuple[str, int]] = frozenset(),
    ) -> dict[str, str] | None:
        """``{"id", "name"}`` of the recalled verified query the turn re-ran -- every query call
        of it, with the same or other filter values -- else ``None``. Of several, one re-run with
        its very arguments comes first, then the best recalled."""
        for parts in (exact_parts, matched_parts):
            for record in self.verified_queries:
                count = sum(1 for c in record.calls if c.get("tool") == TOOLS.query.name)
                if count and all((record.id, part) in parts for part in range(count)):
                    return {"id": record.id, "name": record.name}
        return None

    def context(self) -> Message | None:
        """The system message that hands the recalled entries to the model, or ``None``."""
        if not self.entries:
            return None
        data: dict[str, list[dict[str, Any]]] = {}
        for record, _ in self.entries:
            if record.kind == "verified_query":
                data.setdefault("verified_queries", []).append(
                    {
                        "id": record.id,
                        "name": record.name,
                        "question": record.body,
                        "calls": record.calls,
                    }
                )
            elif record.kind == "definition":
                data.setdefault("definitions", []).append(
                    {"term": record.name, "text": record.body}
                )
            else:
                data.setdefault("notes", []).append({"text": record.body})
        return Message("system", recall_text(data))


def recall(book: KnowledgeBook, question: str, mode: str = "hybrid") -> Recalled | None:
    """The entries relevant to ``question`` (``mode``: :data:`MODES`; ``hybrid`` without the
    embedding model is ``keyword``); ``None`` when there is nothing to recall from: recall is
    off, or the project has no knowledge at all (a turn then looks as it did before knowledge
    existed: no ``recall`` event, no search, no embedding)."""
    if mode == "off" or book.store.knowledge_version(book.project_key)[0] == 0:
        return None
    if not question.strip():
        return Recalled()
    terms = search_terms(question)
    rankings: list[list[str]] = []
    found = book.store.search_knowledge_words(book.project_key, book.owner, terms, limit=CANDIDATES)
    records = {
        record.id: record
        for record in book.store.knowledge_entries(
            book.project_key, book.owner, ids=[entry_id for entry_id, _ in found]
        )
    }
    keyword = [
        entry_id
        for entry_id, _ in found
        if entry_id in records and _relevant(terms, records[entry_id])
    ]
    rankings.append(keyword)
    if mode == "hybrid" and book.vectors is not None:
        similar = book.vector_search(question, limit=CANDIDATES, minimum=MIN_COSINE)
        missing = [entry_id for entry_id, _ in similar if entry_id not in records]
        if missing:
            for record in book.store.knowledge_entries(book.project_key, book.owner, ids=missing):
                records[record.id] = record
        rankings.append([entry_id for entry_id, _ in similar if entry_id in records])
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, entry_id in enumerate(ranking, 1):
            fused[entry_id] = fused.get(entry_id, 0.0) + 1.0 / (RRF_K + rank)
    entries: list[tuple[KnowledgeRecord, float]] = []
    spent = 0
    for entry_id, score in sorted(fused.items(), key=lambda item: -item[1]):
        record = records[entry_id]
        if record.status != "active":
            continue
        if record.kind == "verified_query" and not _compiles(book.project, record.calls):
            continue  # this session's project does not expose what it reads (a hidden manager)
        size = len(record.name) + len(record.body) + len(json.dumps(record.calls))
        if spent + size > MAX_CHARACTERS:
            continue  # the budget holds whatever one entry weighs
        entries.append((record, score))
        spent += size
        if len(entries) == MAX_ITEMS:
            break
    return Recalled(entries)


# whether a project compiles a verified query's calls, by their JSON: a project's schema is
# fixed, and compiling each recalled one again cost a tenth of a recall's CPU
_COMPILED: weakref.WeakKeyDictionary[Project, dict[str, bool]] = weakref.WeakKeyDictionary()


def _compiles(project: Project, calls: list[dict[str, Any]]) -> bool:
    known = _COMPILED.setdefault(project, {})
    key = json.dumps(calls, sort_keys=True)
    if key not in known:
        if len(known) >= 4096:
            known.clear()
        known[key] = calls_problem(project, calls) is None
    return known[key]


def _relevant(terms: Sequence[str], record: KnowledgeRecord) -> bool:
    share = overlap(terms, f"{record.name}\n{record.body}")
    return share >= MIN_OVERLAP or share * len(terms) >= 2
