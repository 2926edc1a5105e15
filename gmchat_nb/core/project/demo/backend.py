"""Build a running demo: a seeded SQLite database plus the GraphQL schema that serves it."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from types import TracebackType

from graphql import GraphQLSchema, assert_valid_schema

from .catalog import Catalog
from .schema import build_schema
from .spec import DemoSpec
from .store import Store

__all__ = ["DemoBackend", "build_demo"]


class DemoBackend:
    """A demo project ready to query: ``schema`` executes against ``connection``.

    ``exposed_managers`` and ``hidden_managers`` split the manager names (in spec order) by
    chat exposure; hidden managers are still in the schema, as on a real server, because chat
    exposure cannot be seen through GraphQL. Usable as a context manager that closes it.
    """

    def __init__(self, spec: DemoSpec, schema: GraphQLSchema, connection: sqlite3.Connection):
        self.spec = spec
        self.schema = schema
        self.connection = connection
        self.exposed_managers = tuple(m.name for m in spec.managers if m.exposed)
        self.hidden_managers = tuple(m.name for m in spec.managers if not m.exposed)

    def close(self) -> None:
        """Close the database connection; the schema's resolvers stop working."""
        self.connection.close()

    def __enter__(self) -> DemoBackend:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DemoBackend({self.spec.name!r}, managers={len(self.spec.managers)})"


def build_demo(spec: DemoSpec, *, path: str | os.PathLike[str] | None = None) -> DemoBackend:
    """Create the database for ``spec``, seed it and generate its schema.

    ``path=None`` keeps the database in memory; otherwise the file at ``path`` is replaced by a
    freshly seeded one. Raises :class:`ValueError` when the spec or its rows are inconsistent.
    """
    catalog = Catalog(spec)
    if path is not None:
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{os.fspath(path)}{suffix}").unlink(missing_ok=True)
    connection = sqlite3.connect(
        ":memory:" if path is None else os.fspath(path), check_same_thread=False
    )
    try:
        store = Store(catalog, connection)
        store.create_and_seed()
        schema = build_schema(catalog, store)
        # Validating here moves the one-off cost out of the first request and surfaces a bad
        # spec as an error of build_demo instead of every query.
        assert_valid_schema(schema)
    except BaseException:
        connection.close()
        raise
    return DemoBackend(spec, schema, connection)
