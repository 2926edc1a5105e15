"""``permission`` hooks named by dotted path in the knowledge route tests: one that lets only
alice write shared knowledge and records what it was asked, one that asks for ``action`` without
a default (and so cannot answer a plain request)."""

from __future__ import annotations

from typing import Any

ASKED: list[tuple[str, str, str, str | None]] = []  # (user name, method, path, action)


def only_alice_shares(user: Any, request: Any, action: str | None = None) -> bool:
    """Every request passes; ``knowledge_write_shared`` only for alice."""
    ASKED.append((user.username, request.method, request.path, action))
    return action != "knowledge_write_shared" or user.username == "alice"


def raises_on_shared(user: Any, request: Any, **options: Any) -> bool:
    """A hook that fails when asked about an action: the answer is no, not a 500."""
    if options.get("action") is not None:
        raise RuntimeError("this hook cannot decide about knowledge")
    return True


NO_SHARED_WRITES = "X-Test-No-Shared-Writes"


def shares_unless_told_not_to(user: Any, request: Any, action: str | None = None) -> bool:
    """Every request passes; ``knowledge_write_shared`` unless the request carries
    :data:`NO_SHARED_WRITES` (one server plays a person who may and one who may not)."""
    return action != "knowledge_write_shared" or NO_SHARED_WRITES not in request.headers
