"""The agent_tokens table: the credentials a person gives an agent for the MCP route.

A row holds the token's SHA-256 (never the token), its owner (the person, as the Jupyter user
name), a name the person chose, the first characters to recognise it by, its scopes, and when it
was made, expires, was last used and was revoked. Every statement but the lookup by hash names
the owner in its ``WHERE`` clause, so one person can neither list nor revoke another's tokens.
A revoked token keeps its row (the person sees what happened); ``cleanup`` does not touch it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .database import Database

__all__ = ["AgentTokenRecord", "AgentTokenRows"]

_COLUMNS: Final = (
    "id, owner, name, prefix, scopes, created_at, expires_at, last_used_at, revoked_at"
)
LAST_USED_STEP: Final = 60.0
"""Seconds between two writes of a token's ``last_used_at``: an agent's every request must not
be a write transaction."""


@dataclass(frozen=True, slots=True)
class AgentTokenRecord:
    """One stored agent token (its hash stays in the store)."""

    id: str
    owner: str
    name: str
    prefix: str
    scopes: tuple[str, ...]
    created_at: float
    expires_at: float | None
    last_used_at: float | None
    revoked_at: float | None

    def state(self, now: float) -> str:
        """``revoked``, ``expired`` or ``active`` at ``now``."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"


def _record(row: tuple[object, ...]) -> AgentTokenRecord:
    def when(value: object) -> float | None:
        return None if value is None else float(str(value))

    return AgentTokenRecord(
        id=str(row[0]),
        owner=str(row[1]),
        name=str(row[2]),
        prefix=str(row[3]),
        scopes=tuple(part for part in str(row[4]).split(",") if part),
        created_at=float(str(row[5])),
        expires_at=when(row[6]),
        last_used_at=when(row[7]),
        revoked_at=when(row[8]),
    )


class AgentTokenRows(Database):
    """The :class:`~gmchat_nb.core.store.ChatStore` methods over agent tokens."""

    def add_agent_token(self, record: AgentTokenRecord, token_hash: str) -> None:
        """Store a new token under its hash."""
        with self._write() as connection:
            connection.execute(
                f"INSERT INTO agent_tokens ({_COLUMNS}, token_hash) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.id,
                    record.owner,
                    record.name,
                    record.prefix,
                    ",".join(record.scopes),
                    record.created_at,
                    record.expires_at,
                    record.last_used_at,
                    record.revoked_at,
                    token_hash,
                ),
            )

    def agent_tokens(self, owner: str) -> list[AgentTokenRecord]:
        """The owner's tokens, newest first (revoked and expired ones too)."""
        rows = self._read(
            f"SELECT {_COLUMNS} FROM agent_tokens WHERE owner = ? ORDER BY created_at DESC, id",
            (owner,),
        )
        return [_record(tuple(row)) for row in rows]

    def agent_token_by_hash(self, token_hash: str) -> AgentTokenRecord | None:
        """The token stored under ``token_hash``, whatever its state."""
        rows = self._read(
            f"SELECT {_COLUMNS} FROM agent_tokens WHERE token_hash = ?", (token_hash,)
        )
        return _record(tuple(rows[0])) if rows else None

    def agent_token_used(self, record: AgentTokenRecord, at: float) -> None:
        """Note that the token was used at ``at`` (at most one write a minute per token: a
        record read less than a minute after its last use opens no write transaction)."""
        if record.last_used_at is not None and record.last_used_at >= at - LAST_USED_STEP:
            return
        token_id = record.id
        with self._write() as connection:
            connection.execute(
                "UPDATE agent_tokens SET last_used_at = ? WHERE id = ? "
                "AND (last_used_at IS NULL OR last_used_at < ?)",
                (at, token_id, at - LAST_USED_STEP),
            )

    def revoke_agent_token(self, owner: str, token_id: str, at: float) -> AgentTokenRecord | None:
        """Revoke the owner's token ``token_id`` (already revoked: unchanged); None when the owner
        has no token of that id."""
        with self._write() as connection:
            connection.execute(
                "UPDATE agent_tokens SET revoked_at = ? WHERE id = ? AND owner = ? "
                "AND revoked_at IS NULL",
                (at, token_id, owner),
            )
            row = connection.execute(
                f"SELECT {_COLUMNS} FROM agent_tokens WHERE id = ? AND owner = ?",
                (token_id, owner),
            ).fetchone()
        return _record(tuple(row)) if row is not None else None
