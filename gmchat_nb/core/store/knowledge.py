"""The knowledge table: verified queries, definitions and notes, each scoped by project and owner.

Every statement names the project and the reader in its ``WHERE`` clause, so no caller can read,
change or delete another user's personal entry by forgetting a filter: an entry is visible when
it belongs to the project and is shared, or is the reader's own. A personal entry is written only
by its owner; a shared one only by a caller the surface's permission says may write shared
entries (``may_share``). An entry, its full-text row and its vector go in one transaction and
leave in one: a removed entry is found by neither search.

Full text is SQLite FTS5 (``knowledge_fts``, its rowid the entry's ``seq``; Porter stemming) or
PostgreSQL's ``tsvector`` column ``words`` (English stemming, a GIN index). Search terms are
handed in already split into words (:mod:`gmchat_nb.core.knowledge.terms`): raw text is never
part of a ``MATCH`` or a ``tsquery``. Every write also counts itself in ``knowledge_versions``
(one row a project), the mark a process's cached vectors are checked against before a recall.

Over 400 lines: every statement over the table, its full-text index and its version row, so the
scoping clauses are written once and read side by side.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .database import Database, Statements

__all__ = ["KNOWLEDGE_COLUMNS", "KnowledgeRecord", "KnowledgeRows"]

KNOWLEDGE_COLUMNS: Final = (
    "id, project, owner, kind, scope, status, name, body, calls, content_hash, created_by, "
    "created_at, updated_at, verified_by, verified_at, flags, stale_reason"
)
_VISIBLE: Final = "project = ? AND (scope = 'shared' OR owner = ?)"
# the same, for SQLite statements that name their entries by id: the unary plus keeps SQLite
# from answering ``project = ?`` with a project index (without statistics it takes an equality
# for ten rows, fewer than twenty ids), which read every entry of the project instead of twenty
_VISIBLE_BY_ID: Final = "+project = ? AND (scope = 'shared' OR owner = ?)"
# SQLite's full-text search (_fts_search): how many matches, per one asked for, the index ranks
# before they are scoped, once the index has more than _SMALL_INDEX entries
_RANKED_FIRST: Final = 5
_SMALL_INDEX: Final = 2000
_WRITABLE: Final = (
    "project = ? AND ((scope = 'personal' AND owner = ?) OR (scope = 'shared' AND ? = 1))"
)


@dataclass(frozen=True, slots=True)
class KnowledgeRecord:
    """One stored entry (``calls`` decoded; ``flags`` the scorer's reasons a person confirmed)."""

    id: str
    project: str
    owner: str
    kind: str
    scope: str
    status: str
    name: str
    body: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    content_hash: str = ""
    created_by: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0
    verified_by: str | None = None
    verified_at: float | None = None
    flags: list[str] = field(default_factory=list)
    stale_reason: str | None = None


def _record(row: Any) -> KnowledgeRecord:
    return KnowledgeRecord(
        id=row["id"],
        project=row["project"],
        owner=row["owner"],
        kind=row["kind"],
        scope=row["scope"],
        status=row["status"],
        name=row["name"],
        body=row["body"],
        calls=json.loads(row["calls"] or "[]"),
        content_hash=row["content_hash"],
        created_by=row["created_by"],
        created_at=float(row["created_at"]),
        updated_at=float(row["updated_at"]),
        verified_by=row["verified_by"],
        verified_at=None if row["verified_at"] is None else float(row["verified_at"]),
        flags=json.loads(row["flags"]) if row["flags"] else [],
        stale_reason=row["stale_reason"],
    )


def _twin(connection: Statements, record: KnowledgeRecord) -> KnowledgeRecord | None:
    """The first entry ``record``'s owner sees in its project with the same content."""
    row = connection.execute(
        f"SELECT {KNOWLEDGE_COLUMNS} FROM knowledge WHERE {_VISIBLE} "
        "AND content_hash = ? ORDER BY seq LIMIT 1",
        (record.project, record.owner, record.content_hash),
    ).fetchone()
    return None if row is None else _record(row)


def _flag(value: bool) -> int:
    return 1 if value else 0


class KnowledgeRows(Database):
    """The :class:`~gmchat_nb.core.store.ChatStore` methods over knowledge entries."""

    def add_knowledge(
        self, record: KnowledgeRecord, vector: bytes | None = None
    ) -> KnowledgeRecord | None:
        """Insert ``record`` (with its ``vector``, float32 bytes) unless an entry with the same
        content hash is visible to its owner in its project: that entry is returned instead and
        nothing is written. ``None`` when the record was stored."""
        with self._write() as connection:
            existing = _twin(connection, record)
            if existing is not None:
                return existing
            self._insert(connection, record, vector)
            self._changed(connection, record.project, 1)
        return None

    def add_knowledge_many(
        self, records: Sequence[tuple[KnowledgeRecord, bytes | None]]
    ) -> list[KnowledgeRecord]:
        """Insert every record in one transaction (an import: all or nothing), skipping those
        whose content an entry visible to its owner already has; returns the skipped ones' stored
        twins, in order."""
        skipped: list[KnowledgeRecord] = []
        added: dict[str, int] = {}
        with self._write() as connection:
            for record, vector in records:
                existing = _twin(connection, record)
                if existing is not None:
                    skipped.append(existing)
                else:
                    self._insert(connection, record, vector)
                    added[record.project] = added.get(record.project, 0) + 1
            for project, count in added.items():
                self._changed(connection, project, count)
        return skipped

    def _insert(
        self, connection: Statements, record: KnowledgeRecord, vector: bytes | None
    ) -> None:
        connection.execute(
            "INSERT INTO knowledge (id, project, owner, kind, scope, status, name, body, calls, "
            "content_hash, created_by, created_at, updated_at, verified_by, verified_at, flags, "
            "stale_reason, vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.id,
                record.project,
                record.owner,
                record.kind,
                record.scope,
                record.status,
                record.name,
                record.body,
                json.dumps(record.calls, ensure_ascii=False),
                record.content_hash,
                record.created_by,
                record.created_at,
                record.updated_at,
                record.verified_by,
                record.verified_at,
                json.dumps(record.flags) if record.flags else None,
                record.stale_reason,
                vector,
            ),
        )
        if self.backend == "sqlite":
            connection.execute(
                "INSERT INTO knowledge_fts (rowid, name, body) "
                "SELECT seq, name, body FROM knowledge WHERE id = ?",
                (record.id,),
            )

    def knowledge_entry(self, project: str, owner: str, entry_id: str) -> KnowledgeRecord | None:
        """The entry ``entry_id`` when ``owner`` may see it in ``project``, else ``None`` (an
        entry of another user's is as absent as one that never was)."""
        rows = self._read(
            f"SELECT {KNOWLEDGE_COLUMNS} FROM knowledge WHERE {_VISIBLE} AND id = ?",
            (project, owner, entry_id),
        )
        return _record(rows[0]) if rows else None

    def knowledge_with_hashes(
        self, project: str, owner: str, hashes: Iterable[str]
    ) -> dict[str, KnowledgeRecord]:
        """Content hash -> the first entry ``owner`` may see in ``project`` with that content."""
        wanted = sorted(set(hashes))
        found: dict[str, KnowledgeRecord] = {}
        for start in range(0, len(wanted), 500):  # bounded statements, whatever the file's size
            chunk = wanted[start : start + 500]
            rows = self._read(
                f"SELECT {KNOWLEDGE_COLUMNS} FROM knowledge WHERE {_VISIBLE} "
                f"AND content_hash IN ({', '.join('?' * len(chunk))}) ORDER BY seq",
                (project, owner, *chunk),
            )
            for row in rows:
                found.setdefault(row["content_hash"], _record(row))
        return found

    def knowledge_entries(
        self,
        project: str,
        owner: str,
        *,
        kinds: Iterable[str] | None = None,
        statuses: Iterable[str] | None = None,
        ids: Iterable[str] | None = None,
    ) -> list[KnowledgeRecord]:
        """The entries ``owner`` may see in ``project``, oldest first, narrowed to ``kinds``,
        ``statuses`` and ``ids`` when given."""
        by_id = ids is not None and self.backend == "sqlite"
        clauses = [_VISIBLE_BY_ID if by_id else _VISIBLE]
        values: list[Any] = [project, owner]
        for column, wanted in (("kind", kinds), ("status", statuses), ("id", ids)):
            if wanted is not None:
                chosen = list(wanted)
                if not chosen:
                    return []
                clauses.append(f"{column} IN ({', '.join('?' * len(chosen))})")
                values.extend(chosen)
        rows = self._read(
            f"SELECT {KNOWLEDGE_COLUMNS} FROM knowledge WHERE {' AND '.join(clauses)} ORDER BY seq",
            tuple(values),
        )
        return [_record(row) for row in rows]

    def update_knowledge(
        self,
        project: str,
        owner: str,
        entry_id: str,
        *,
        may_share: bool,
        changes: dict[str, Any],
        vector: bytes | None = None,
        revector: bool = False,
    ) -> bool:
        """Change an entry ``owner`` may write (``changes``: column -> value; ``calls`` and
        ``flags`` as Python values), its full-text row with it (and its vector when
        ``revector``); False when there is no such entry it may write."""
        allowed = {
            "name",
            "body",
            "calls",
            "status",
            "scope",
            "content_hash",
            "updated_at",
            "verified_by",
            "verified_at",
            "flags",
            "stale_reason",
        }
        unknown = set(changes) - allowed
        if unknown:
            raise ValueError(f"knowledge has no writable column {sorted(unknown)[0]!r}")
        encoded = dict(changes)
        if "calls" in encoded:
            encoded["calls"] = json.dumps(encoded["calls"], ensure_ascii=False)
        if "flags" in encoded:
            encoded["flags"] = json.dumps(encoded["flags"]) if encoded["flags"] else None
        if revector:
            encoded["vector"] = vector
        if not encoded:
            return self.knowledge_entry(project, owner, entry_id) is not None
        assignments = ", ".join(f"{column} = ?" for column in encoded)
        with self._write() as connection:
            changed = connection.execute(
                f"UPDATE knowledge SET {assignments} WHERE {_WRITABLE} AND id = ?",
                (*encoded.values(), project, owner, _flag(may_share), entry_id),
            ).rowcount
            if changed and self.backend == "sqlite" and {"name", "body"} & set(changes):
                self._reindex(connection, [entry_id])
            if changed:
                self._changed(connection, project, 0)
        return bool(changed)

    def _reindex(self, connection: Statements, ids: Sequence[str]) -> None:
        marks = ", ".join("?" * len(ids))
        connection.execute(
            f"DELETE FROM knowledge_fts WHERE rowid IN (SELECT seq FROM knowledge "
            f"WHERE id IN ({marks}))",
            tuple(ids),
        )
        connection.execute(
            f"INSERT INTO knowledge_fts (rowid, name, body) SELECT seq, name, body "
            f"FROM knowledge WHERE id IN ({marks})",
            tuple(ids),
        )

    def remove_knowledge(self, project: str, owner: str, entry_id: str, *, may_share: bool) -> bool:
        """Delete an entry ``owner`` may write, with its full-text row and its vector; False
        when there is no such entry it may write."""
        where = f"{_WRITABLE} AND id = ?"
        return self._remove(project, where, (project, owner, _flag(may_share), entry_id)) > 0

    def remove_owned_knowledge(self, project: str, owner: str, *, may_share: bool) -> int:
        """Delete every entry ``owner`` wrote in ``project`` that it may write (its shared ones
        only with ``may_share``); another user's entries are never touched. Returns the count."""
        return self._remove(
            project,
            "project = ? AND owner = ? AND (scope = 'personal' OR ? = 1)",
            (project, owner, _flag(may_share)),
        )

    def _remove(self, project: str, where: str, values: tuple[Any, ...]) -> int:
        with self._write() as connection:
            if self.backend == "sqlite":
                connection.execute(
                    f"DELETE FROM knowledge_fts WHERE rowid IN (SELECT seq FROM knowledge "
                    f"WHERE {where})",
                    values,
                )
            removed = connection.execute(f"DELETE FROM knowledge WHERE {where}", values).rowcount
            if removed and self.backend == "sqlite":
                # this SQLite has no secure-delete: merge the index so the text leaves it now
                connection.execute("INSERT INTO knowledge_fts (knowledge_fts) VALUES ('optimize')")
            if removed:
                self._changed(connection, project, -int(removed))
        return int(removed)

    def _changed(self, connection: Statements, project: str, entries: int) -> None:
        """Count a write to ``project``'s entries (``entries`` of them added, or removed when
        negative) in ``knowledge_versions``, in the writer's transaction: see
        :meth:`knowledge_version`."""
        connection.execute(
            "INSERT INTO knowledge_versions (project, entries, version) VALUES (?, ?, 1) "
            "ON CONFLICT (project) DO UPDATE SET "
            "entries = knowledge_versions.entries + excluded.entries, "
            "version = knowledge_versions.version + 1",
            (project, entries),
        )

    def search_knowledge_words(
        self, project: str, owner: str, terms: Sequence[str], *, limit: int
    ) -> list[tuple[str, float]]:
        """Active entries ``owner`` may see whose words match any of ``terms`` (word tokens,
        already split and cleaned), best first, as ``(id, score)`` with higher scores better."""
        if not terms:
            return []
        if self.backend == "sqlite":
            match = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
            rows = self._fts_search(match, project, owner, limit)
            return [(row[0], -float(row[1])) for row in rows]
        query = " | ".join(term.replace("'", "") for term in terms)
        rows = self._read(
            "SELECT id, ts_rank(words, q) AS rank FROM knowledge, "
            "to_tsquery('english', ?) AS q WHERE words @@ q AND project = ? "
            "AND (scope = 'shared' OR owner = ?) AND status = 'active' "
            "ORDER BY rank DESC LIMIT ?",
            (query, project, owner, limit),
        )
        return [(row[0], float(row[1])) for row in rows]

    def _fts_search(self, match: str, project: str, owner: str, limit: int) -> list[Any]:
        """SQLite's full-text search: ``(id, bm25)`` of the best ``limit`` visible matches.

        A common word matches tens of thousands of entries, and joining every match to its row
        (a wide one: the vector is inline) cost more than ranking them all (at 100,000 entries
        and 39,000 matches: 64 ms, of which ranking 25). So in a big table the index ranks
        first and only its best ``_RANKED_FIRST`` times ``limit`` are scoped; when fewer than
        ``limit`` of those are visible and there were more matches, all are scoped. Ordered by
        rank then seq both ways, so the answer is the same. A small table joins every match at
        once (cheaper there)."""
        ranked = "SELECT rowid, bm25(knowledge_fts, 2.0, 1.0) AS rank FROM knowledge_fts "
        scoped = (
            "AS f JOIN knowledge k ON k.seq = f.rowid WHERE k.project = ? "
            "AND (k.scope = 'shared' OR k.owner = ?) AND k.status = 'active' "
            "ORDER BY f.rank, k.seq LIMIT ?"
        )
        values = (match, project, owner, limit)
        first = limit * _RANKED_FIRST
        largest = self._read("SELECT COALESCE(MAX(rowid), 0) FROM knowledge_fts", ())[0][0]
        if int(largest) > _SMALL_INDEX:
            rows = self._read(
                f"SELECT k.id, f.rank FROM ({ranked} WHERE knowledge_fts MATCH ? "
                f"ORDER BY rank, rowid LIMIT {first}) {scoped}",
                values,
            )
            if len(rows) >= limit:
                return rows
            matches = self._read(
                "SELECT COUNT(*) FROM knowledge_fts WHERE knowledge_fts MATCH ?", (match,)
            )[0][0]
            if int(matches) <= first:
                return rows
        return self._read(
            f"SELECT k.id, f.rank FROM ({ranked} WHERE knowledge_fts MATCH ?) {scoped}", values
        )

    def knowledge_vectors(self, project: str, owner: str) -> list[tuple[str, bytes]]:
        """``(id, vector)`` of every active entry ``owner`` may see that has a vector."""
        rows = self._read(
            f"SELECT id, vector FROM knowledge WHERE {_VISIBLE} AND status = 'active' "
            "AND vector IS NOT NULL ORDER BY seq",
            (project, owner),
        )
        return [(row[0], bytes(row[1])) for row in rows]

    def knowledge_version(self, project: str) -> tuple[int, int]:
        """``(entries, version)``: how many entries ``project`` has (0: none) and a number that
        every write to them raises, for caches of their vectors (any process's). One row of
        ``knowledge_versions``, kept by every write here in its own transaction: counting and
        dating the entries themselves on each recall read every row (9 ms at 10,000 entries,
        140 ms at 100,000)."""
        rows = self._read(
            "SELECT entries, version FROM knowledge_versions WHERE project = ?", (project,)
        )
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)
