"""Two people on one store: neither sees, recalls, changes or deletes the other's personal
entries; shared entries are everyone's to read. On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from gmchat_nb.core.knowledge import KnowledgeBook, KnowledgeError
from gmchat_nb.core.project import Project
from gmchat_nb.core.store import ChatStore

from .projects import book_of, query, recalled, recalled_ids

TITANIUM = [query(material__name="Titanium")]


@pytest.fixture
def alice(store: ChatStore, demo: Project) -> KnowledgeBook:
    return book_of(store, demo, "alice", vectors="auto")


@pytest.fixture
def bob(store: ChatStore, demo: Project) -> KnowledgeBook:
    return book_of(store, demo, "bob", vectors="auto")


def test_a_personal_entry_is_its_owners_alone(alice: KnowledgeBook, bob: KnowledgeBook) -> None:
    note = alice.add_note("amounts in EUR for the titanium parts")
    mine = alice.add_verified_query(
        "my titanium parts", "Which parts are titanium?", TITANIUM, scope="personal"
    )
    shared = alice.add_definition("titanium part", "a part whose material is Titanium")

    assert [r.id for r in alice.list()] == [note.id, mine.id, shared.id]
    assert [r.id for r in bob.list()] == [shared.id]  # the shared one only
    for hidden in (note, mine):
        with pytest.raises(KnowledgeError) as error:
            bob.get(hidden.id)
        # the same answer as an id that never was: no existence leak
        assert error.value.code == "not_found"
        assert str(error.value) == f"no knowledge entry {hidden.id!r}"
    for mode in ("keyword", "hybrid"):
        asked = "Which titanium parts do we have, in EUR?"
        assert set(recalled_ids(alice, asked, mode)) >= {note.id, mine.id}
        assert set(recalled_ids(bob, asked, mode)) == {shared.id}
    # the vector search, asked for everything it holds, holds only what each may see
    assert {i for i, _ in bob.vector_search("titanium", limit=10, minimum=-1.0)} == {shared.id}
    assert {i for i, _ in alice.vector_search("titanium", limit=10, minimum=-1.0)} == {
        note.id,
        mine.id,
        shared.id,
    }
    assert "amounts in EUR" not in str(bob.export_data())


def test_nobody_changes_or_deletes_anothers_personal_entry(
    alice: KnowledgeBook, bob: KnowledgeBook
) -> None:
    note = alice.add_note("I mean the order date, not the delivery date")
    for attempt in (
        lambda: bob.remove(note.id),
        lambda: bob.update(note.id, text="I mean the delivery date"),
        lambda: bob.accept(note.id),
    ):
        with pytest.raises(KnowledgeError) as error:
            attempt()
        assert error.value.code == "not_found"
    # the store itself refuses it too, whatever a caller forgets
    assert not bob.store.remove_knowledge(bob.project_key, "bob", note.id, may_share=True)
    assert not bob.store.update_knowledge(
        bob.project_key, "bob", note.id, may_share=True, changes={"body": "changed"}
    )
    assert alice.get(note.id).body == "I mean the order date, not the delivery date"


def test_delete_all_mine_deletes_only_mine(alice: KnowledgeBook, bob: KnowledgeBook) -> None:
    alice_note = alice.add_note("amounts in EUR")
    alice_shared = alice.add_definition("active project", "status active or planned")
    bob_note = bob.add_note("amounts in USD")
    bob_query = bob.add_verified_query(
        "bob's titanium", "Which parts are titanium?", TITANIUM, scope="personal"
    )
    bob_shared = bob.add_definition("revenue", "excludes tax")

    assert bob.remove_mine() == 3
    assert [r.id for r in bob.list()] == [alice_shared.id]
    assert [r.id for r in alice.list()] == [alice_note.id, alice_shared.id]
    for gone in (bob_note, bob_query, bob_shared):
        with pytest.raises(KnowledgeError):
            alice.get(gone.id)
    assert bob.remove_mine() == 0
    assert [r.id for r in alice.list()] == [alice_note.id, alice_shared.id]


def test_without_permission_to_share_only_personal_entries_are_deleted(
    store: ChatStore, demo: Project, alice: KnowledgeBook
) -> None:
    shared = alice.add_definition("active project", "status active or planned")
    note = alice.add_note("amounts in EUR")
    limited = book_of(store, demo, "alice", may_share=False)
    with pytest.raises(KnowledgeError) as error:
        limited.remove(shared.id)
    assert error.value.code == "forbidden"
    assert limited.remove_mine() == 1
    assert [r.id for r in alice.list()] == [shared.id]
    with pytest.raises(KnowledgeError):
        alice.get(note.id)


def test_another_projects_knowledge_is_not_this_ones(store: ChatStore, demo: Project) -> None:
    here = book_of(store, demo, "alice")
    there = KnowledgeBook(store, demo, project_key="https://erp.example.com/graphql", owner="alice")
    entry = there.add_definition("active project", "status active or planned")
    assert here.list() == []
    with pytest.raises(KnowledgeError):
        here.get(entry.id)
    assert recalled(here, "Which active projects are there?", "keyword") == []
    assert here.remove_mine() == 0 and [r.id for r in there.list()] == [entry.id]
