"""What only the PostgreSQL store has: migrations, wake-ups between processes, a dropped
connection, and its errors. Everything else runs on both backends in test_store.py."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from urllib.parse import quote

import psycopg
import pytest

from gmchat_nb.core.dsn import without_password
from gmchat_nb.core.store import (
    SCHEMA_VERSION,
    ChatStore,
    StoreUnavailableError,
    StoreVersionError,
)
from gmchat_nb.core.store.postgresql_schema import MIGRATIONS


def _tables(url: str) -> set[str]:
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchall()
    return {row[0] for row in rows}


def test_opening_an_empty_schema_migrates_it_once_even_when_two_open_at_once(
    postgresql_store: str,
) -> None:
    opened: list[ChatStore] = []
    start = threading.Barrier(4)

    def open_store() -> None:
        start.wait()
        opened.append(ChatStore(postgresql_store))

    threads = [threading.Thread(target=open_store) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert len(opened) == 4
        assert {"conversations", "messages", "events", "turns", "confirmations", "usage"} <= (
            _tables(postgresql_store)
        )
        with psycopg.connect(postgresql_store) as connection:
            versions = connection.execute("SELECT version FROM gmchat_schema").fetchall()
        assert sorted(versions) == [(version,) for version in sorted(MIGRATIONS)]  # each once
        conversation = opened[0].create_conversation("alice", "Shared")
        assert opened[3].conversation(conversation.id) == conversation
    finally:
        for store in opened:
            store.close()


def test_a_version_3_database_is_migrated_and_keeps_its_rows(postgresql_store: str) -> None:
    with psycopg.connect(postgresql_store, autocommit=True) as raw:  # what 3 wrote, by hand
        raw.execute("CREATE TABLE gmchat_schema (version INTEGER NOT NULL)")
        for statement in MIGRATIONS[3].split(";"):
            if statement.strip():
                raw.execute(statement)
        raw.execute("INSERT INTO gmchat_schema (version) VALUES (3)")
        raw.execute(
            "INSERT INTO conversations (id, actor_id, created_at, updated_at) "
            "VALUES ('c1', 'alice', 1, 1)"
        )
        raw.execute(
            "INSERT INTO turns (conversation_id, id, state, started_at, input_hash) "
            "VALUES ('c1', 't1', 'done', 1, 'h')"
        )

    with ChatStore(postgresql_store) as store:
        old = store.turn("c1", "t1")
        assert old is not None and old.input is None and old.input_hash == "h"
        assert old.actor_id == "alice"  # version 5: a turn's actor is its conversation's
        assert store.admitted_turn("alice", "t1") == old
        store.admit_turn("alice", "t2", input_hash="h2", owner="me", conversation_id="c1",
                         text="kept")  # fmt: skip
        kept = store.turn("c1", "t2")
        assert kept is not None and kept.input == "kept"
    with psycopg.connect(postgresql_store) as raw:
        assert raw.execute("SELECT MAX(version) FROM gmchat_schema").fetchone() == (SCHEMA_VERSION,)


def test_a_database_of_a_newer_schema_is_refused_and_left_alone(postgresql_store: str) -> None:
    ChatStore(postgresql_store).close()
    with psycopg.connect(postgresql_store, autocommit=True) as connection:
        connection.execute("INSERT INTO gmchat_schema (version) VALUES (%s)", (SCHEMA_VERSION + 1,))

    with pytest.raises(StoreVersionError, match=f"schema version {SCHEMA_VERSION + 1}"):
        ChatStore(postgresql_store)
    with psycopg.connect(postgresql_store) as connection:
        assert connection.execute("SELECT MAX(version) FROM gmchat_schema").fetchone() == (
            SCHEMA_VERSION + 1,
        )


def test_another_process_s_journal_write_wakes_this_one_s_readers(postgresql_store: str) -> None:
    # Two store objects hold two connections, as two server processes would.
    with ChatStore(postgresql_store) as reader, ChatStore(postgresql_store) as writer:
        conversation = writer.create_conversation("alice").id
        woken: list[str] = []
        heard = threading.Event()

        def listener(conversation_id: str) -> None:
            woken.append(conversation_id)
            heard.set()

        reader.on_journal(listener)
        writer.append_event(conversation, "turn-1", 1, {"type": "text_chunk"})
        assert heard.wait(10), "no wake-up arrived from the other connection"
        assert woken == [conversation]
        assert [entry.position for entry in reader.journal_after(conversation, 0)] == [1]

        own: list[str] = []
        writer.on_journal(own.append)
        writer.append_event(conversation, "turn-1", 2, {"type": "done"})
        time.sleep(1.0)  # a notification of its own write would arrive by now
        assert own == [conversation]  # heard once, from the write itself, not again by NOTIFY


def test_a_cancel_recorded_by_another_process_reaches_this_one(postgresql_store: str) -> None:
    with ChatStore(postgresql_store) as runner, ChatStore(postgresql_store) as other:
        conversation = runner.create_conversation("alice").id
        runner.admit_turn(
            "alice", "turn-1", input_hash="hash", owner="me", conversation_id=conversation
        )
        heard: list[tuple[str, str]] = []
        arrived = threading.Event()

        def listener(conversation_id: str, turn_id: str) -> None:
            heard.append((conversation_id, turn_id))
            arrived.set()

        runner.on_cancel(listener)
        assert other.request_cancel(conversation, "turn-1", "c1") == "cancelled"
        assert arrived.wait(10), "the cancel command was not heard by the other connection"
        assert heard == [(conversation, "turn-1")]


def test_notifications_of_other_programs_on_the_channel_are_ignored(postgresql_store: str) -> None:
    with ChatStore(postgresql_store) as store, ChatStore(postgresql_store) as writer:
        conversation = store.create_conversation("alice").id
        woken: list[str] = []
        heard = threading.Event()
        store.on_journal(lambda conversation_id: (woken.append(conversation_id), heard.set()))
        channel = store._backend._channel  # type: ignore[attr-defined]
        with psycopg.connect(postgresql_store, autocommit=True) as stranger:
            for payload in ("hello", "[1, 2]", "42", '["x", "journal", "c"]', "null"):
                stranger.execute("SELECT pg_notify(%s, %s)", (channel, payload))
        writer.append_event(conversation, "turn-1", 1, {"type": "a"})
        assert heard.wait(10), "the listening thread stopped at a stranger's notification"
        assert woken == [conversation]


def test_the_listening_thread_comes_back_after_its_connection_was_cut(
    postgresql_store: str,
) -> None:
    with ChatStore(postgresql_store) as reader, ChatStore(postgresql_store) as writer:
        conversation = writer.create_conversation("alice").id
        heard = threading.Event()
        reader.on_journal(lambda _conversation_id: heard.set())
        with psycopg.connect(postgresql_store, autocommit=True) as admin:
            cut = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND query LIKE 'LISTEN %'"
            ).fetchall()
        assert cut, "the listening connection was not found"
        # Notifications sent while it is away are lost (readers fall back to their keep-alive);
        # once it listens again, the next write wakes the reader.
        for sequence in range(1, 41):
            writer.append_event(conversation, "turn-1", sequence, {"type": "text_chunk"})
            if heard.wait(0.5):
                break
        assert heard.is_set(), "no wake-up after the listening connection was cut"


def test_a_rolled_back_write_wakes_nobody(postgresql_store: str) -> None:
    with ChatStore(postgresql_store) as reader, ChatStore(postgresql_store) as writer:
        conversation = writer.create_conversation("alice").id
        writer.append_event(conversation, "turn-1", 1, {"type": "a"})
        woken: list[str] = []
        reader.on_journal(woken.append)
        with pytest.raises(ValueError, match="different event"):
            writer.append_event(conversation, "turn-1", 1, {"type": "changed"})
        time.sleep(1.0)
        assert woken == []


def test_a_connection_the_server_dropped_is_replaced_before_anything_fails(
    postgresql_store: str,
) -> None:
    """A read or a write that finds its idle connection dropped (a restart, a failover) asks
    again on a new one: nothing was done on the old one, so nothing fails. Inside a write,
    a dropped connection fails that write (it was rolled back) and the next one reconnects."""

    def cut() -> None:
        with psycopg.connect(postgresql_store, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND datname = current_database() "
                "AND application_name = 'gmchat_nb'"
            )

    with ChatStore(postgresql_store) as store:
        conversation = store.create_conversation("alice").id
        cut()
        assert store.conversation(conversation) is not None  # a read reconnects
        cut()
        store.append_message(conversation, "user", "still here")  # so does a write's BEGIN
        assert [m.content for m in store.messages(conversation)] == ["still here"]

        def cut_mid_write() -> None:
            with store._write() as write:
                cut()  # mid-write: this write fails, rolled back
                write.execute("DELETE FROM messages WHERE conversation_id = ?", (conversation,))

        with pytest.raises(StoreUnavailableError, match="unreachable"):
            cut_mid_write()
        assert [m.content for m in store.messages(conversation)] == ["still here"]


def test_a_password_never_appears_in_the_location_or_errors(postgresql_server: str) -> None:
    assert (
        without_password("postgresql://bob:s3cret@db:5432/chat")
        == "postgresql://bob:***@db:5432/chat"
    )
    assert without_password("postgresql://db/chat") == "postgresql://db/chat"
    unreachable = f"postgresql://bob:{quote('s3cret')}@127.0.0.1:1/chat?connect_timeout=2"

    with ChatStore(unreachable) as store:  # opened: it may come up later
        assert store.path.startswith("postgresql://bob:***@127.0.0.1:1/chat")
        with pytest.raises(StoreUnavailableError) as refused:
            store.conversations("alice")
    assert "s3cret" not in str(refused.value)
    assert "postgresql://bob:***@127.0.0.1:1/chat" in str(refused.value)


def test_a_store_opened_before_its_database_existed_works_once_it_does(
    postgresql_server: str,
) -> None:
    name = f"late_{uuid.uuid4().hex[:12]}"
    url = postgresql_server.rsplit("/", 1)[0] + f"/{name}"
    with ChatStore(url) as store:
        with pytest.raises(StoreUnavailableError, match=f'database "{name}" does not exist'):
            store.conversations("alice")
        woken: list[str] = []
        store.on_journal(woken.append)  # registered while it is away: kept for later
        with psycopg.connect(postgresql_server, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        try:
            conversation = store.create_conversation("alice", "Late")
            store.append_event(conversation.id, "turn-1", 1, {"type": "done"})
            assert store.conversations("alice") == [store.conversation(conversation.id)]
            assert woken == [conversation.id]
        finally:
            store.close()
            with psycopg.connect(postgresql_server, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_a_url_libpq_cannot_read_is_a_configuration_error_at_once() -> None:
    with pytest.raises(ValueError, match='invalid URI query parameter: "colour"') as refused:
        ChatStore("postgresql://chat:s3cret@db/hub?colour=blue")
    assert "s3cret" not in str(refused.value)


def test_a_missing_driver_is_said_at_once_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"pip install 'gmchat_nb\[postgresql\]'"):
        ChatStore("postgresql://chat@db/hub")
