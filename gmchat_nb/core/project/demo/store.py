"""The SQLite side of a demo: one table per manager, one join table per many-to-many relation.

Foreign keys are nullable columns ``<relation>_id`` declared ``ON DELETE SET NULL``; join-table
rows cascade away with either side, which matches a Django ``SET_NULL`` foreign key and a plain
many-to-many field. Constraints are deferred so seed rows may reference rows inserted later.
"""

from __future__ import annotations

import datetime
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from graphql import GraphQLError

from .catalog import Catalog, Column, ListLink, Model
from .spec import ToMany, ToOne
from .sql import Selection, storable_id

__all__ = ["DATABASE_ERROR", "Row", "Store"]

# What a client hears when SQLite refuses a statement: its own words name the engine and its limits,
# which a GeneralManager server (on another database) would never say.
DATABASE_ERROR = "The request could not be carried out."
# Ids per ``IN (...)`` look-up: far below SQLite's limit on parameters per statement.
_ID_CHUNK = 500

Row = dict[str, Any]
"""One table row keyed by SQL column name (``id``, ``unit_price``, ``material_id``)."""

_AFFINITY = {
    "str": "TEXT",
    "int": "INTEGER",
    "float": "REAL",
    "bool": "INTEGER",
    "date": "TEXT",
    "measurement": "REAL",
}


class Store:
    """Reads and writes rows of a :class:`Catalog` in one SQLite connection.

    A lock serializes access because the connection is shared across threads
    (``check_same_thread=False``) and a mutation spans several statements.
    """

    def __init__(self, catalog: Catalog, connection: sqlite3.Connection) -> None:
        self.catalog = catalog
        self.connection = connection
        self.lock = threading.RLock()

    @contextmanager
    def _database(self) -> Iterator[sqlite3.Connection]:
        """The connection, under the lock; a database failure becomes a GraphQL error."""
        with self.lock:
            try:
                yield self.connection
            except (sqlite3.Error, OverflowError) as error:
                raise GraphQLError(
                    DATABASE_ERROR, extensions={"code": "INTERNAL_SERVER_ERROR"}
                ) from error

    def create_and_seed(self) -> None:
        """Create every table and insert the spec's rows; :class:`ValueError` on bad seed data."""
        known_ids = {
            name: {row.get("id") for row in model.spec.rows}
            for name, model in self.catalog.models.items()
        }
        inserts = [
            _seed_statements(self.catalog, model, known_ids)
            for model in self.catalog.models.values()
        ]
        with self.lock:
            self.connection.execute("PRAGMA foreign_keys = ON")
            self.connection.executescript(";\n".join(_ddl(self.catalog)))
            with self.connection:
                for statements in inserts:
                    for sql, rows in statements:
                        self.connection.executemany(sql, rows)

    def page(
        self, model: Model, selection: Selection, limit: int, offset: int
    ) -> tuple[int, list[Row]]:
        """The total number of matching rows and the rows of one ordered slice."""
        base = f'FROM "{model.table}" t0 WHERE {selection.where}'
        with self._database() as connection:
            (total,) = connection.execute(f"SELECT COUNT(*) {base}", selection.params).fetchone()
            cursor = connection.execute(
                f"SELECT t0.* {base} ORDER BY {selection.order} LIMIT ? OFFSET ?",
                [*selection.params, limit, offset],
            )
            return int(total), _rows(cursor)

    def get(self, model: Model, row_id: int | None) -> Row | None:
        """The row with ``row_id``, or ``None``."""
        if row_id is None or not storable_id(row_id):
            return None
        with self._database() as connection:
            cursor = connection.execute(f'SELECT * FROM "{model.table}" WHERE id = ?', [row_id])
            rows = _rows(cursor)
        return rows[0] if rows else None

    def missing(self, model: Model, ids: Iterable[int]) -> list[int]:
        """Those of ``ids`` that have no row, in the given order."""
        wanted = list(dict.fromkeys(ids))
        storable = [row_id for row_id in wanted if storable_id(row_id)]
        found: set[int] = set()
        with self._database() as connection:
            for start in range(0, len(storable), _ID_CHUNK):
                chunk = storable[start : start + _ID_CHUNK]
                marks = ", ".join("?" * len(chunk))
                cursor = connection.execute(
                    f'SELECT id FROM "{model.table}" WHERE id IN ({marks})', chunk
                )
                found.update(row[0] for row in cursor)
        return [row_id for row_id in wanted if row_id not in found]

    def next_id(self, model: Model) -> int:
        """The id a new row gets: one more than the largest id so far."""
        with self._database() as connection:
            (top,) = connection.execute(f'SELECT MAX(id) FROM "{model.table}"').fetchone()
        return int(top or 0) + 1

    def write(
        self,
        model: Model,
        row_id: int,
        values: Mapping[str, object],
        lists: Mapping[ListLink, list[int]],
        *,
        insert: bool,
    ) -> None:
        """Insert or update one row and replace the given many-to-many lists, atomically."""
        columns = list(values)
        with self._database(), self.connection:
            if insert:
                names = ", ".join(f'"{column}"' for column in ["id", *columns])
                marks = ", ".join("?" * (len(columns) + 1))
                self.connection.execute(
                    f'INSERT INTO "{model.table}" ({names}) VALUES ({marks})',
                    [row_id, *values.values()],
                )
            elif columns:
                assignments = ", ".join(f'"{column}" = ?' for column in columns)
                self.connection.execute(
                    f'UPDATE "{model.table}" SET {assignments} WHERE id = ?',
                    [*values.values(), row_id],
                )
            for link, ids in lists.items():
                self.connection.execute(f'DELETE FROM "{link.table}" WHERE source_id = ?', [row_id])
                self.connection.executemany(
                    f'INSERT INTO "{link.table}" (source_id, target_id) VALUES (?, ?)',
                    [(row_id, target_id) for target_id in dict.fromkeys(ids)],
                )

    def delete(self, model: Model, row_id: int) -> None:
        """Delete one row; references to it become NULL and its list entries disappear."""
        with self._database(), self.connection:
            self.connection.execute(f'DELETE FROM "{model.table}" WHERE id = ?', [row_id])


