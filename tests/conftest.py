"""Shared fixtures: the demo project in process and behind a real `gmchat serve-demo` process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from graphql import GraphQLSchema, build_schema

import gmchat_nb
from gmchat_nb.core.project import Project

# GeneralManager 0.87.1's schema for a small inventory project; the file's header says how it
# was printed.
SAMPLE_SCHEMA = (
    Path(__file__).resolve().parent / "fixtures" / "generalmanager-sample-schema.graphql"
)
INVENTORY_EXPOSED = ["Material", "Supplier", "Part", "Project", "PurchaseOrder"]


class DemoServer:
    """A `gmchat serve-demo` subprocess and the URL it printed."""

    def __init__(self, *args: str) -> None:
        command = [sys.executable, "-m", "gmchat_nb.cli", "serve-demo", "--port", "0", *args]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        prefix = "GraphQL endpoint: "
        if not line.startswith(prefix):
            self.stop()
            raise RuntimeError(f"serve-demo printed {line!r}")
        self.url = line[len(prefix) :]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def serve(*args: str) -> Iterator[DemoServer]:
    server = DemoServer(*args)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def demo_server() -> Iterator[DemoServer]:
    """The inventory demo served over HTTP by the real CLI (read-only use: shared by tests)."""
    yield from serve()


@pytest.fixture(scope="session")
def token_server() -> Iterator[DemoServer]:
    """The inventory demo behind a bearer token."""
    yield from serve("--token", "s3cret-token")


@pytest.fixture(scope="session")
async def inventory() -> AsyncIterator[Project]:
    """The in-process inventory demo, shared by read-only tests."""
    project = gmchat_nb.demo_project()
    yield project
    await project.aclose()


@pytest.fixture(scope="session")
async def remote_inventory(demo_server: DemoServer) -> AsyncIterator[Project]:
    """The same demo reached over HTTP with `connect(url)`."""
    project = await gmchat_nb.connect(demo_server.url, exposed=INVENTORY_EXPOSED)
    yield project
    await project.aclose()


@pytest.fixture(params=["in_process", "http"])
def project(request: pytest.FixtureRequest, inventory: Project) -> Project:
    """Each read test runs against the demo in process and over HTTP."""
    if request.param == "in_process":
        return inventory
    remote: Project = request.getfixturevalue("remote_inventory")
    return remote


@pytest.fixture
async def writable() -> AsyncIterator[Project]:
    """A fresh in-process inventory demo that allows the Part, Project and PurchaseOrder writes."""
    allowed = [
        f"{verb}{name}"
        for verb in ("create", "update", "delete")
        for name in ("Part", "Project", "PurchaseOrder")
    ]
    project = gmchat_nb.demo_project(allowed_mutations=allowed)
    yield project
    await project.aclose()


@pytest.fixture(scope="session")
def sample_schema() -> GraphQLSchema:
    """The schema a real GeneralManager 0.87.1 server generates (tests/fixtures/)."""
    return build_schema(SAMPLE_SCHEMA.read_text())


# -- the chat store's two backends ------------------------------------------------------------


@pytest.fixture(scope="session")
def postgresql_server() -> Iterator[str]:
    """A PostgreSQL server's URL for the session (see tests/postgresql.py)."""
    from tests.postgresql import cluster, wait_until_ready

    with cluster() as url:
        wait_until_ready(url)
        yield url


@pytest.fixture
def postgresql_store(postgresql_server: str) -> Iterator[str]:
    """A ``postgresql://`` store URL with an empty schema of its own."""
    from tests.postgresql import fresh_schema

    with fresh_schema(postgresql_server) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store lives, once per backend: a SQLite file, then a PostgreSQL schema. Tests
    that take it run on both, so the backends keep one behaviour."""
    if request.param == "sqlite":
        return str(tmp_path / "chat.sqlite3")
    return str(request.getfixturevalue("postgresql_store"))
