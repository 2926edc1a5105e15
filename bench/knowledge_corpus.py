"""Knowledge for bench/knowledge.py: realistic verified queries, definitions and notes generated
over the inventory demo's vocabulary, and the questions recall is timed on.

The demo's own words (its managers, materials, suppliers, countries, parts, projects and
statuses, read from the running demo) are few and appear in many entries, as a real project's
manager and field names do; the words that tell entries apart are the teams that wrote them,
codenames made of syllables (one team per ~15 entries, so a bigger store has more distinct
words, as a bigger organisation has), and numbers. Each entry keeps the slots it was made of, so
a question can be a *paraphrase* of it (another template, the same slots) rather than its text.

Entries: half verified queries (15% personal), 30% definitions (shared), 20% notes (personal);
90% active, 7% suggested, 3% stale; personal entries belong to 50 other people and the reader
(``READER``), so the scoping in SQL has rows to exclude. Questions: paraphrases of the reader's
visible active entries ("specific"), the demo's common words alone, which match thousands of
entries and few well ("broad"), and questions about something else entirely ("unrelated").
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from gmchat_nb.core.knowledge.entries import content_hash
from gmchat_nb.core.project.project import Project
from gmchat_nb.core.store import KnowledgeRecord

__all__ = [
    "READER",
    "Corpus",
    "Question",
    "Vocabulary",
    "batches",
    "generate",
    "questions",
    "vocabulary",
]

READER: Final = "alice"
OTHERS: Final = tuple(f"user{n:02d}" for n in range(50))
ENTRIES_PER_TEAM: Final = 15
# syllables of the teams' codenames (Karvo, Delunt, ...): words no dictionary has
_ONSETS: Final = ("b", "br", "d", "dr", "f", "g", "gr", "k", "kl", "l", "m", "n", "p", "pr", "r",
                  "s", "st", "t", "tr", "v", "z")  # fmt: skip
_VOWELS: Final = ("a", "e", "i", "o", "u", "ai", "ei", "ou")
_CODAS: Final = ("x", "n", "r", "s", "l", "nt", "rk", "sk", "nd", "lm")
_ENDINGS: Final = ("a", "o", "i", "is", "us", "en", "ar", "or")


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """The inventory demo's words, read from the demo itself."""

    materials: list[str]
    suppliers: list[str]
    countries: list[str]
    parts: list[str]
    projects: list[str]
    statuses: list[str]


def vocabulary(project: Project) -> Vocabulary:
    """Read the words from the running demo (its rows, through the query tool)."""

    async def read(manager: str, *fields: str) -> list[dict[str, Any]]:
        outcome = await project.query(manager=manager, fields=list(fields), limit=200)
        return list(outcome.to_result()["data"])

    async def everything() -> Vocabulary:
        suppliers = await read("Supplier", "name", "country")
        projects = await read("Project", "name", "status")
        return Vocabulary(
            materials=[row["name"] for row in await read("Material", "name")],
            suppliers=[row["name"] for row in suppliers],
            countries=sorted({row["country"] for row in suppliers}),
            parts=[row["name"] for row in await read("Part", "name")],
            projects=[row["name"] for row in projects],
            statuses=sorted({row["status"] for row in projects}),
        )

    return asyncio.run(everything())


def _codenames(count: int, rng: random.Random) -> list[str]:
    names: set[str] = set()
    while len(names) < count:
        word = rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
        word += rng.choice(_ENDINGS) if rng.random() < 0.6 else ""
        names.add(word.capitalize())
    return sorted(names)


Slots = dict[str, Any]
_STOCK: Final[list[Any]] = ["name", "quantity"]
_ORDERS: Final[list[Any]] = ["number", "orderDate", "quantity"]


def _query(manager: str, fields: list[Any], **filters: Any) -> list[dict[str, Any]]:
    """A verified query's calls: one ``query``."""
    arguments = {"manager": manager, "fields": fields, "filters": filters}
    return [{"tool": "query", "arguments": arguments}]