def _rows(cursor: sqlite3.Cursor) -> list[Row]:
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def _ddl(catalog: Catalog) -> list[str]:
    statements = []
    for model in catalog.models.values():
        columns = ["id INTEGER PRIMARY KEY"] + [
            f'"{column.field}" {_AFFINITY[column.kind]}'
            for column in model.columns
            if column.kind != "id"
        ]
        for link in model.to_one:
            target = catalog[link.target].table
            columns.append(
                f'"{link.column}" INTEGER REFERENCES "{target}"(id) '
                "ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED"
            )
        statements.append(f'CREATE TABLE "{model.table}" ({", ".join(columns)})')
        for _, list_link in model.declared_lists():
            target = catalog[list_link.target].table
            statements.append(
                f'CREATE TABLE "{list_link.table}" ('
                f'source_id INTEGER NOT NULL REFERENCES "{model.table}"(id) '
                "ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, "
                f'target_id INTEGER NOT NULL REFERENCES "{target}"(id) '
                "ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED, "
                "PRIMARY KEY (source_id, target_id))"
            )
    return statements


def _seed_statements(
    catalog: Catalog, model: Model, known_ids: Mapping[str, set[object]]
) -> list[tuple[str, list[list[object]]]]:
    """INSERT statements with their parameter rows, after checking every seed value."""
    columns = [column for column in model.columns if column.kind != "id"]
    names = ["id"] + [column.field for column in columns] + [link.column for link in model.to_one]
    known = {*names[1:], *(relation.name for relation in model.spec.relations)} - {
        link.column for link in model.to_one
    }
    ids = [_row_id(model, row) for row in model.spec.rows]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{model.name}: seed rows repeat an id")
    table_rows: list[list[object]] = []
    join_rows: dict[str, list[list[object]]] = {}
    for row_id, row in zip(ids, model.spec.rows, strict=True):
        where = f"{model.name} row {row_id}"
        unknown = set(row) - known - {"id"}
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
        values: list[object] = [row_id]
        for column in columns:
            default = column.spec.default if column.spec else None
            values.append(_storage_value(column, row.get(column.field, default), where))
        for relation in model.spec.relations:
            target = catalog[relation.target]
            if isinstance(relation, ToOne):
                target_id = row.get(relation.name)
                _check_targets(target, known_ids, [] if target_id is None else [target_id], where)
                values.append(target_id)
            elif isinstance(relation, ToMany):
                target_ids = list(_as_ids(row.get(relation.name, []), where))
                _check_targets(target, known_ids, target_ids, where)
                table = f"{model.table}__{relation.name}"
                join_rows.setdefault(table, [])
                join_rows[table] += [[row_id, target_id] for target_id in dict.fromkeys(target_ids)]
        table_rows.append(values)
    quoted = ", ".join(f'"{name}"' for name in names)
    marks = ", ".join("?" * len(names))
    statements = [(f'INSERT INTO "{model.table}" ({quoted}) VALUES ({marks})', table_rows)]
    for table, rows in join_rows.items():
        statements.append((f'INSERT INTO "{table}" (source_id, target_id) VALUES (?, ?)', rows))
    return statements


def _row_id(model: Model, row: Mapping[str, object]) -> int:
    row_id = row.get("id")
    if not isinstance(row_id, int) or isinstance(row_id, bool) or row_id < 1:
        raise ValueError(f"{model.name}: every seed row needs a positive int 'id', got {row_id!r}")
    return row_id


def _as_ids(value: object, where: str) -> Iterable[object]:
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{where}: a to-many value must be a list of ids")
    return value


def _check_targets(
    target: Model, known_ids: Mapping[str, set[object]], ids: list[object], where: str
) -> None:
    for target_id in ids:
        if not isinstance(target_id, int) or target_id not in known_ids[target.name]:
            raise ValueError(f"{where}: no {target.name} with id {target_id!r}")


def _storage_value(column: Column, value: object, where: str) -> object:
    """A seed value in its SQLite form; :class:`ValueError` when it does not fit the type."""
    kind = column.kind
    if value is None or (kind == "str" and isinstance(value, str)):
        return value
    # bool is an int subclass, so True must not pass as a number.
    if not isinstance(value, bool) and isinstance(value, (int, float)):
        if kind == "int" and isinstance(value, int):
            return value
        if kind in ("float", "measurement"):
            return float(value)
    if kind == "bool" and isinstance(value, bool):
        return int(value)
    if kind == "date" and isinstance(value, (str, datetime.date)):
        if isinstance(value, datetime.datetime):
            value = value.date()
        try:
            return datetime.date.fromisoformat(str(value)).isoformat()
        except ValueError:
            pass
    raise ValueError(f"{where}: {column.field}={value!r} does not fit type {kind}")
