"""The knowledge tests' store (on SQLite, then PostgreSQL) and projects."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

import gmchat_nb
from gmchat_nb.core.project import Project
from gmchat_nb.core.store import ChatStore


@pytest.fixture
def store(store_location: str) -> Iterator[ChatStore]:
    """A fresh store, once per backend."""
    with ChatStore(store_location) as opened:
        yield opened


@pytest.fixture
async def demo() -> AsyncIterator[Project]:
    """The inventory demo in process, fresh for the test."""
    project = gmchat_nb.demo_project()
    project.identity = "demo:inventory"
    yield project
    await project.aclose()