# (name, question paraphrases, the calls) per verified query template; {team} etc. are slots
_VERIFIED: Final[list[tuple[str, list[str], Callable[[Slots], list[dict[str, Any]]]]]] = [
    (
        "{team} {material} parts",
        [
            "Which parts are made of {material} for the {team} team?",
            "{team} team: what {material} parts do we stock?",
            "list the {material} components {team} uses, with quantity on hand",
        ],
        lambda s: _query("Part", [*_STOCK, {"material": ["name"]}], material__name=s["material"]),
    ),
    (
        "{team} suppliers in {country}",
        [
            "Which suppliers based in {country} does {team} buy from?",
            "{team}'s vendors located in {country}",
            "suppliers from {country} that the {team} group works with",
        ],
        lambda s: _query("Supplier", ["name", "country"], country=s["country"]),
    ),
    (
        "{team} parts from {supplier}",
        [
            "Which parts does {team} buy from {supplier}?",
            "parts supplied by {supplier} for the {team} team",
            "what do we source from {supplier} for {team}, and how many are in stock",
        ],
        lambda s: _query("Part", [*_STOCK, {"supplier": ["name"]}], supplier__name=s["supplier"]),
    ),
    (
        "{team} {status} projects",
        [
            "Which {status} projects does the {team} team run?",
            "{team}: projects whose status is {status}, with start dates",
            "list {team}'s {status} engineering projects",
        ],
        lambda s: _query("Project", ["name", "startDate"], status=s["status"]),
    ),
    (
        "{team} urgent orders over {number}",
        [
            "Which urgent purchase orders above {number} units did {team} place?",
            "{team} rush orders larger than {number} units",
            "urgent orders of more than {number} pieces raised by {team}",
        ],
        lambda s: _query("PurchaseOrder", _ORDERS, urgent=True, quantity__gt=s["number"]),
    ),
    (
        "{team} low stock under {number}",
        [
            "Which parts have fewer than {number} units in stock for {team}?",
            "{team}: parts running low, under {number} on hand",
            "components {team} should reorder because stock is below {number}",
        ],
        lambda s: _query("Part", _STOCK, quantity__lt=s["number"]),
    ),
    (
        "{team} parts of {project}",
        [
            "Which parts does the {project} project use for {team}?",
            "bill of materials of {project} as {team} tracks it",
            "{team}: the components in project {project} with their quantities",
        ],
        lambda s: _query("Project", ["name", {"parts": _STOCK}], name=s["project"]),
    ),
    (
        "{team} orders of {part}",
        [
            "Which purchase orders of {part} did {team} place?",
            "How often did the {team} team order {part}?",
            "{team} order history for {part}, dates and quantities",
        ],
        lambda s: _query("PurchaseOrder", _ORDERS, part__name=s["part"]),
    ),
]
_DEFINITIONS: Final = [
    ("{team} active project", "a project of the {team} team whose status is active or planned",
     "What does {team} mean by an active project?"),
    ("{team} critical part", "a part with fewer than {number} units in stock that {project} needs",
     "what counts as a critical part for {team}"),
    ("{team} preferred supplier", "a supplier in {country} that {team} buys {material} from",
     "Which supplier is preferred by {team}?"),
    ("{team} rush order", "an urgent purchase order of more than {number} units of {part}",
     "define a rush order for the {team} team"),
    ("{team} revenue", "revenue of {team} excludes tax and counts {material} parts at unit price",
     "How does {team} compute revenue?"),
]  # fmt: skip
_NOTES: Final = [
    ("amounts in EUR when I ask about {team}", "show {team} amounts in euros"),
    ("I mean the order date, not the delivery date, for {team} reports",
     "{team} reports by order date please"),
    ("round {material} prices to two decimals in {team} summaries",
     "how precise should {team} {material} prices be"),
    ("when I say {project} I mean the {team} phase of it", "the {team} phase of {project}"),
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Question:
    """A question recall is timed on; ``target``: the entry it paraphrases (specific ones)."""

    kind: str  # specific, broad or unrelated
    text: str
    target: str | None = None


@dataclass(slots=True)
class Corpus:
    """Generated entries (each with the question paraphrasing it, for the reader's visible
    active ones) in the order they are stored."""

    records: list[KnowledgeRecord]
    paraphrases: dict[str, str]  # entry id -> a question it answers, in other words


def generate(
    project_key: str, vocab: Vocabulary, count: int, *, reader: str = READER, seed: int = 7
) -> Corpus:
    """``count`` distinct entries of ``project_key`` (``reader``: the person recall is timed
    for), deterministic for a seed."""
    rng = random.Random(seed)
    teams = _codenames(max(20, count // ENTRIES_PER_TEAM), rng)
    records: list[KnowledgeRecord] = []
    paraphrases: dict[str, str] = {}
    seen: set[str] = set()
    clock = 1_750_000_000.0
    while len(records) < count:
        slots: Slots = {
            "team": rng.choice(teams),
            "material": rng.choice(vocab.materials),
            "supplier": rng.choice(vocab.suppliers),
            "country": rng.choice(vocab.countries),
            "part": rng.choice(vocab.parts),
            "project": rng.choice(vocab.projects),
            "status": rng.choice(vocab.statuses),
            "number": rng.choice((5, 10, 20, 25, 50, 100, 200, 250, 500, 1000)),
        }
        roll = rng.random()
        calls: list[dict[str, Any]] = []
        if roll < 0.5:
            name, asked, build = rng.choice(_VERIFIED)
            order = rng.sample(range(len(asked)), 2)
            kind, body, other = "verified_query", asked[order[0]], asked[order[1]]
            calls = build(slots)
            scope = "personal" if rng.random() < 0.15 else "shared"
        elif roll < 0.8:
            kind, scope = "definition", "shared"
            name, body, other = rng.choice(_DEFINITIONS)
        else:
            kind, scope = "note", "personal"
            body, other = rng.choice(_NOTES)
            name = body
        name, body, other = (text.format(**slots) for text in (name, body, other))
        name = name[:60] if kind == "note" else name
        digest = content_hash(kind, name, body, calls)
        if digest in seen:
            continue
        seen.add(digest)
        if scope == "personal":  # one personal entry in 20 is the reader's
            owner = reader if rng.random() < 0.05 else rng.choice(OTHERS)
        else:
            owner = rng.choice((reader, *OTHERS))
        status = rng.choices(("active", "suggested", "stale"), (90, 7, 3))[0]
        clock += 1.0
        record = KnowledgeRecord(
            id=f"k-{uuid.UUID(int=rng.getrandbits(128)).hex[:16]}",
            project=project_key,
            owner=owner,
            kind=kind,
            scope=scope,
            status=status,
            name=name,
            body=body,
            calls=calls,
            content_hash=digest,
            created_by=owner,
            created_at=clock,
            updated_at=clock,
            verified_by=owner if kind == "verified_query" else None,
            verified_at=clock if kind == "verified_query" else None,
            stale_reason="Unknown field" if status == "stale" else None,
        )
        records.append(record)
        if status == "active" and (scope == "shared" or record.owner == reader):
            paraphrases[record.id] = other
    return Corpus(records, paraphrases)


BROAD: Final = [
    "How many parts are in stock?",
    "Which suppliers do we have?",
    "List the purchase orders",
    "Show the projects and their status",
    "What does each part cost per unit?",
    "Which materials are our parts made of?",
    "urgent orders",
    "parts and suppliers by country",
]
UNRELATED: Final = [
    "What's the weather forecast for Lisbon tomorrow?",
    "Draft a polite email declining the invitation",
    "Who won the football match last night?",
    "Translate good morning into French",
    "Summarise the plot of Hamlet",
    "How do I reset my laptop password?",
    "Recommend a vegetarian recipe for dinner",
    "Which time zone is Auckland in?",
    "Explain photosynthesis to a child",
    "Book a meeting room for Friday afternoon",
]


def questions(corpus: Corpus, count: int, *, seed: int = 11) -> list[Question]:
    """``count`` questions: half specific (paraphrases), a fifth broad, the rest unrelated."""
    rng = random.Random(seed)
    targets = sorted(corpus.paraphrases)
    asked: list[Question] = []
    for number in range(count):
        share = number % 10
        if share < 5 and targets:
            target = rng.choice(targets)
            asked.append(Question("specific", corpus.paraphrases[target], target))
        elif share < 7:
            asked.append(Question("broad", BROAD[number % len(BROAD)]))
        else:
            asked.append(Question("unrelated", UNRELATED[number % len(UNRELATED)]))
    return asked


def batches(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
