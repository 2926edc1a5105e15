"""Forgetting is complete: a removed entry leaves the table, the full-text index and the vectors
together, so neither search (nor a recall, keyword or hybrid) finds it again."""

from __future__ import annotations

from pathlib import Path

import pytest

from gmchat_nb.core.knowledge import KnowledgeBook
from gmchat_nb.core.knowledge.terms import search_terms
from gmchat_nb.core.knowledge.vectors import embedder
from gmchat_nb.core.project import Project
from gmchat_nb.core.store import ChatStore

from .projects import book_of, query, recalled, recalled_ids

QUESTION = "Which parts are made of titanium?"


@pytest.fixture
def book(store: ChatStore, demo: Project) -> KnowledgeBook:
    assert embedder() is not None, "the [knowledge] extra (wordllama) is part of the dev setup"
    return book_of(store, demo, "alice", vectors="auto")


def found(book: KnowledgeBook, text: str) -> tuple[set[str], set[str]]:
    """The ids each search finds for ``text``: by words, by meaning."""
    words = book.store.search_knowledge_words(
        book.project_key, book.owner, search_terms(text), limit=20
    )
    meaning = book.vector_search(text, limit=20, minimum=0.3)
    return {entry_id for entry_id, _ in words}, {entry_id for entry_id, _ in meaning}


def test_a_removed_entry_is_found_by_neither_search(book: KnowledgeBook) -> None:
    entry = book.add_verified_query("titanium parts", QUESTION, [query(material__name="Titanium")])
    other = book.add_definition("active project", "a project whose status is active or planned")
    assert found(book, QUESTION) == ({entry.id}, {entry.id})
    for mode in ("keyword", "hybrid"):
        assert recalled_ids(book, QUESTION, mode) == [entry.id]

    book.remove(entry.id)

    assert found(book, QUESTION) == (set(), set())
    for mode in ("keyword", "hybrid"):
        assert recalled(book, QUESTION, mode) == []
    assert [r.id for r in book.list()] == [other.id]  # the rest stays
    assert found(book, "active projects") == ({other.id}, {other.id})


def test_a_replaced_entry_is_found_by_its_new_text_only(book: KnowledgeBook) -> None:
    # same count of entries before and after: the vectors cached in the process must notice
    entry = book.add_definition("titanium part", "a part whose material is Titanium")
    book.remove(entry.id)
    replacement = book.add_definition("cobalt part", "a part whose material is Cobalt")
    assert found(book, "titanium") == (set(), set())
    assert found(book, "cobalt part") == ({replacement.id}, {replacement.id})


def test_an_edited_entry_is_found_by_its_new_words(book: KnowledgeBook) -> None:
    entry = book.add_definition("titanium part", "a part whose material is Titanium")
    book.update(entry.id, name="cobalt part", text="a part whose material is Cobalt")
    assert found(book, "titanium") == (set(), set())
    assert found(book, "cobalt part") == ({entry.id}, {entry.id})


def test_no_byte_of_a_removed_entry_stays_in_the_sqlite_file(tmp_path: Path, demo: Project) -> None:
    """Deleted text must not linger in freed pages or an unmerged full-text segment (embeddings
    and indexes can be read back): the SQLite file holds no byte of it once it is removed."""
    path = tmp_path / "chat.sqlite3"
    with ChatStore(str(path)) as store:
        book = book_of(store, demo, "alice", vectors="auto")
        for number in range(3):
            book.add_note(f"note {number} about suppliers " + "filler " * 40)
        secret = book.add_note("the secret word is xylophone " + "padding " * 60)
        book.add_definition("active project", "a project whose status is active or planned")
        assert secret.body.encode() in b"".join(f.read_bytes() for f in tmp_path.iterdir())
        book.remove(secret.id)
    files = list(tmp_path.iterdir())
    assert files and all(b"xylophon" not in f.read_bytes() for f in files)


def test_two_stores_in_one_process_never_mix_their_vectors(tmp_path: Path, demo: Project) -> None:
    """The process caches each reader's vectors: a second store with the same project, owner,
    count and clock must not be answered from the first one's."""
    found_in = []
    for name, text in (("one", "a part whose material is Titanium"), ("two", "an urgent order")):
        with ChatStore(str(tmp_path / f"{name}.sqlite3")) as store:
            book = book_of(store, demo, "alice", vectors="auto", clock=lambda: 1_000.0)
            entry = book.add_definition(name, text)
            hits = book.vector_search(text, limit=5, minimum=0.3)
            found_in.append(([entry_id for entry_id, _ in hits], entry.id))
    assert [hits for hits, _ in found_in] == [[entry_id] for _, entry_id in found_in]


def test_an_entry_active_again_is_found_by_meaning_again(book: KnowledgeBook) -> None:
    """A verified query marked stale (by a check against another schema) and active again (its
    schema is back) is searched by meaning again: its status change reaches the cached vectors."""
    entry = book.add_verified_query("titanium parts", QUESTION, [query(material__name="Titanium")])
    marked = book.store.update_knowledge(
        book.project_key, "alice", entry.id, may_share=True, changes={"status": "stale"}
    )
    assert marked and found(book, QUESTION) == (set(), set())
    assert book.check() == []  # it compiles against this schema: active again
    assert book.get(entry.id).status == "active"
    assert found(book, QUESTION) == ({entry.id}, {entry.id})
