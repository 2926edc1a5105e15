"""The version mark a process's cached vectors are checked against before every recall by meaning
(``ChatStore.knowledge_version``, one row per project kept by every write): it counts the
project's entries exactly, and a write through another store object -- another process, another
server of a hub -- reaches this one's cache, on both backends."""

from __future__ import annotations

from gmchat_nb.core.knowledge.vectors import embedder
from gmchat_nb.core.project import Project
from gmchat_nb.core.store import ChatStore

from .projects import PROJECT, book_of, query

QUESTION = "Which parts are made of titanium?"


def test_the_count_follows_every_write_and_the_version_rises(
    store: ChatStore, demo: Project
) -> None:
    alice, bob = book_of(store, demo, "alice"), book_of(store, demo, "bob")
    marks = [store.knowledge_version(PROJECT)]
    assert marks[0] == (0, 0)
    kept = alice.add_definition("active project", "a project whose status is active or planned")
    note = bob.add_note("amounts in EUR")
    alice.import_data({"notes": [{"text": "I mean the order date"}, {"text": "amounts in EUR"}]})
    marks.append(store.knowledge_version(PROJECT))
    assert marks[-1][0] == 4  # bob's note is his: alice's "amounts in EUR" is hers, stored too
    alice.import_data({"notes": [{"text": "I mean the order date"}]})  # skipped: no write
    assert store.knowledge_version(PROJECT) == marks[-1]
    alice.update(kept.id, text="a project whose status is active")
    marks.append(store.knowledge_version(PROJECT))
    bob.remove(note.id)
    marks.append(store.knowledge_version(PROJECT))
    assert alice.remove_mine() == 3
    marks.append(store.knowledge_version(PROJECT))
    assert [count for count, _ in marks] == [0, 4, 4, 3, 0]
    versions = [version for _, version in marks]
    assert versions == sorted(set(versions)), "every write raises the version"
    assert store.knowledge_version("another project") == (0, 0)


def test_a_write_through_another_store_reaches_the_cached_vectors(
    store_location: str, demo: Project
) -> None:
    assert embedder() is not None, "the [knowledge] extra (wordllama) is part of the dev setup"
    with ChatStore(store_location) as here, ChatStore(store_location) as there:
        reader = book_of(here, demo, "alice", vectors="auto")
        writer = book_of(there, demo, "alice", vectors="auto")
        first = writer.add_definition("cobalt part", "a part whose material is Cobalt")
        assert [i for i, _ in reader.vector_search("cobalt part", limit=5, minimum=0.3)] == [
            first.id
        ]
        entry = writer.add_verified_query(
            "titanium parts", QUESTION, [query(material__name="Titanium")]
        )
        hits = reader.vector_search(QUESTION, limit=5, minimum=0.5)
        assert [entry_id for entry_id, _ in hits] == [entry.id]  # the cache was rebuilt
        writer.update(entry.id, name="brass parts", text="Which parts are made of brass?")
        assert [i for i, _ in reader.vector_search("brass parts", limit=5, minimum=0.5)] == [
            entry.id
        ]
        writer.remove(entry.id)
        assert reader.vector_search("brass parts", limit=5, minimum=0.5) == []
