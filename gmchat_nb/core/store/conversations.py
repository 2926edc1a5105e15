"""The conversations table: creating, listing, renaming and deleting conversations, and the
summary each one carries."""

from __future__ import annotations

import uuid
from typing import Final

from .database import Database, Row, Statements, time_or_now
from .records import ConversationRecord

__all__ = ["Conversations", "require_conversation", "touch"]

_COLUMNS: Final = (
    "c.id, c.actor_id, c.title, c.created_at, c.updated_at, c.summary, c.summarized_through, "
    "c.project, c.knowledge, "
    "(SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS message_count"
)


def _conversation(row: Row) -> ConversationRecord:
    return ConversationRecord(
        id=row["id"],
        actor_id=row["actor_id"],
        title=row["title"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        summary=row["summary"],
        summarized_through=row["summarized_through"],
        message_count=row["message_count"],
        project=row["project"],
        knowledge=row["knowledge"],
    )


def touch(connection: Statements, conversation_id: str, at: float) -> None:
    """Move the conversation's ``updated_at`` forward to ``at``; an unknown one is a
    ``KeyError``."""
    touched = connection.execute(
        "UPDATE conversations SET updated_at = CASE WHEN updated_at < ? THEN ? "
        "ELSE updated_at END WHERE id = ?",
        (at, at, conversation_id),
    )
    if touched.rowcount == 0:
        raise KeyError(conversation_id)


def require_conversation(connection: Statements, conversation_id: str) -> None:
    """A ``KeyError`` unless the conversation exists."""
    exists = connection.execute(
        "SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)
    ).fetchone()
    if exists is None:
        raise KeyError(conversation_id)


class Conversations(Database):
    """The :class:`~gmchat_nb.core.store.ChatStore` methods over whole conversations."""

    def create_conversation(
        self, actor_id: str, title: str = "", *, now: float | None = None
    ) -> ConversationRecord:
        """A new, empty conversation owned by ``actor_id``."""
        at = time_or_now(now)
        record = ConversationRecord(uuid.uuid4().hex, actor_id, title, at, at, None, None, 0)
        with self._write() as connection:
            connection.execute(
                "INSERT INTO conversations (id, actor_id, title, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (record.id, actor_id, title, at, at),
            )
        return record

    def conversation(self, conversation_id: str) -> ConversationRecord | None:
        """The conversation with this id, or ``None``."""
        rows = self._read(
            f"SELECT {_COLUMNS} FROM conversations c WHERE c.id = ?", (conversation_id,)
        )
        return _conversation(rows[0]) if rows else None

    def conversations(self, actor_id: str) -> list[ConversationRecord]:
        """The actor's conversations, most recently updated first."""
        rows = self._read(
            f"SELECT {_COLUMNS} FROM conversations c WHERE c.actor_id = ? "
            "ORDER BY c.updated_at DESC, c.created_at DESC, c.rowid DESC",
            (actor_id,),
        )
        return [_conversation(row) for row in rows]

    def rename_conversation(self, conversation_id: str, title: str) -> None:
        """Set the title. An unknown id is a ``KeyError``."""
        with self._write() as connection:
            cursor = connection.execute(
                "UPDATE conversations SET title = ? WHERE id = ?", (title, conversation_id)
            )
            if cursor.rowcount == 0:
                raise KeyError(conversation_id)

    def delete_conversation(self, conversation_id: str) -> bool:
        """Delete the conversation with its messages, events and confirmations. ``False`` when
        there was no such conversation."""
        with self._write() as connection:
            cursor = connection.execute(
                "DELETE FROM conversations WHERE id = ?", (conversation_id,)
            )
            return cursor.rowcount == 1

    def conversation_knowledge(self, conversation_id: str) -> str | None:
        """The conversation's own recall mode (``None``: as the settings say, or no such
        conversation)."""
        rows = self._read("SELECT knowledge FROM conversations WHERE id = ?", (conversation_id,))
        return rows[0][0] if rows else None

    def set_conversation_knowledge(self, conversation_id: str, mode: str | None) -> None:
        """Switch recall for one conversation (``None``: as the settings say). An unknown id is
        a ``KeyError``."""
        with self._write() as connection:
            cursor = connection.execute(
                "UPDATE conversations SET knowledge = ? WHERE id = ?", (mode, conversation_id)
            )
            if cursor.rowcount == 0:
                raise KeyError(conversation_id)

    def set_summary(self, conversation_id: str, text: str, through_message_id: int) -> None:
        """Record a summary covering every message up to and including ``through_message_id``.

        An unknown conversation is a ``KeyError``; a message of another conversation (or none) is a
        ``ValueError``.
        """
        with self._write() as connection:
            owner = connection.execute(
                "SELECT conversation_id FROM messages WHERE id = ?", (through_message_id,)
            ).fetchone()
            cursor = connection.execute(
                "UPDATE conversations SET summary = ?, summarized_through = ? WHERE id = ?",
                (text, through_message_id, conversation_id),
            )
            if cursor.rowcount == 0:
                raise KeyError(conversation_id)
            if owner is None or owner[0] != conversation_id:
                raise ValueError(
                    f"message {through_message_id} is not in conversation {conversation_id}"
                )
