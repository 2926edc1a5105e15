"""Who decided a change, where and when, kept past ``cleanup``: on SQLite and PostgreSQL, a
notebook's ``Chat`` confirms one change and rejects another, the terminal decides a third; each
claim leaves a ``change_records`` row with the decider, where they decided and how the change
ended, and a cleanup that deletes the conversations' confirmations, messages and events leaves
those rows."""

from __future__ import annotations

from typing import Any

from gmchat_nb import Chat
from gmchat_nb.core.events import ConfirmMutation
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.store import ChatStore

CREATE = {"mutation": "createPart", "input": {"name": "Spring", "quantity": 4}}


def asks_twice() -> ScriptedProvider:
    """Two turns, each asking for one confirm-listed change and then answering."""
    rounds: list[dict[str, Any]] = []
    for number in (1, 2):
        rounds += [
            {"tool_calls": [{"name": "mutate", "id": f"call-{number}", "args": CREATE}]},
            {"text": "Done."},
        ]
    return ScriptedProvider({"rounds": rounds})


async def decide_in_turn(chat: Chat, question: str, decision: bool, via: str) -> None:
    async for event in chat.stream(question):
        if isinstance(event, ConfirmMutation):
            assert chat.confirm(event.id, decision, via=via)


async def test_each_decision_is_recorded_with_who_where_and_how_it_ended(
    store_location: str,
) -> None:
    chat = Chat(
        provider=asks_twice(),
        store=store_location,
        allowed_mutations=["createPart"],
        confirm_mutations=["createPart"],
    )
    try:
        await decide_in_turn(chat, "Add a part Spring, quantity 4.", True, "kernel")
        await decide_in_turn(chat, "Add the part Spring with quantity 4.", False, "terminal")
        conversation_id = chat.conversation_id
        actor = chat.actor.id
    finally:
        await chat.aclose()
    assert conversation_id is not None
    with ChatStore(store_location) as store:
        records = store.change_records(conversation_id)
        assert [(r.confirmation_id, r.decided_via, r.state) for r in records] == [
            ("call-1", "kernel", "executed"),
            ("call-2", "terminal", "rejected"),
        ]
        for record in records:
            assert record.decided_by == actor and record.actor_id == actor
            assert record.mutation == "createPart" and record.input == CREATE["input"]
            assert record.turn_id and record.resolved_at is not None
            assert record.resolved_at >= record.decided_at
        (confirmed,) = [c for c in [store.confirmation(conversation_id, "call-1")] if c]
        assert (confirmed.decided_by, confirmed.decided_via) == (actor, "kernel")

        removed = store.cleanup(1, now=records[-1].decided_at + 10 * 3600)
        assert removed["confirmations"] == 2
        assert store.confirmation(conversation_id, "call-1") is None
        assert store.conversation(conversation_id) is None
        kept = store.change_records(conversation_id)
        assert kept == records  # past cleanup: what was changed, by whose decision, stays known


def test_a_claim_without_a_decider_says_so_and_an_unknown_place_is_not_stored(
    store_location: str,
) -> None:
    from gmchat_nb.core.store import ConfirmationRecord

    with ChatStore(store_location) as store:
        conversation = store.create_conversation("alice")
        record = ConfirmationRecord(
            conversation_id=conversation.id,
            id="c-1",
            actor_id="alice",
            mutation="createPart",
            input={"name": "x\u202e"},
            state="pending",
            created_at=1.0,
            expires_at=10**10,
            resolved_at=None,
            turn_state={},
        )
        store.add_confirmation(record)
        claimed = store.claim_confirmation(
            conversation.id, "c-1", "alice", now=2.0, decided_via="carrier pigeon"
        )
        assert claimed is not None and claimed.decided_via == "unknown"
        assert claimed.decided_by == "alice" and claimed.decided_at == 2.0
        assert store.claim_confirmation(conversation.id, "c-1", "alice", now=3.0) is None
        (change,) = store.change_records(conversation.id)
        assert change.state == "claimed" and change.input == {"name": "x\u202e"}
        assert store.finish_confirmation(conversation.id, "c-1", "failed", now=4.0)
        (change,) = store.change_records(conversation.id)
        assert (change.state, change.resolved_at) == ("failed", 4.0)
