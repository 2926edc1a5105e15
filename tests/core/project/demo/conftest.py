"""Shared fixtures: a read-only inventory demo per session and a fresh one for writes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gmchat_nb.core.project.demo import DemoBackend, build_demo, inventory_spec


@pytest.fixture(scope="session")
def inventory() -> Iterator[DemoBackend]:
    """The inventory demo; tests using it must not mutate data."""
    with build_demo(inventory_spec()) as backend:
        yield backend


@pytest.fixture
def fresh_inventory() -> Iterator[DemoBackend]:
    """A private inventory demo that a test may change."""
    with build_demo(inventory_spec()) as backend:
        yield backend
