"""ChatStore against real SQLite (in memory and in files under tmp_path) and a real PostgreSQL
server: the tests that take the ``store`` fixture run on both backends."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gmchat_nb.core.ratelimit import decide
from gmchat_nb.core.store import (
    SCHEMA_VERSION,
    Admission,
    ChatStore,
    ConfirmationRecord,
    StoreVersionError,
    TurnBusy,
    TurnConflict,
    TurnStart,
    UnknownConversation,
)
from gmchat_nb.core.store.database import StoreClosedError

T0 = 1_700_000_000.0
HOUR = 3600.0


@pytest.fixture
def store(store_location: str) -> Iterator[ChatStore]:
    with ChatStore(store_location) as chat_store:
        yield chat_store


def confirmation(
    conversation_id: str,
    confirmation_id: str = "tool-1",
    *,
    actor_id: str = "alice",
    created_at: float = T0,
    expires_at: float = T0 + 30,
    state: str = "pending",
) -> ConfirmationRecord:
    return ConfirmationRecord(
        conversation_id=conversation_id,
        id=confirmation_id,
        actor_id=actor_id,
        mutation="deletePart",
        input={"id": 6},
        state=state,
        created_at=created_at,
        expires_at=expires_at,
        resolved_at=None,
        turn_state={"mutations": 1, "messages": [{"role": "user", "content": "delete part 6"}]},
    )


# -- conversations ---------------------------------------------------------------------------


def test_a_new_conversation_is_empty_and_can_be_read_back(store: ChatStore) -> None:
    created = store.create_conversation("alice", "Parts", now=T0)

    assert len(created.id) == 32
    assert store.conversation(created.id) == created
    assert (created.title, created.created_at, created.updated_at) == ("Parts", T0, T0)
    assert (created.summary, created.summarized_through, created.message_count) == (None, None, 0)
    assert store.conversation("missing") is None


def test_conversations_list_only_the_actor_s_most_recently_updated_first(store: ChatStore) -> None:
    first = store.create_conversation("alice", "first", now=T0)
    second = store.create_conversation("alice", "second", now=T0 + 10)
    store.create_conversation("bob", "bob's", now=T0 + 20)
    store.append_message(first.id, "user", "hello again", now=T0 + 30)

    listed = store.conversations("alice")

    assert [item.id for item in listed] == [first.id, second.id]
    assert listed[0].updated_at == T0 + 30
    assert listed[0].message_count == 1
    assert store.conversations("nobody") == []


def test_rename_changes_the_title_and_refuses_an_unknown_id(store: ChatStore) -> None:
    created = store.create_conversation("alice")

    store.rename_conversation(created.id, "Suppliers in Berlin")

    renamed = store.conversation(created.id)
    assert renamed is not None and renamed.title == "Suppliers in Berlin"
    with pytest.raises(KeyError):
        store.rename_conversation("missing", "x")


def test_delete_conversation_removes_everything_it_owns(store: ChatStore) -> None:
    doomed = store.create_conversation("alice")
    kept = store.create_conversation("alice")
    for conversation_id in (doomed.id, kept.id):
        store.append_message(conversation_id, "user", "hi", turn_id="t1")
        store.append_event(conversation_id, "t1", 1, {"type": "text_chunk", "content": "hi"})
        store.add_confirmation(confirmation(conversation_id))

    assert store.delete_conversation(doomed.id) is True
    assert store.delete_conversation(doomed.id) is False

    assert store.conversation(doomed.id) is None
    assert store.messages(doomed.id) == []
    assert store.events(doomed.id) == []
    assert store.confirmation(doomed.id, "tool-1") is None
    assert len(store.messages(kept.id)) == 1
    assert len(store.events(kept.id)) == 1
    assert store.confirmation(kept.id, "tool-1") is not None


# -- messages --------------------------------------------------------------------------------


def test_messages_keep_structured_tool_calls_and_results(store: ChatStore) -> None:
    conversation = store.create_conversation("alice", now=T0)
    user = store.append_message(conversation.id, "user", "How many parts?", turn_id="t1", now=T0)
    call = {"id": "call-1", "name": "query", "args": {"manager": "Part", "fields": ["id"]}}
    assistant = store.append_message(
        conversation.id, "assistant", tool_calls=[call], turn_id="t1", now=T0 + 1
    )
    result = {"status": "ok", "items": [{"id": 1}, {"id": 2}], "total": 2}
    tool = store.append_message(
        conversation.id,
        "tool",
        tool_call_id="call-1",
        tool_name="query",
        tool_result=result,
        turn_id="t1",
        now=T0 + 2,
    )

    stored = store.messages(conversation.id)

    assert stored == [user, assistant, tool]
    assert stored[1].tool_calls == (call,)
    assert stored[1].content == ""
    assert stored[2].tool_result == result
    assert (stored[2].tool_call_id, stored[2].tool_name) == ("call-1", "query")
    assert stored[0].tool_result is None and stored[0].tool_calls == ()
    assert [message.turn_id for message in stored] == ["t1", "t1", "t1"]
    assert user.id < assistant.id < tool.id
    touched = store.conversation(conversation.id)
    assert touched is not None and touched.updated_at == T0 + 2 and touched.message_count == 3


def test_a_tool_call_without_args_is_stored_with_empty_args(store: ChatStore) -> None:
    conversation = store.create_conversation("alice")

    message = store.append_message(
        conversation.id, "assistant", tool_calls=[{"id": "c", "name": "find_path"}]
    )

    assert store.messages(conversation.id)[0].tool_calls == (
        {"id": "c", "name": "find_path", "args": {}},
    )
    assert message.tool_calls == ({"id": "c", "name": "find_path", "args": {}},)


def test_append_message_refuses_unknown_conversations_roles_and_nameless_calls(
    store: ChatStore,
) -> None:
    conversation = store.create_conversation("alice")

    with pytest.raises(KeyError):
        store.append_message("missing", "user", "hi")
    with pytest.raises(ValueError, match="role"):
        store.append_message(conversation.id, "robot", "hi")
    with pytest.raises(ValueError, match="id and a name"):
        store.append_message(conversation.id, "assistant", tool_calls=[{"args": {}}])
    assert store.messages(conversation.id) == []


def test_messages_after_an_id_return_only_later_ones(store: ChatStore) -> None:
    conversation = store.create_conversation("alice")
    ids = [store.append_message(conversation.id, "user", str(n)).id for n in range(4)]

    later = store.messages(conversation.id, after_id=ids[1])

    assert [message.content for message in later] == ["2", "3"]
    assert store.messages(conversation.id, after_id=ids[-1]) == []


def test_delete_messages_removes_a_failed_turn_only_in_its_conversation(store: ChatStore) -> None:
    conversation = store.create_conversation("alice")
    other = store.create_conversation("alice")
    kept = store.append_message(conversation.id, "user", "first", turn_id="t1")
    dangling = store.append_message(conversation.id, "user", "second", turn_id="t2")
    foreign = store.append_message(other.id, "user", "elsewhere")

    removed = store.delete_messages(conversation.id, [dangling.id, foreign.id])

    assert removed == 1
    assert store.messages(conversation.id) == [kept]
    assert store.messages(other.id) == [foreign]
    assert store.delete_messages(conversation.id, []) == 0


def test_summary_records_its_last_covered_message(store: ChatStore) -> None:
    conversation = store.create_conversation("alice")
    messages = [store.append_message(conversation.id, "user", str(n)) for n in range(3)]

    store.set_summary(conversation.id, "The user counted to two.", messages[1].id)

    summarized = store.conversation(conversation.id)
    assert summarized is not None
    assert summarized.summary == "The user counted to two."
    assert summarized.summarized_through == messages[1].id


def test_set_summary_refuses_unknown_conversations_and_foreign_messages(store: ChatStore) -> None:
    conversation = store.create_conversation("alice")
    other = store.create_conversation("alice")
    foreign = store.append_message(other.id, "user", "elsewhere")

    with pytest.raises(KeyError):
        store.set_summary("missing", "text", foreign.id)
    with pytest.raises(ValueError, match="not in conversation"):
        store.set_summary(conversation.id, "text", foreign.id)
    unchanged = store.conversation(conversation.id)
    assert unchanged is not None and unchanged.summary is None


def test_deleting_the_summary_marker_drops_the_summary(store: ChatStore) -> None:
    conversation = store.create_conversation("alice")
    first = store.append_message(conversation.id, "user", "one")
    marker = store.append_message(conversation.id, "user", "two")
    store.set_summary(conversation.id, "one and two", marker.id)

    store.delete_messages(conversation.id, [first.id])
    still = store.conversation(conversation.id)
    assert still is not None and still.summarized_through == marker.id

    store.delete_messages(conversation.id, [marker.id])
    dropped = store.conversation(conversation.id)
    assert dropped is not None
    assert (dropped.summary, dropped.summarized_through) == (None, None)


# -- the event journal -----------------------------------------------------------------------


def test_the_journal_returns_a_turn_s_events_in_sequence_order(store: ChatStore) -> None:
    conversation = store.create_conversation("alice")
    store.append_event(conversation.id, "t1", 1, {"type": "tool_call", "sequence": 1})
    store.append_event(conversation.id, "t1", 3, {"type": "done", "sequence": 3})
    store.append_event(conversation.id, "t1", 2, {"type": "tool_result", "sequence": 2})
    store.append_event(conversation.id, "t2", 1, {"type": "text_chunk", "sequence": 1})

    assert [event["type"] for event in store.events(conversation.id)] == [
        "tool_call",
        "tool_result",
        "done",
        "text_chunk",
    ]
    assert store.events(conversation.id, turn_id="t2") == [{"type": "text_chunk", "sequence": 1}]
    assert [
        event["sequence"] for event in store.events(conversation.id, turn_id="t1", after_sequence=1)
    ] == [2, 3]
    assert store.events(conversation.id, turn_id="t1", after_sequence=3) == []
    assert store.events(conversation.id, turn_id="unknown") == []


def test_rejournaling_an_event_is_harmless_but_a_different_one_is_refused(
    store: ChatStore,
) -> None:
    conversation = store.create_conversation("alice")
    store.append_event(conversation.id, "t1", 1, {"type": "text_chunk", "content": "a"})

    store.append_event(conversation.id, "t1", 1, {"content": "a", "type": "text_chunk"})
    with pytest.raises(ValueError, match="sequence 1"):
        store.append_event(conversation.id, "t1", 1, {"type": "text_chunk", "content": "b"})

    assert store.events(conversation.id) == [{"type": "text_chunk", "content": "a"}]


def test_journaling_into_an_unknown_conversation_is_a_key_error(store: ChatStore) -> None:
    with pytest.raises(KeyError):
        store.append_event("missing", "t1", 1, {"type": "done"})


# -- confirmations ---------------------------------------------------------------------------


def test_a_confirmation_round_trips(store: ChatStore) -> None:
    conversation = store.create_conversation("alice")
    record = confirmation(conversation.id)

    store.add_confirmation(record)

    assert store.confirmation(conversation.id, "tool-1") == record
    assert store.confirmation(conversation.id, "tool-2") is None
    with pytest.raises(KeyError):
        store.add_confirmation(confirmation("missing"))


def test_a_claim_succeeds_once_and_the_claimed_record_is_returned(store: ChatStore) -> None:
    conversation = store.create_conversation("alice")
    store.add_confirmation(confirmation(conversation.id))

    claimed = store.claim_confirmation(conversation.id, "tool-1", "alice", now=T0 + 1)

    assert claimed is not None
    assert claimed.state == "claimed"
    assert (claimed.mutation, claimed.input) == ("deletePart", {"id": 6})
    assert claimed.turn_state["mutations"] == 1
    assert store.claim_confirmation(conversation.id, "tool-1", "alice", now=T0 + 2) is None


@pytest.mark.parametrize(
    ("actor_id", "confirmation_id", "at"),
    [
        pytest.param("bob", "tool-1", T0 + 1, id="foreign-actor"),
        pytest.param("alice", "tool-1", T0 + 30, id="at-expiry"),
        pytest.param("alice", "tool-1", T0 + 31, id="after-expiry"),
        pytest.param("alice", "tool-9", T0 + 1, id="unknown-id"),
    ],
)
def test_a_claim_fails_for_foreign_expired_and_unknown_confirmations(
    store: ChatStore, actor_id: str, confirmation_id: str, at: float
) -> None:
    conversation = store.create_conversation("alice")
    store.add_confirmation(confirmation(conversation.id))

    assert store.claim_confirmation(conversation.id, confirmation_id, actor_id, now=at) is None

    unchanged = store.confirmation(conversation.id, "tool-1")
    assert unchanged is not None and unchanged.state == "pending"


def test_a_claim_from_another_conversation_fails(store: ChatStore) -> None:
    conversation = store.create_conversation("alice")
    other = store.create_conversation("alice")
    store.add_confirmation(confirmation(conversation.id))

    assert store.claim_confirmation(other.id, "tool-1", "alice", now=T0 + 1) is None


def test_twenty_threads_racing_for_one_confirmation_have_one_winner(store: ChatStore) -> None:
    conversation = store.create_conversation("alice")
    store.add_confirmation(confirmation(conversation.id))
    start = threading.Barrier(20)
    wins: list[ConfirmationRecord] = []

    def claim() -> None:
        start.wait()
        record = store.claim_confirmation(conversation.id, "tool-1", "alice", now=T0 + 1)
        if record is not None:
            wins.append(record)

    threads = [threading.Thread(target=claim) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(wins) == 1
    assert wins[0].state == "claimed"


def test_two_stores_on_one_store_racing_for_a_confirmation_have_one_winner(
    store_location: str,
) -> None:
    with ChatStore(store_location) as first, ChatStore(store_location) as second:
        conversation = first.create_conversation("alice")
        first.add_confirmation(confirmation(conversation.id))
        stores = [first, second] * 5
        start = threading.Barrier(len(stores))
        wins: list[int] = []

        def claim(index: int) -> None:
            start.wait()
            if stores[index].claim_confirmation(conversation.id, "tool-1", "alice", now=T0 + 1):
                wins.append(index)

        threads = [threading.Thread(target=claim, args=(index,)) for index in range(len(stores))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert len(wins) == 1
        seen_by_other = second.confirmation(conversation.id, "tool-1")
        assert seen_by_other is not None and seen_by_other.state == "claimed"


def test_finishing_sets_a_final_state_once(store: ChatStore) -> None:
    conversation = store.create_conversation("alice")
    store.add_confirmation(confirmation(conversation.id))
    store.claim_confirmation(conversation.id, "tool-1", "alice", now=T0 + 1)

    assert store.finish_confirmation(conversation.id, "tool-1", "executed", now=T0 + 2) is True
    assert store.finish_confirmation(conversation.id, "tool-1", "failed", now=T0 + 3) is False
    assert store.finish_confirmation(conversation.id, "missing", "failed") is False

    finished = store.confirmation(conversation.id, "tool-1")
    assert finished is not None
    assert (finished.state, finished.resolved_at) == ("executed", T0 + 2)
    with pytest.raises(ValueError, match="state"):
        store.finish_confirmation(conversation.id, "tool-1", "claimed")


def test_a_rejected_confirmation_cannot_be_claimed(store: ChatStore) -> None:
    conversation = store.create_conversation("alice")
    store.add_confirmation(confirmation(conversation.id))

    assert store.finish_confirmation(conversation.id, "tool-1", "rejected", now=T0 + 1)

    assert store.claim_confirmation(conversation.id, "tool-1", "alice", now=T0 + 2) is None


def test_pending_confirmation_is_the_newest_live_one(store: ChatStore) -> None:
    conversation = store.create_conversation("alice")
    store.add_confirmation(confirmation(conversation.id, "old", created_at=T0, expires_at=T0 + 30))
    store.add_confirmation(
        confirmation(conversation.id, "new", created_at=T0 + 5, expires_at=T0 + 35)
    )

    newest = store.pending_confirmation(conversation.id, now=T0 + 10)
    assert newest is not None and newest.id == "new"

    store.finish_confirmation(conversation.id, "new", "rejected", now=T0 + 11)
    older = store.pending_confirmation(conversation.id, now=T0 + 12)
    assert older is not None and older.id == "old"

    assert store.pending_confirmation(conversation.id, now=T0 + 30) is None


def test_expire_confirmations_marks_only_pending_past_their_expiry(store: ChatStore) -> None:
    conversation = store.create_conversation("alice")
    store.add_confirmation(confirmation(conversation.id, "late", expires_at=T0 + 30))
    store.add_confirmation(confirmation(conversation.id, "live", expires_at=T0 + 90))
    store.add_confirmation(confirmation(conversation.id, "claimed", expires_at=T0 + 30))
    store.claim_confirmation(conversation.id, "claimed", "alice", now=T0 + 1)

    assert store.expire_confirmations(now=T0 + 60) == 1
    assert store.expire_confirmations(now=T0 + 60) == 0

    states = {
        name: record.state
        for name in ("late", "live", "claimed")
        if (record := store.confirmation(conversation.id, name)) is not None
    }
    assert states == {"late": "expired", "live": "pending", "claimed": "claimed"}
    expired = store.confirmation(conversation.id, "late")
    assert expired is not None and expired.resolved_at == T0 + 60


def test_a_provider_call_id_can_be_reused_once_its_confirmation_is_finished(
    store: ChatStore,
) -> None:
    conversation = store.create_conversation("alice")
    store.add_confirmation(confirmation(conversation.id))

    with pytest.raises(ValueError, match="still pending"):
        store.add_confirmation(confirmation(conversation.id))

    store.finish_confirmation(conversation.id, "tool-1", "rejected")
    store.add_confirmation(confirmation(conversation.id, created_at=T0 + 100, expires_at=T0 + 130))

    reused = store.confirmation(conversation.id, "tool-1")
    assert reused is not None and (reused.state, reused.created_at) == ("pending", T0 + 100)


# -- usage -----------------------------------------------------------------------------------


def test_usage_rows_come_back_in_time_order_from_since(store: ChatStore) -> None:
    store.record_usage("alice", "tokens", 30, at=T0 + 20)
    store.record_usage("alice", "tokens", 10, at=T0)
    store.record_usage("alice", "tokens", 20, at=T0 + 10)
    store.record_usage("alice", "requests", 1, at=T0 + 10)
    store.record_usage("bob", "tokens", 99, at=T0 + 10)

    assert store.usage("alice", "tokens", since=T0) == [(T0, 10), (T0 + 10, 20), (T0 + 20, 30)]
    assert store.usage("alice", "tokens", since=T0 + 5) == [(T0 + 10, 20), (T0 + 20, 30)]
    assert store.usage("carol", "tokens", since=0) == []


def admit(
    store: ChatStore, amounts: dict[str, int], limits: dict[str, int], now: float
) -> dict[str, float]:
    return store.admit_usage("alice", amounts, limits=limits, window_seconds=100, now=now)


def test_admit_usage_adds_only_while_every_limit_has_room(store: ChatStore) -> None:
    assert admit(store, {"requests": 1}, {"requests": 2, "tokens": 50}, T0) == {}
    assert admit(store, {"tokens": 50}, {}, T0 + 10) == {}  # no limits: always added
    assert admit(store, {"requests": 1}, {"requests": 2}, T0 + 20) == {}

    # Both exhausted: each says when it is below its limit again; nothing is added.
    refused = admit(store, {"requests": 1}, {"requests": 2, "tokens": 50}, T0 + 30)
    assert refused == {"requests": T0 + 100, "tokens": T0 + 110}
    assert store.usage("alice", "requests", since=0) == [(T0, 1), (T0 + 20, 1)]
    # The t=0 request has left the window (a row counts while now < at + window).
    assert admit(store, {"requests": 1}, {"requests": 2}, T0 + 100) == {}


def test_admit_usage_counts_rows_recorded_directly_and_by_other_windows(store: ChatStore) -> None:
    assert admit(store, {}, {"tokens": 5}, T0) == {}  # starts the window's running total
    store.record_usage("alice", "tokens", 6, at=T0 + 1)
    store.admit_usage("alice", {"tokens": 6}, limits={}, window_seconds=5, now=T0 + 2)

    assert admit(store, {}, {"tokens": 5}, T0 + 3) == {"tokens": T0 + 102}
    assert admit(store, {}, {"tokens": 5}, T0 + 101) == {"tokens": T0 + 102}
    assert admit(store, {}, {"tokens": 5}, T0 + 102) == {}


@pytest.mark.parametrize("limit", [0, -1, True])
def test_admit_usage_needs_positive_integer_limits(store: ChatStore, limit: int) -> None:
    with pytest.raises(ValueError, match="'tokens'"):
        admit(store, {}, {"tokens": limit}, T0)


def test_cleanup_keeps_a_window_longer_than_a_day_right(store: ChatStore) -> None:
    now = T0 + 100 * HOUR
    for hours_ago, amount in ((40, 5), (30, 7), (1, 1)):
        store.record_usage("alice", "tokens", amount, at=now - hours_ago * HOUR)

    def refused() -> dict[str, float]:
        return store.admit_usage(
            "alice", {}, limits={"tokens": 13}, window_seconds=48 * HOUR, now=now
        )

    assert refused() == {"tokens": now + 8 * HOUR}
    assert store.cleanup(12, now=now)["usage"] == 2
    # The window's running total had counted the two deleted rows; only the last is left.
    assert refused() == {}


def test_a_version_one_file_counts_its_usage_rows_against_limits(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite3"
    raw = sqlite3.connect(path)
    raw.executescript(
        "CREATE TABLE usage (id INTEGER PRIMARY KEY AUTOINCREMENT, actor_id TEXT NOT NULL, "
        "counter TEXT NOT NULL, amount INTEGER NOT NULL, at REAL NOT NULL);"
        f"INSERT INTO usage (actor_id, counter, amount, at) VALUES ('alice', 'requests', 1, {T0});"
        "PRAGMA user_version = 1;"
    )
    raw.close()

    with ChatStore(path) as upgraded:
        assert admit(upgraded, {"requests": 1}, {"requests": 1}, T0 + 1) == {"requests": T0 + 100}


# -- cleanup ---------------------------------------------------------------------------------


def test_cleanup_deletes_what_the_ttl_left_behind(store: ChatStore) -> None:
    now = T0 + 48 * HOUR
    stale = store.create_conversation("alice", now=T0)
    store.append_message(stale.id, "user", "old", now=T0)
    store.append_message(stale.id, "assistant", "old answer", now=T0)
    store.append_event(stale.id, "t1", 1, {"type": "done"})
    store.add_confirmation(confirmation(stale.id))
    fresh = store.create_conversation("alice", now=now - HOUR)
    store.append_message(fresh.id, "user", "new", now=now - HOUR)
    # In the fresh conversation: one long-resolved, one long-expired but never marked, one
    # claimed whose outcome is unknown, and one recently resolved.
    store.add_confirmation(confirmation(fresh.id, "resolved-old"))
    store.finish_confirmation(fresh.id, "resolved-old", "executed", now=T0 + 1)
    store.add_confirmation(confirmation(fresh.id, "never-confirmed"))
    store.add_confirmation(confirmation(fresh.id, "claimed"))
    store.claim_confirmation(fresh.id, "claimed", "alice", now=T0 + 1)
    store.add_confirmation(confirmation(fresh.id, "resolved-new"))
    store.finish_confirmation(fresh.id, "resolved-new", "rejected", now=now - HOUR)
    store.record_usage("alice", "requests", 1, at=now - 30 * HOUR)  # older than ttl and a day
    store.record_usage("alice", "requests", 1, at=now - 20 * HOUR)  # older than ttl, not a day
    record = {"provider": "openai:gpt-4.1-mini", "input_tokens": 10, "output_tokens": 2,
              "latency_ms": 5.0, "cost_usd": "0.0001", "price_source": "genai-prices"}  # fmt: skip
    # usage records stay a year: one older than that goes, one of last month stays
    store.add_usage_records("alice", [{**record, "at": now - 367 * 24 * HOUR}])
    store.add_usage_records("alice", [{**record, "at": now - 30 * 24 * HOUR}])

    counts = store.cleanup(12, now=now)

    assert counts == {
        "conversations": 1,
        "messages": 2,
        "events": 1,
        "confirmations": 3,
        "usage": 1,
        "usage_records": 1,
    }
    assert [r["at"] for r in store.usage_records(actor_id="alice")] == [now - 30 * 24 * HOUR]
    assert store.conversation(stale.id) is None
    assert store.conversation(fresh.id) is not None
    remaining = {
        name
        for name in ("resolved-old", "never-confirmed", "claimed", "resolved-new")
        if store.confirmation(fresh.id, name) is not None
    }
    assert remaining == {"claimed", "resolved-new"}
    assert store.usage("alice", "requests", since=0) == [(now - 20 * HOUR, 1)]
    assert store.cleanup(12, now=now) == dict.fromkeys(counts, 0)


def test_cleanup_keeps_usage_for_a_ttl_longer_than_a_day(store: ChatStore) -> None:
    now = T0 + 100 * HOUR
    store.record_usage("alice", "tokens", 5, at=now - 40 * HOUR)
    store.record_usage("alice", "tokens", 7, at=now - 60 * HOUR)

    assert store.cleanup(48, now=now)["usage"] == 1
    assert store.usage("alice", "tokens", since=0) == [(now - 40 * HOUR, 5)]


def test_cleanup_refuses_a_negative_ttl(store: ChatStore) -> None:
    with pytest.raises(ValueError, match="ttl_hours"):
        store.cleanup(-1)


# -- files -----------------------------------------------------------------------------------


def test_a_file_store_persists_across_objects_and_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "chat.sqlite3"
    with ChatStore(path) as first:
        conversation = first.create_conversation("alice", "Kept")
        first.append_message(conversation.id, "user", "remember me")
        first.set_summary(conversation.id, "greeting", first.messages(conversation.id)[0].id)
        first.append_event(conversation.id, "t1", 1, {"type": "done"})
        first.add_confirmation(confirmation(conversation.id))
        first.record_usage("alice", "requests", 1, at=T0)
        assert first.journal_mode == "wal"

    with ChatStore(path) as second:
        reopened = second.conversation(conversation.id)
        assert reopened is not None
        assert (reopened.title, reopened.summary, reopened.message_count) == ("Kept", "greeting", 1)
        assert [message.content for message in second.messages(conversation.id)] == ["remember me"]
        assert second.events(conversation.id) == [{"type": "done"}]
        assert second.confirmation(conversation.id, "tool-1") == confirmation(conversation.id)
        assert second.usage("alice", "requests", since=0) == [(T0, 1)]

    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        raw.close()


def test_a_memory_store_is_private_and_not_wal() -> None:
    with ChatStore() as first, ChatStore(":memory:") as second:
        conversation = first.create_conversation("alice")
        assert second.conversation(conversation.id) is None
        assert first.journal_mode == "memory"


def test_a_file_from_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite3"
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()

    with pytest.raises(StoreVersionError, match="schema version"):
        ChatStore(path)


def test_a_closed_store_refuses_work(store_location: str) -> None:
    with ChatStore(store_location) as chat_store:
        pass
    chat_store.close()  # idempotent

    with pytest.raises(StoreClosedError, match="closed"):
        chat_store.conversations("alice")


def test_default_path_prefers_gmchat_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GMCHAT_STORE", str(tmp_path / "explicit.sqlite3"))

    assert ChatStore.default_path() == tmp_path / "explicit.sqlite3"
    monkeypatch.setenv("GMCHAT_STORE", "postgresql://chat@db.internal/hub")
    assert ChatStore.default_path() == "postgresql://chat@db.internal/hub"  # not a folded Path


def test_default_path_is_in_the_jupyter_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # jupyter_core, when installed, honours JUPYTER_DATA_DIR as well, so this holds either way.
    monkeypatch.delenv("GMCHAT_STORE", raising=False)
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter"))

    assert ChatStore.default_path() == tmp_path / "jupyter" / "gmchat_nb" / "chat.sqlite3"


# -- durable turns: positions and admissions -------------------------------------------------


def test_a_version_two_journal_gets_positions_in_journal_order(tmp_path: Path) -> None:
    path = tmp_path / "v2.sqlite3"
    raw = sqlite3.connect(path)
    raw.executescript(
        "CREATE TABLE conversations (id TEXT PRIMARY KEY, actor_id TEXT NOT NULL, title TEXT "
        "NOT NULL DEFAULT '', created_at REAL NOT NULL, updated_at REAL NOT NULL, summary TEXT, "
        "summarized_through INTEGER);"
        "CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id TEXT NOT NULL,"
        " turn_id TEXT NOT NULL, sequence INTEGER NOT NULL, payload TEXT NOT NULL, created_at "
        "REAL NOT NULL, UNIQUE (conversation_id, turn_id, sequence));"
        "CREATE TABLE turns (conversation_id TEXT NOT NULL, id TEXT NOT NULL, state TEXT NOT NULL,"
        " owner TEXT NOT NULL DEFAULT '', started_at REAL NOT NULL, ended_at REAL, "
        "PRIMARY KEY (conversation_id, id));"
        f"INSERT INTO conversations VALUES ('a', 'alice', '', {T0}, {T0}, NULL, NULL);"
        f"INSERT INTO conversations VALUES ('b', 'alice', '', {T0}, {T0}, NULL, NULL);"
        f"INSERT INTO events (conversation_id, turn_id, sequence, payload, created_at) VALUES "
        f"('a', 't1', 1, '{{\"type\": \"text_chunk\"}}', {T0}), "
        f"('b', 't9', 1, '{{\"type\": \"done\"}}', {T0}), "
        f"('a', 't1', 2, '{{\"type\": \"done\"}}', {T0}), "
        f"('a', 't2', 1, '{{\"type\": \"done\"}}', {T0});"
        "PRAGMA user_version = 2;"
    )
    raw.close()
    with ChatStore(path) as upgraded:
        assert [(e.position, e.turn_id) for e in upgraded.journal_after("a", 0)] == [
            (1, "t1"),
            (2, "t1"),
            (3, "t2"),
        ]
        assert upgraded.last_position("b") == 1
        upgraded.append_event("a", "t3", 1, {"type": "done"})
        assert upgraded.last_position("a") == 4
        assert upgraded.turn("a", "t9") is None


def test_positions_are_gap_free_and_a_repeated_write_takes_none(store: ChatStore) -> None:
    conversation = store.create_conversation("alice").id
    woken: list[str] = []
    store.on_journal(woken.append)
    store.append_events(conversation, "t1", [(1, {"type": "a"}), (2, {"type": "b"})])
    store.append_events(conversation, "t1", [(2, {"type": "b"}), (3, {"type": "c"})])
    store.append_events(conversation, "t1", [(3, {"type": "c"})])  # all seen: no write
    assert [e.position for e in store.journal_after(conversation, 0)] == [1, 2, 3]
    assert [e.payload["type"] for e in store.journal_after(conversation, 1, limit=1)] == ["b"]
    assert woken == [conversation, conversation]  # listeners hear of writes that journaled
    with pytest.raises(ValueError, match="different event at sequence 3"):
        store.append_events(conversation, "t1", [(3, {"type": "changed"})])
    assert store.last_position(conversation) == 3 and store.first_position(conversation) == 1


def admit_turn(
    store: ChatStore, actor: str, turn_id: str, digest: str, **options: Any
) -> Admission:
    return store.admit_turn(actor, turn_id, input_hash=digest, owner="me", **options)


def test_an_admission_is_idempotent_and_its_cancel_decided_once(store: ChatStore) -> None:
    conversation = store.create_conversation("alice").id
    other = store.create_conversation("alice").id
    store.append_event(conversation, "earlier", 1, {"type": "done"})
    first = admit_turn(store, "alice", "turn-1", "hash-a", conversation_id=conversation)
    assert (first.state, first.position, first.created) == ("accepted", 1, True)
    again = admit_turn(store, "alice", "turn-1", "hash-a", conversation_id=conversation)
    assert (again.position, again.created) == (1, False)
    anywhere = admit_turn(
        store, "alice", "turn-1", "hash-a"
    )  # no conversation named: the same turn
    assert (anywhere.conversation_id, anywhere.created) == (conversation, False)
    with pytest.raises(TurnConflict):
        admit_turn(store, "alice", "turn-1", "hash-b", conversation_id=conversation)
    with pytest.raises(TurnConflict):  # one turn id names one turn of an actor, not one per chat
        admit_turn(store, "alice", "turn-1", "hash-a", conversation_id=other)
    assert admit_turn(store, "bob", "turn-1", "hash-a").created  # another actor's id is their own
    with pytest.raises(UnknownConversation):
        admit_turn(store, "mallory", "turn-9", "hash", conversation_id=conversation)
    assert store.admitted_turn("alice", "turn-1") is not None
    assert store.admitted_turn("mallory", "turn-1") is None  # another actor's id is not theirs
    assert store.request_cancel(conversation, "turn-1", "c1") == "cancelled"
    assert store.request_cancel(conversation, "turn-1", "c1") == "duplicate"
    assert store.request_cancel(conversation, "turn-1", "c2") == "too_late"
    assert store.request_cancel(conversation, "nope", "c1") is None
    admit_turn(store, "alice", "turn-2", "hash-c", conversation_id=other)
    store.record_turn(other, "turn-2", [], [(1, {"type": "done"})], state="done")
    assert store.request_cancel(other, "turn-2", "c3") == "too_late"
    admit_turn(store, "alice", "turn-3", "hash-d", conversation_id=other, text="List parts \x00")
    kept = store.turn(other, "turn-3")
    assert kept is not None and kept.input is not None and kept.input.startswith("List parts")


def test_an_admission_starts_its_turn_in_the_same_write_or_ends_it_refused(
    store: ChatStore,
) -> None:
    conversation = store.create_conversation("alice").id
    writes = store.writes
    start = TurnStart(text="List parts", title="Parts", limits={"requests": 1}, decide=decide)
    started = admit_turn(store, "alice", "t1", "h1", conversation_id=conversation, start=start,
                    text="List parts")  # fmt: skip
    assert store.writes == writes + 1  # admission, budget, title and question: one write
    assert (started.state, started.refusal) == ("running", None)
    assert [m.content for m in store.messages(conversation)] == ["List parts"]
    assert store.conversation(conversation).title == "Parts"  # type: ignore[union-attr]
    with pytest.raises(TurnBusy):  # its lease runs: the conversation is busy
        admit_turn(store, "alice", "t2", "h2", conversation_id=conversation, start=start)
    store.record_turn(conversation, "t1", [], [(1, {"type": "done"})], state="done")
    refused = admit_turn(store, "alice", "t2", "h2", conversation_id=conversation, start=start,
                    text="Again")  # fmt: skip
    assert (refused.created, refused.state) == (True, "failed")
    assert refused.refusal is not None and refused.refusal["code"] == "rate_limited"
    assert store.events(conversation, turn_id="t2") == [{**refused.refusal}]  # its one end
    plain = admit_turn(store, "alice", "t3", None, conversation_id=conversation, start=start)  # type: ignore[arg-type]
    assert plain.refusal is not None and store.turn(conversation, "t3") is None  # not kept


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after_seconds: int | None = None


def test_an_admission_takes_the_caller_s_decision_on_the_budgets_in_its_one_write(
    store: ChatStore,
) -> None:
    # The store counts the request; what an exhausted budget means is the caller's decision
    # (the rate limiter's, in the session), handed in with the start and taken in the write.
    conversation = store.create_conversation("alice").id
    asked: list[dict[str, float]] = []

    def decide_here(below_at: Mapping[str, float], now: float) -> Verdict:
        asked.append(dict(below_at))
        return Verdict(False, 7) if below_at else Verdict(True)

    start = TurnStart(text="List parts", limits={"requests": 1}, decide=decide_here)
    writes = store.writes
    first = admit_turn(store, "alice", "t1", "h1", conversation_id=conversation, start=start,
                       text="List parts")  # fmt: skip
    assert store.writes == writes + 1 and first.refusal is None and asked == [{}]
    store.record_turn(conversation, "t1", [], [(1, {"type": "done"})], state="done")
    refused = admit_turn(store, "alice", "t2", "h2", conversation_id=conversation, start=start,
                         text="Again")  # fmt: skip
    assert refused.refusal is not None and refused.refusal["retry_after_seconds"] == 7
    assert list(asked[-1]) == ["requests"]
    with pytest.raises(ValueError, match="decide"):
        TurnStart(text="List parts", limits={"requests": 1})  # budgets without their decision
    assert TurnStart(text="List parts").decide is None  # no budgets: nothing to decide


def test_two_stores_journaling_one_conversation_at_once_keep_positions_gap_free(
    store_location: str,
) -> None:
    # Two connections (on PostgreSQL: what two servers of a hub are) race to journal turns of
    # one conversation; every event still gets its own position, none skipped or taken twice.
    with ChatStore(store_location) as first, ChatStore(store_location) as second:
        conversation = first.create_conversation("alice").id
        start = threading.Barrier(8)

        def journal(index: int) -> None:
            writer = (first, second)[index % 2]
            start.wait()
            for step in range(1, 11):
                writer.append_events(conversation, f"turn-{index}", [(step, {"type": "a"})])

        threads = [threading.Thread(target=journal, args=(index,)) for index in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        entries = second.journal_after(conversation, 0, limit=1000)
        assert [entry.position for entry in entries] == list(range(1, 81))
        for index in range(8):
            steps = [e.payload for e in entries if e.turn_id == f"turn-{index}"]
            assert len(steps) == 10


def test_text_no_engine_can_store_becomes_a_replacement_character(store: ChatStore) -> None:
    conversation = store.create_conversation("alice\x00bob", "title \ud800").id
    store.append_message(conversation, "user", "nul \x00 and lone \udfff here")
    [message] = store.messages(conversation)
    assert message.content in ("nul \x00 and lone \ufffd here", "nul \ufffd and lone \ufffd here")
    record = store.conversation(conversation)
    assert record is not None and record.title == "title \ufffd"


def test_a_recorded_cancel_command_is_heard_once_and_only_when_recorded(store: ChatStore) -> None:
    conversation = store.create_conversation("alice").id
    admit_turn(store, "alice", "turn-1", "hash", conversation_id=conversation)
    heard: list[tuple[str, str]] = []
    store.on_cancel(lambda conversation_id, turn_id: heard.append((conversation_id, turn_id)))
    assert store.request_cancel(conversation, "turn-1", "c1") == "cancelled"
    assert store.request_cancel(conversation, "turn-1", "c1") == "duplicate"  # nothing new
    assert heard == [(conversation, "turn-1")]
