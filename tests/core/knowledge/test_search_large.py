"""Full-text search in a big SQLite index (over 2,000 entries) ranks in the index first and scopes
only the best matches (``KnowledgeRows._fts_search``): the answer must be the one a join of every
match would give, for every project and reader, including when most top matches belong to
another project or person (the path that falls back to joining them all)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from gmchat_nb.core.knowledge.entries import content_hash
from gmchat_nb.core.knowledge.terms import search_terms
from gmchat_nb.core.store import ChatStore, KnowledgeRecord

WORDS = [
    "parts",
    "steel",
    "titanium",
    "supplier",
    "sweden",
    "orders",
    "urgent",
    "stock",
    "project",
    "apollo",
]
# the whole join, ordered as the search orders ties: what the search must equal
EVERY_MATCH = (
    "SELECT k.id FROM knowledge_fts JOIN knowledge k ON k.seq = knowledge_fts.rowid "
    "WHERE knowledge_fts MATCH ? AND k.project = ? AND (k.scope = 'shared' OR k.owner = ?) "
    "AND k.status = 'active' ORDER BY bm25(knowledge_fts, 2.0, 1.0), k.seq LIMIT ?"
)


def entry(rng: random.Random, number: int, project: str) -> KnowledgeRecord:
    words = [*rng.sample(WORDS, rng.randint(1, 4)), f"code{rng.randint(0, 400)}"]
    body = " ".join(words)
    scope = rng.choice(("shared", "personal"))
    return KnowledgeRecord(
        id=f"k-{number}",
        project=project,
        owner=rng.choice(("alice", "bob", "carol")),
        kind="definition" if scope == "shared" else "note",
        scope=scope,
        status=rng.choice(("active", "active", "active", "suggested", "stale")),
        name=body[:40],
        body=body,
        content_hash=content_hash("definition", body[:40], body, [{"number": number}]),
        created_at=float(number),
        updated_at=float(number),
    )


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> ChatStore:
    """2,600 entries: most of one project, 40 of a small one, and personal ones of three people."""
    rng = random.Random(5)
    path = Path(tmp_path_factory.mktemp("knowledge")) / "chat.sqlite3"
    store = ChatStore(str(path))
    records = [entry(rng, n, "big") for n in range(2560)]
    records += [entry(rng, 10_000 + n, "small") for n in range(40)]
    rng.shuffle(records)
    assert not store.add_knowledge_many([(record, None) for record in records])
    return store


@pytest.mark.parametrize("project", ["big", "small", "none"])
@pytest.mark.parametrize("owner", ["alice", "bob", "dave"])
@pytest.mark.parametrize("limit", [3, 20])
def test_the_big_index_answers_as_joining_every_match_would(
    big_store: ChatStore, project: str, owner: str, limit: int
) -> None:
    questions = ["urgent orders", "titanium parts from sweden", "code7 stock", "apollo", "nothing"]
    questions += [" ".join(random.Random(n).sample(WORDS, 3)) + f" code{n}" for n in range(12)]
    for question in questions:
        terms = search_terms(question)
        match = " OR ".join(f'"{term}"' for term in terms)
        found = big_store.search_knowledge_words(project, owner, terms, limit=limit)
        expected = [row[0] for row in big_store._read(EVERY_MATCH, (match, project, owner, limit))]
        assert [entry_id for entry_id, _ in found] == expected, question
        assert all(score > 0 for _, score in found)  # higher is better: bm25 negated


def test_the_small_project_is_found_though_the_big_one_holds_the_best_matches(
    big_store: ChatStore,
) -> None:
    terms = search_terms("urgent orders")
    found = big_store.search_knowledge_words("small", "alice", terms, limit=40)
    assert found, "the small project has matching entries"
    visible = {
        record.id
        for record in big_store.knowledge_entries("small", "alice", statuses=["active"])
        if {"urgent", "orders"} & set(record.body.split())
    }
    assert {entry_id for entry_id, _ in found} == visible
