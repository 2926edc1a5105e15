"""The chat store's SQLite schema and its versions."""

from __future__ import annotations

import sqlite3
from typing import Final

__all__ = ["SCHEMA_VERSION", "StoreVersionError", "apply_schema"]

SCHEMA_VERSION: Final = 9
"""The schema this module writes; kept in SQLite's ``PRAGMA user_version``. Version 2 added
tables only (``CREATE TABLE IF NOT EXISTS``), so a version-1 file is upgraded by opening it.
Version 3 gave every journaled event a ``position`` in its conversation (the durable cursor a
client replays after) and turns their admission (``input_hash``, ``cancel_command``); an older
file gets the columns, positions numbered in journal order, when it is opened. Version 4 keeps
an admitted turn's ``input`` (its text), so a turn a crash cut off can be run again. Version 5
gives turns their ``actor_id`` (a turn id names one turn per actor, whatever its conversation),
the ``scope`` of the servers that may take them over, the ``lease_expires_at`` their driving
process renews, and the ``committed_sequence`` their stored messages cover. Version 6 adds
``usage_records`` (a table only): one row per model request, its tokens, latency and cost.
Version 7 adds ``knowledge`` (verified queries, definitions and notes, each scoped by project
and owner), its full-text index ``knowledge_fts`` and ``knowledge_versions`` (each project's count
of entries and a number its writes raise), and gives conversations their ``project`` and
``knowledge`` (recall switched for one conversation). Version 8 adds ``agent_tokens`` (a table
only): the hashed credentials a person gives an agent for the MCP route. Version 9 records who
decided each confirmation (``decided_by``, ``decided_via``, ``decided_at``) and keeps every
decided change in ``change_records``, which ``cleanup`` never deletes."""

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    actor_id TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    summary TEXT,
    summarized_through INTEGER,
    project TEXT,
    knowledge TEXT
);
CREATE INDEX IF NOT EXISTS conversations_by_actor ON conversations (actor_id, updated_at);
CREATE INDEX IF NOT EXISTS conversations_by_update ON conversations (updated_at);

CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    tool_calls TEXT NOT NULL DEFAULT '[]',
    tool_call_id TEXT,
    tool_name TEXT,
    tool_result TEXT,
    turn_id TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages (conversation_id, id);

CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    payload TEXT NOT NULL,
    created_at REAL NOT NULL,
    position INTEGER,
    UNIQUE (conversation_id, turn_id, sequence)
);

CREATE TABLE IF NOT EXISTS confirmations (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    mutation TEXT NOT NULL,
    input TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    resolved_at REAL,
    turn_state TEXT NOT NULL,
    PRIMARY KEY (conversation_id, id)
);
CREATE INDEX IF NOT EXISTS confirmations_by_state ON confirmations (state, expires_at);

CREATE TABLE IF NOT EXISTS turns (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    state TEXT NOT NULL,
    owner TEXT NOT NULL DEFAULT '',
    started_at REAL NOT NULL,
    ended_at REAL,
    input_hash TEXT,
    admitted_position INTEGER,
    cancel_command TEXT,
    input TEXT,
    actor_id TEXT,
    scope TEXT,
    lease_expires_at REAL,
    committed_sequence INTEGER,
    PRIMARY KEY (conversation_id, id)
);
CREATE INDEX IF NOT EXISTS turns_by_state ON turns (state, conversation_id);

CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    actor_id TEXT NOT NULL,
    counter TEXT NOT NULL,
    amount INTEGER NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS usage_by_actor ON usage (actor_id, counter, at);
CREATE INDEX IF NOT EXISTS usage_by_time ON usage (at);

