"""Fixtures: a pytest-jupyter server with the gmchat extension, a scripted provider, the demo."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml
from pytest_jupyter.jupyter_server import *  # noqa: F403  (the jp_* fixtures, this folder only)

WRITES = ["createPart", "updatePart", "deletePart"]
CREATE = {
    "name": "mutate",
    "id": "call-1",
    "args": {"mutation": "createPart", "input": {"name": "Spring", "quantity": 4}},
}
DEFAULT_ROUNDS: list[dict[str, Any]] = [{"chunks": ["Hello ", "there."]}]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "gmchat(rounds=None, **settings): the scripted rounds and chat settings"
    )


@pytest.fixture
def jp_asyncio_loop(_session_scoped_runner: asyncio.Runner) -> asyncio.AbstractEventLoop:
    """pytest-asyncio's session loop, so the server and the test share one loop (pytest-jupyter
    would make its own, which the test never runs). Not closed: pytest-asyncio owns it."""
    return _session_scoped_runner.get_loop()


@pytest.fixture
def gmchat_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker("gmchat")
    return dict(marker.kwargs) if marker else {}


@pytest.fixture
def jp_server_config(tmp_path: Path, gmchat_options: dict[str, Any]) -> dict[str, Any]:
    options = dict(gmchat_options)
    rounds = options.pop("rounds", DEFAULT_ROUNDS)
    script = tmp_path / "rounds.yaml"
    script.write_text(yaml.safe_dump(rounds))
    gmchat: dict[str, Any] = {
        "provider": f"scripted:{script}",
        "project": "demo",
        "store": str(tmp_path / "chat.sqlite3"),
        "chat_settings": options,
    }
    for key in ("max_body_bytes", "keepalive_seconds"):
        if key in options:
            gmchat[key] = options.pop(key)
    server: dict[str, Any] = {"jpserver_extensions": {"gmchat_nb.server_ext": True}}
    if "identity_provider_class" in options:
        server["identity_provider_class"] = options.pop("identity_provider_class")
    return {"ServerApp": server, "GMChat": gmchat}


StoreFor = Callable[[Path], str]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store_for(request: pytest.FixtureRequest) -> Iterator[StoreFor]:
    """Makes a store location of this run's backend for a server home: a SQLite file in it, or
    a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield lambda home: str(home / "chat.sqlite3")
        return
    from tests.postgresql import fresh_schema

    postgresql = request.getfixturevalue("postgresql_server")
    with ExitStack() as schemas:
        yield lambda _home: schemas.enter_context(fresh_schema(postgresql))