CREATE TABLE IF NOT EXISTS usage_totals (
    actor_id TEXT NOT NULL,
    counter TEXT NOT NULL,
    window_seconds REAL NOT NULL,
    window_start REAL NOT NULL,
    total INTEGER NOT NULL,
    PRIMARY KEY (actor_id, counter, window_seconds)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS usage_records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    actor_id TEXT NOT NULL,
    conversation_id TEXT,
    turn_id TEXT,
    provider TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    reasoning_tokens INTEGER NOT NULL,
    estimated INTEGER NOT NULL,
    latency_ms REAL NOT NULL,
    cost_usd TEXT,
    price_source TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS usage_records_by_actor ON usage_records (actor_id, at);
CREATE INDEX IF NOT EXISTS usage_records_by_turn ON usage_records (conversation_id, turn_id);

CREATE TABLE IF NOT EXISTS knowledge (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    project TEXT NOT NULL,
    owner TEXT NOT NULL,
    kind TEXT NOT NULL,
    scope TEXT NOT NULL,
    status TEXT NOT NULL,
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    calls TEXT NOT NULL DEFAULT '[]',
    content_hash TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    verified_by TEXT,
    verified_at REAL,
    flags TEXT,
    stale_reason TEXT,
    vector BLOB
);
CREATE INDEX IF NOT EXISTS knowledge_by_project ON knowledge (project, status, kind);
CREATE INDEX IF NOT EXISTS knowledge_by_hash ON knowledge (project, content_hash);
CREATE TABLE IF NOT EXISTS knowledge_versions (
    project TEXT PRIMARY KEY,
    entries INTEGER NOT NULL,
    version INTEGER NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS knowledge_fts USING fts5 (
    name, body, tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS agent_tokens (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    prefix TEXT NOT NULL,
    scopes TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL,
    expires_at REAL,
    last_used_at REAL,
    revoked_at REAL
);
CREATE INDEX IF NOT EXISTS agent_tokens_by_owner ON agent_tokens (owner, created_at);
CREATE TABLE IF NOT EXISTS change_records (
    conversation_id TEXT NOT NULL,
    confirmation_id TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    mutation TEXT NOT NULL,
    input TEXT NOT NULL,
    turn_id TEXT,
    decided_by TEXT NOT NULL,
    decided_via TEXT NOT NULL,
    decided_at REAL NOT NULL,
    state TEXT NOT NULL,
    resolved_at REAL,
    PRIMARY KEY (conversation_id, confirmation_id, decided_at)
);
"""


class StoreVersionError(RuntimeError):
    """The database was written by a newer gmchat_nb whose schema this version cannot read."""


def apply_schema(connection: sqlite3.Connection, path: str) -> None:
    """Create what is missing of :data:`SCHEMA_VERSION` and stamp the file with it, inside the
    caller's transaction. A file of a newer version is a :class:`StoreVersionError` (``path``
    names it) and is left untouched."""
    version = int(connection.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise StoreVersionError(
            f"{path} has chat store schema version {version}; this gmchat_nb "
            f"reads version {SCHEMA_VERSION}. Upgrade gmchat_nb or use another file."
        )
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            connection.execute(statement)
    _add_columns(connection)
    connection.execute(
        "CREATE UNIQUE INDEX IF NOT EXISTS events_by_position ON events (conversation_id, position)"
    )
    connection.execute("CREATE INDEX IF NOT EXISTS turns_by_actor ON turns (actor_id, id)")
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


# versions 3's to 5's, 7's and 9's columns, added to tables an older version created
_COLUMNS: Final = {
    "conversations": {"project": "TEXT", "knowledge": "TEXT"},
    "confirmations": {"decided_by": "TEXT", "decided_via": "TEXT", "decided_at": "REAL"},
    "events": {"position": "INTEGER"},
    "turns": {
        "input_hash": "TEXT",
        "admitted_position": "INTEGER",
        "cancel_command": "TEXT",
        "input": "TEXT",
        "actor_id": "TEXT",
        "scope": "TEXT",
        "lease_expires_at": "REAL",
        "committed_sequence": "INTEGER",
    },
}


def _add_columns(connection: sqlite3.Connection) -> None:
    for table, columns in _COLUMNS.items():
        present = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
        for name, kind in columns.items():
            if name not in present:
                connection.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
    # events journaled before version 3: numbered per conversation in the order they were
    # written, which is the order a client saw them
    connection.execute(
        "UPDATE events SET position = (SELECT COUNT(*) FROM events f "
        "WHERE f.conversation_id = events.conversation_id AND f.id <= events.id) "
        "WHERE position IS NULL"
    )
    # turns written before version 5: their actor is their conversation's
    connection.execute(
        "UPDATE turns SET actor_id = (SELECT c.actor_id FROM conversations c "
        "WHERE c.id = turns.conversation_id) WHERE actor_id IS NULL"
    )
